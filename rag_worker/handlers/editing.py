"""Knowledge-graph edits: update, create, rename, merge entities (SPEC §4 Knowledge graph)."""

from __future__ import annotations

from typing import Any

from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.graph.edit_plan import RESERVED_ATTRIBUTES, SEPARATOR
from rag_worker.graph.entity_update import SUMMARY_TEXT, EditOutcome, edit_lock
from rag_worker.graph.entity_update import update_entity as apply_update

REBUILD_WARNING = (
    "This entity was extracted from documents: if one of them is deleted or re-indexed, LightRAG rebuilds "
    "the entity from the documents and manual edits to it are replaced."
)


@handles(m.UPDATE_ENTITY)
async def update_entity(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_update_entity`."""
    ws = await ctx.state.engines.get(ctx.workspace)
    outcome = await apply_update(ws.rag, args, edit_lock(ws.name))
    return await describe_outcome(ws.rag, outcome)


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > SUMMARY_TEXT:
        return value[:SUMMARY_TEXT] + "…"
    return value


def _properties(node: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in node.items() if key not in RESERVED_ATTRIBUTES}


def _labels(node: dict[str, Any]) -> list[str]:
    return [label for label in str(node.get("labels") or "").split(",") if label]


async def describe_outcome(rag: Any, outcome: EditOutcome) -> dict[str, Any]:
    """The change summary: before/after of changed fields, relationships, rename, merge."""
    plan, steps, before = outcome.plan, outcome.steps, outcome.before
    graph = rag.chunk_entity_relation_graph
    after = dict(await graph.get_node(steps.final_name) or {})
    changes: dict[str, Any] = {}
    for key in ("description", "entity_type"):
        if before.get(key) != after.get(key):
            changes[key] = {"before": _short(before.get(key)), "after": _short(after.get(key))}
    old_props, new_props = _properties(before), _properties(after)
    for key in sorted(set(old_props) | set(new_props)):
        if old_props.get(key) != new_props.get(key):
            changes[f"properties.{key}"] = {"before": _short(old_props.get(key)), "after": _short(new_props.get(key))}
    old_labels, new_labels = _labels(before), _labels(after)
    if old_labels != new_labels:
        changes["labels"] = {"before": old_labels, "after": new_labels}
    renamed = plan.new_name is not None
    warnings = list(plan.warnings)
    if any(part and part != "manual_creation" for part in str(after.get("source_id") or "").split(SEPARATOR)):
        warnings.append(REBUILD_WARNING)
    counts = {
        "properties_updated": sum(1 for key in changes if key.startswith("properties.")),
        "labels_added": len(set(new_labels) - set(old_labels)),
        "labels_removed": len(set(old_labels) - set(new_labels)),
        "relationships_added": len(steps.relationships_added),
        "relationships_updated": len(steps.relationships_updated),
        "relationships_removed": len(plan.remove_relationships),
        "entities_merged": len(plan.merge_sources),
    }
    result = {
        "entity_id": steps.final_name,
        "created": steps.created,
        "renamed_from": plan.name if renamed else None,
        "renamed_to": plan.new_name if renamed else None,
        "merged": list(plan.merge_sources),
        "changes": changes,
        "relationships_added": steps.relationships_added,
        "relationships_updated": steps.relationships_updated,
        "relationships_removed": list(plan.remove_relationships),
        "changes_applied": counts,
        "entity": {
            "name": steps.final_name,
            "entity_type": after.get("entity_type"),
            "description": _short(after.get("description")),
            "properties": _properties(after),
            "labels": new_labels,
            "degree": await graph.node_degree(steps.final_name),
        },
        "warnings": warnings,
        "processing_time_s": outcome.seconds,
    }
    result["message"] = _message(result)
    return result


def _message(result: dict[str, Any]) -> str:
    name = result["entity_id"]
    parts: list[str] = []
    if result["created"]:
        parts.append("created")
    if result["merged"]:
        parts.append(f"merged {len(result['merged'])} entit{'y' if len(result['merged']) == 1 else 'ies'} into it")
    fields = [key for key in result["changes"] if key not in {"labels"}]
    if fields:
        parts.append("changed " + ", ".join(fields))
    if "labels" in result["changes"]:
        parts.append("updated labels")
    counts = result["changes_applied"]
    for key, verb in (
        ("relationships_added", "added"),
        ("relationships_updated", "updated"),
        ("relationships_removed", "removed"),
    ):
        if counts[key]:
            parts.append(f"{verb} {counts[key]} relationship(s)")
    if result["renamed_from"]:
        parts.append(f"renamed from '{result['renamed_from']}'")
    summary = "; ".join(parts) if parts else "no field changed (the values were already set)"
    return f"Entity '{name}': {summary}."
