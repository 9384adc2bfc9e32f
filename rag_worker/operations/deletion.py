"""`lightrag_delete_documents`: remove documents with LightRAG's cascading delete.

For each document, in order: wait (bounded) until no indexing runs and the document is
finished; inspect what it contributed (chunks; entities and relations from its
`full_entities` / `full_relations` rows, and which of them no other document supports);
optionally back all of that up; then `adelete_by_doc_id`, which removes the chunks and the
entities/relations only this document supported and rebuilds shared ones from the
extraction cache.  What was deleted or rebuilt is counted by looking at the graph before
and after, not by reading LightRAG's log text.

Each document goes through `rag_worker.storage.removal.remove_document`, the journaled delete
every caller uses (a replaced upload and a folder run's removed files too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from protocol import ErrorCode
from rag_worker.storage.catalog import TERMINAL_STATES, document_name
from rag_worker.storage.removal import WaitReport, remove_document
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.deletion")

DELETE_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.5
NAME_SAMPLE = 20  # entity/relation names shown per document
BUSY_HINT = "Indexing is running; retry after lightrag_get_status shows it finished."

Progress = WaitReport  # told the id of the document whose delete waits


@dataclass(frozen=True)
class DeleteOptions:
    cascade: bool = True
    backup: bool = False
    force: bool = False

    @classmethod
    def from_args(cls, options: dict[str, Any]) -> DeleteOptions:
        """From a call's `delete_options` (defaults filled in)."""
        return cls(
            cascade=bool(options["cascade_delete"]),
            backup=bool(options["create_backup"]),
            force=bool(options["force_delete"]),
        )


@dataclass
class Failure:
    document_id: str
    code: ErrorCode
    message: str
    retryable: bool = False
    suggested_action: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "error_code": self.code.value,
            "error_message": self.message,
            "retryable": self.retryable,
            "suggested_action": self.suggested_action or self.code.info.suggested_action,
        }


@dataclass
class Contribution:
    """What one document put into the knowledge base, read just before deleting it."""

    doc_id: str
    requested_as: str
    row: dict[str, Any]
    record: dict[str, Any]
    chunk_ids: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)  # its entities that exist in the graph
    relations: list[tuple[str, str]] = field(default_factory=list)  # its relations that exist
    only_entities: list[str] = field(default_factory=list)  # supported by no other document
    only_relations: list[tuple[str, str]] = field(default_factory=list)
    nodes: dict[str, Any] = field(default_factory=dict)
    edges: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def filename(self) -> str:
        return document_name(self.doc_id, self.row, self.record)


def readiness(state: str, busy: bool, force: bool) -> str:
    """'ready' to delete now, or what to wait for: 'indexing' (the pipeline runs) or
    'unfinished' (the document is queued/processing but nothing works on it right now)."""
    if busy:
        return "indexing"
    if state not in TERMINAL_STATES and not force:
        return "unfinished"
    return "ready"


def not_ready_failure(doc_id: str, reason: str) -> Failure:
    if reason == "indexing":
        return Failure(doc_id, ErrorCode.DELETION_FORBIDDEN, f"Not deleted: {BUSY_HINT}", retryable=True)
    return Failure(
        doc_id,
        ErrorCode.DELETION_FORBIDDEN,
        "Not deleted: the document is still queued or being indexed. Wait until lightrag_get_status shows it "
        "processed or failed.",
        retryable=True,
        suggested_action="Retry once indexing has finished; if the document stays stuck in that state while nothing "
        "is indexing, delete it with force_delete=true.",
    )


def _pair(pair: Any) -> tuple[str, str]:
    first, second = sorted((str(pair[0]), str(pair[1])))
    return first, second


def _split(value: Any) -> list[str]:
    from lightrag.constants import GRAPH_FIELD_SEP

    return [part for part in str(value or "").split(GRAPH_FIELD_SEP) if part]


