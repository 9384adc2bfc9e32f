"""Undo for multi-step graph edits: snapshot a few entities, restore them after a failure.

`lightrag_update_entity` applies several LightRAG edits in a row (create, merge, edit,
relationships, rename).  Each is atomic on its own; the call is made atomic by taking a
snapshot of every entity it may touch (node data, incident edges, chunk-tracking rows)
before the first edit and, when a later step fails, deleting what those names hold now and
recreating the snapshot through LightRAG's own create calls (so the vector stores are
rebuilt the way LightRAG builds them), then writing the exact stored attributes back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("rag_worker.graph.undo")


def edge_key(a: str, b: str) -> tuple[str, str]:
    """An undirected edge's key: its endpoints in sorted order."""
    return (a, b) if a <= b else (b, a)


@dataclass
class GraphSnapshot:
    """The stored state of some entities, their edges and chunk-tracking rows."""

    names: set[str]
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    entity_chunks: dict[str, dict[str, Any]] = field(default_factory=dict)
    relation_chunks: dict[str, dict[str, Any]] = field(default_factory=dict)


async def take_snapshot(rag: Any, names: set[str]) -> GraphSnapshot:
    """Record `names` (existing or not): a name absent now must be absent after a restore."""
    from lightrag.utils import make_relation_chunk_key

    graph = rag.chunk_entity_relation_graph
    snap = GraphSnapshot(names=set(names))
    for name in names:
        node = await graph.get_node(name)
        if node is None:
            continue
        snap.nodes[name] = dict(node)
        for src, tgt in await graph.get_node_edges(name) or []:
            key = edge_key(src, tgt)
            if key not in snap.edges:
                data = await graph.get_edge(src, tgt)
                if data is not None:
                    snap.edges[key] = dict(data)
    if rag.entity_chunks is not None:
        for name in snap.nodes:
            row = await rag.entity_chunks.get_by_id(name)
            if row:
                snap.entity_chunks[name] = _kv_row(row)
    if rag.relation_chunks is not None:
        for src, tgt in snap.edges:
            storage_key = make_relation_chunk_key(src, tgt)
            row = await rag.relation_chunks.get_by_id(storage_key)
            if row:
                snap.relation_chunks[storage_key] = _kv_row(row)
    return snap


def _kv_row(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key not in {"_id", "create_time", "update_time"}}


async def restore_snapshot(rag: Any, snap: GraphSnapshot, extra_names: set[str]) -> None:
    """Put `snap.names` (plus `extra_names`, which must not exist) back as they were.

    Best effort on every item: one failure is logged and the rest is still restored."""
    from lightrag.utils_graph import adelete_by_entity

    graph = rag.chunk_entity_relation_graph
    for name in sorted(snap.names | extra_names):
        try:
            if await graph.has_node(name):
                # The module function (not rag's wrapper) also drops the chunk-tracking rows.
                await adelete_by_entity(
                    graph, rag.entities_vdb, rag.relationships_vdb, name, rag.entity_chunks, rag.relation_chunks
                )
        except Exception:
            log.exception("restore: removing %r failed", name)
    for name, node in snap.nodes.items():
        await _restore_node(rag, name, node)
    for (src, tgt), data in snap.edges.items():
        await _restore_edge(rag, src, tgt, data)
    await _restore_rows(rag.entity_chunks, snap.entity_chunks)
    await _restore_rows(rag.relation_chunks, snap.relation_chunks)
    for storage in (graph, rag.entities_vdb, rag.relationships_vdb, rag.entity_chunks, rag.relation_chunks):
        if storage is not None:
            try:
                await storage.index_done_callback()
            except Exception:
                log.exception("restore: persisting %s failed", type(storage).__name__)


async def _restore_node(rag: Any, name: str, node: dict[str, Any]) -> None:
    graph = rag.chunk_entity_relation_graph
    try:
        if not await graph.has_node(name):
            await rag.acreate_entity(
                name,
                {
                    "description": str(node.get("description") or name),
                    "entity_type": str(node.get("entity_type") or "UNKNOWN"),
                    "source_id": str(node.get("source_id") or ""),
                    "file_path": str(node.get("file_path") or ""),
                },
            )
        await graph.upsert_node(name, dict(node))  # every stored attribute, exactly
    except Exception:
        log.exception("restore: entity %r could not be recreated", name)


async def _restore_edge(rag: Any, src: str, tgt: str, data: dict[str, Any]) -> None:
    graph = rag.chunk_entity_relation_graph
    try:
        if not (await graph.has_node(src) and await graph.has_node(tgt)):
            return
        if not await graph.has_edge(src, tgt):
            try:
                await rag.acreate_relation(
                    src,
                    tgt,
                    {
                        "description": str(data.get("description") or f"{src} - {tgt}"),
                        "keywords": str(data.get("keywords") or ""),
                        "source_id": str(data.get("source_id") or ""),
                        "weight": float(data.get("weight") or 1.0),
                        "file_path": str(data.get("file_path") or ""),
                    },
                )
            except ValueError:
                log.warning("restore: relation %r~%r recreated in the graph only", src, tgt)
        await graph.upsert_edge(src, tgt, dict(data))
    except Exception:
        log.exception("restore: relation %r~%r could not be recreated", src, tgt)


async def _restore_rows(storage: Any, rows: dict[str, dict[str, Any]]) -> None:
    if storage is None or not rows:
        return
    try:
        await storage.upsert(rows)
    except Exception:
        log.exception("restore: chunk-tracking rows could not be written back")
