"""`lightrag_update_entity`: validate a whole edit first, then apply it with LightRAG's own
editing API (which keeps the vector stores in step), atomically per call.

Order of work, all under the workspace's edit lock (so concurrent edits of one entity
never lose a write):

1. `rag_worker.graph.edit_plan.plan_update` reads the graph and checks everything: the entity, merge sources and
   relationship targets exist, a rename does not land on an existing name unless merging
   is allowed, values are storable.  Nothing is written before every check passes.
2. A snapshot of every entity the edit can touch (`rag_worker.graph.undo`).
3. The steps: create, merge, description/type, properties/labels, remove relationships,
   add relationships, rename.  If any step fails, the snapshot is restored and the call
   fails with nothing changed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from rag_worker.graph.edit_plan import EditPlan, RelationshipAdd, plan_update
from rag_worker.graph.undo import restore_snapshot, take_snapshot

log = logging.getLogger("rag_worker.graph.entity_update")

APPEND_JOIN = "\n"
PROPERTY_APPEND_JOIN = "; "
SUMMARY_TEXT = 2000

_EDIT_LOCKS: dict[str, anyio.Lock] = {}


def edit_lock(workspace: str) -> anyio.Lock:
    """The lock that serializes graph edits in one workspace."""
    lock = _EDIT_LOCKS.get(workspace)
    if lock is None:
        lock = _EDIT_LOCKS[workspace] = anyio.Lock()
    return lock


@dataclass
class EditOutcome:
    """What an applied edit did, for the change summary."""

    plan: EditPlan
    steps: _Steps
    before: dict[str, Any]
    seconds: float


async def update_entity(rag: Any, args: dict[str, Any], lock: anyio.Lock) -> EditOutcome:
    """Validate, snapshot, apply; on a failure restore the snapshot and raise."""
    started = time.perf_counter()
    async with lock:
        plan = await plan_update(rag, args)
        graph = rag.chunk_entity_relation_graph
        before = dict(await graph.get_node(plan.name) or {}) if plan.exists else {}
        snapshot = await take_snapshot(rag, plan.touched)
        steps = _Steps(rag, plan)
        try:
            await steps.run()
        except Exception as exc:
            log.exception("entity update failed at step %r; restoring the snapshot", steps.current)
            with anyio.CancelScope(shield=True):
                await restore_snapshot(
                    rag, snapshot, {plan.name, *([plan.new_name] if plan.new_name else [])} - plan.touched
                )
            code = ErrorCode.INVALID_UPDATE if isinstance(exc, ValueError) else ErrorCode.GRAPH_ACCESS_ERROR
            raise RagError(
                code,
                f"The knowledge graph refused the change while {steps.current}; nothing was changed.",
                suggested_action="Check the entity with lightrag_get_entity_relationships and try again.",
            ) from None
        return EditOutcome(plan, steps, before, round(time.perf_counter() - started, 4))


class _Steps:
    """The edit steps, in order; `current` names the step running (for errors and logs)."""

    def __init__(self, rag: Any, plan: EditPlan) -> None:
        self.rag = rag
        self.plan = plan
        self.current = "starting"
        self.final_name = plan.name
        self.created = False
        self.relationships_added: list[dict[str, Any]] = []
        self.relationships_updated: list[dict[str, Any]] = []

    async def run(self) -> None:
        plan, rag = self.plan, self.rag
        graph = rag.chunk_entity_relation_graph
        description_done = False
        if not plan.exists and not plan.merge_sources:
            self.current = "creating the entity"
            data = {"description": plan.description or "", "entity_type": plan.entity_type or "UNKNOWN"}
            await rag.acreate_entity(plan.name, data)
            self.created = description_done = True
        if plan.merge_sources:
            self.current = "merging entities"
            await rag.amerge_entities(plan.merge_sources, plan.name)
            self.created = not plan.exists
        fields: dict[str, str] = {}
        if plan.description is not None and not description_done:
            current = str((await graph.get_node(plan.name) or {}).get("description") or "")
            fields["description"] = (
                f"{current}{APPEND_JOIN}{plan.description}" if plan.append and current else plan.description
            )
        if plan.entity_type is not None and not (self.created and not plan.merge_sources):
            fields["entity_type"] = plan.entity_type
        if fields:
            self.current = "updating the description and type"
            await rag.aedit_entity(plan.name, fields, allow_rename=False)
        if plan.properties or plan.add_labels or plan.remove_labels:
            self.current = "updating properties and labels"
            await self._set_properties()
        for target in plan.remove_relationships:
            self.current = f"removing the relationship with '{target}'"
            await self._remove_relationship(target)
        for item in plan.add_relationships:
            self.current = f"adding the relationship with '{item.target}'"
            await self._add_relationship(item)
        if plan.new_name is not None:
            self.current = f"renaming to '{plan.new_name}'"
            result = await rag.aedit_entity(
                plan.name, {"entity_name": plan.new_name}, allow_rename=True, allow_merge=plan.allow_merge
            )
            summary = (result or {}).get("operation_summary") or {}
            if summary.get("operation_status") not in (None, "success"):
                raise RuntimeError(f"rename ended with {summary.get('operation_status')}")
            self.final_name = plan.new_name
        self.current = "done"

    async def _set_properties(self) -> None:
        from lightrag.kg.shared_storage import get_storage_keyed_lock

        plan, graph = self.plan, self.rag.chunk_entity_relation_graph
        workspace = self.rag.entities_vdb.global_config.get("workspace", "")
        namespace = f"{workspace}:GraphDB" if workspace else "GraphDB"
        # LightRAG's own per-entity lock: the indexing pipeline may merge into this node meanwhile.
        async with get_storage_keyed_lock([plan.name], namespace=namespace, enable_logging=False):
            node = dict(await graph.get_node(plan.name) or {})
            for key, value in plan.properties.items():
                if value is None:
                    node.pop(key, None)
                elif plan.append and node.get(key):
                    node[key] = f"{node[key]}{PROPERTY_APPEND_JOIN}{value}"
                else:
                    node[key] = value
            labels = [label for label in str(node.get("labels") or "").split(",") if label]
            labels = [label for label in labels if label not in plan.remove_labels]
            labels += [label for label in plan.add_labels if label not in labels]
            if labels:
                node["labels"] = ",".join(labels)
            else:
                node.pop("labels", None)
            if any(value is None for value in plan.properties.values()) or not labels:
                # upsert merges attributes on some backends: drop removed ones by rewriting the node.
                await _replace_node(graph, plan.name, node)
            else:
                await graph.upsert_node(plan.name, node)
        await graph.index_done_callback()

    async def _remove_relationship(self, target: str) -> None:
        from lightrag.utils_graph import adelete_by_relation

        rag = self.rag
        result = await adelete_by_relation(
            rag.chunk_entity_relation_graph, rag.relationships_vdb, self.plan.name, target, rag.relation_chunks
        )
        if getattr(result, "status", "fail") != "success":
            raise RuntimeError(f"relation delete ended with {getattr(result, 'status', None)}")

    async def _add_relationship(self, item: RelationshipAdd) -> None:
        rag, name = self.rag, self.plan.name
        edge = await rag.chunk_entity_relation_graph.get_edge(name, item.target)
        if edge is None:
            data: dict[str, Any] = {"description": item.description, "keywords": item.keywords or ""}
            data["weight"] = 1.0 if item.weight is None else item.weight
            await rag.acreate_relation(name, item.target, data)
            self.relationships_added.append({"target": item.target, "description": item.description[:SUMMARY_TEXT]})
            return
        old_description = str(edge.get("description") or "")
        updated: dict[str, Any] = {
            "description": f"{old_description}{APPEND_JOIN}{item.description}"
            if self.plan.append and old_description
            else item.description
        }
        if item.keywords:
            old = [k.strip() for k in str(edge.get("keywords") or "").split(",") if k.strip()]
            new = [k.strip() for k in item.keywords.split(",") if k.strip()]
            updated["keywords"] = ",".join(dict.fromkeys(old + new)) if self.plan.append else ",".join(new)
        if item.weight is not None:
            updated["weight"] = item.weight
        await rag.aedit_relation(name, item.target, updated)
        self.relationships_updated.append({"target": item.target, "description": updated["description"][:SUMMARY_TEXT]})


async def _replace_node(graph: Any, name: str, node: dict[str, Any]) -> None:
    """Rewrite a node's attributes exactly, keeping its edges (upsert alone only adds or changes)."""
    edges = []
    for src, tgt in await graph.get_node_edges(name) or []:
        data = await graph.get_edge(src, tgt)
        if data is not None:
            edges.append((src, tgt, dict(data)))
    await graph.delete_node(name)
    await graph.upsert_node(name, node)
    for src, tgt, data in edges:
        await graph.upsert_edge(src, tgt, data)