async def inspect(ws: Workspace, doc_id: str, requested_as: str, row: dict[str, Any]) -> Contribution:
    """Read the document's chunks, entities and relations, and which of them only it supports."""
    from lightrag.utils import make_relation_chunk_key

    rag = ws.rag
    graph = rag.chunk_entity_relation_graph
    found = Contribution(doc_id, requested_as, row, await ws.catalog.get(doc_id) or {})
    found.chunk_ids = [str(chunk) for chunk in row.get("chunks_list") or [] if chunk]
    mine = set(found.chunk_ids)
    entity_row = await rag.full_entities.get_by_id(doc_id) or {}
    relation_row = await rag.full_relations.get_by_id(doc_id) or {}
    names = list(dict.fromkeys(str(name) for name in entity_row.get("entity_names") or []))
    pairs = list(dict.fromkeys(_pair(p) for p in relation_row.get("relation_pairs") or []))
    found.nodes = await graph.get_nodes_batch(names) if names else {}
    found.entities = [name for name in names if name in found.nodes]
    edges = await graph.get_edges_batch([{"src": s, "tgt": t} for s, t in pairs]) if pairs else {}
    found.edges = {pair: edges.get(pair) or edges.get((pair[1], pair[0])) for pair in pairs}
    found.edges = {pair: data for pair, data in found.edges.items() if data}
    found.relations = list(found.edges)
    # The same sources LightRAG's purge consults: chunk tracking first, the graph's source_id otherwise.
    tracked_entities = await _tracked(rag, "entity_chunks", found.entities)
    tracked_relations = await _tracked(rag, "relation_chunks", [make_relation_chunk_key(*p) for p in found.relations])
    for name in found.entities:
        sources = tracked_entities.get(name) or _split(found.nodes[name].get("source_id"))
        if not set(sources) - mine:
            found.only_entities.append(name)
    for pair in found.relations:
        sources = tracked_relations.get(make_relation_chunk_key(*pair)) or _split(found.edges[pair].get("source_id"))
        if not set(sources) - mine:
            found.only_relations.append(pair)
    return found


async def _tracked(rag: Any, namespace: str, keys: list[str]) -> dict[str, list[str]]:
    storage = getattr(rag, namespace, None)
    if storage is None or not keys:
        return {}
    rows = await storage.get_by_ids(keys)
    return {
        key: [chunk for chunk in row.get("chunk_ids") or [] if chunk]
        for key, row in zip(keys, rows, strict=True)
        if isinstance(row, dict)
    }


def restrict_failure(found: Contribution) -> Failure | None:
    """cascade_delete=false: refuse when deleting would remove an entity or relation from the graph."""
    if not found.only_entities and not found.only_relations:
        return None
    sample = ", ".join(found.only_entities[:5]) or ", ".join(f"{s} - {t}" for s, t in found.only_relations[:3])
    return Failure(
        found.requested_as,
        ErrorCode.DELETION_FORBIDDEN,
        f"Not deleted: cascade_delete is false, but '{found.filename}' is the only source of "
        f"{len(found.only_entities)} entity(ies) and {len(found.only_relations)} relation(s) (e.g. {sample}), "
        "which deleting it would remove from the graph.",
        suggested_action="Keep the document, or call again with cascade_delete=true to remove those too.",
    )


@dataclass
class Outcome:
    """One deleted document and what went with it."""

    found: Contribution
    entities_deleted: list[str]
    entities_rebuilt: list[str]
    relations_deleted: list[tuple[str, str]]
    relations_rebuilt: list[tuple[str, str]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "document_id": self.found.doc_id,
            "filename": self.found.filename,
            "chunks_deleted": len(self.found.chunk_ids),
            "entities_deleted": len(self.entities_deleted),
            "entities_rebuilt": len(self.entities_rebuilt),
            "relationships_deleted": len(self.relations_deleted),
            "relationships_rebuilt": len(self.relations_rebuilt),
            "deleted_entity_names": self.entities_deleted[:NAME_SAMPLE],
            "rebuilt_entity_names": self.entities_rebuilt[:NAME_SAMPLE],
        }


async def delete_inspected(ws: Workspace, found: Contribution, deadline: float, on_wait: Progress) -> Outcome | Failure:
    """Delete one inspected document and compare the graph before and after."""
    removed = await remove_document(ws, found.doc_id, deadline=deadline, on_wait=on_wait)
    if removed.status == "busy":
        return not_ready_failure(found.requested_as, "indexing")
    if removed.status == "refused":
        return Failure(
            found.requested_as,
            ErrorCode.PROCESSING_FAILED,
            "LightRAG refused to delete this document because its records of which entities it contributed are "
            "incomplete; nothing was deleted.",
            suggested_action="Ask the administrator to check the knowledge base's integrity; retrying will not help.",
        )
    if removed.status == "fail":
        return Failure(
            found.requested_as,
            ErrorCode.PROCESSING_FAILED,
            "Deleting stopped part-way (a storage step failed). LightRAG recorded where it stopped: call "
            "lightrag_delete_documents again for this id to finish.",
            retryable=True,
        )
    graph = ws.rag.chunk_entity_relation_graph
    nodes_after = await graph.get_nodes_batch(found.entities) if found.entities else {}
    pairs = [{"src": s, "tgt": t} for s, t in found.relations]
    edges_after = await graph.get_edges_batch(pairs) if pairs else {}
    kept_edges = {pair for pair in found.relations if edges_after.get(pair) or edges_after.get((pair[1], pair[0]))}
    return Outcome(
        found,
        entities_deleted=[name for name in found.entities if name not in nodes_after],
        entities_rebuilt=[name for name in found.entities if name in nodes_after],
        relations_deleted=[pair for pair in found.relations if pair not in kept_edges],
        relations_rebuilt=[pair for pair in found.relations if pair in kept_edges],
    )
