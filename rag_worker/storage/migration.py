"""Move one knowledge base from LightRAG's local files into the embedded database engine (issue 25).

    python -m rag_worker.storage.migration WORKSPACE     # e.g. default, or a user's workspace

Run it with the server stopped, or at least with the knowledge base idle: it takes the
workspace's file lock like a worker, so a server process that holds it makes it stop with
"busy".  Steps, each one safe to interrupt:

1. the knowledge base's rows already in the engine (a previous, interrupted run) are dropped;
2. every store is copied: key-value namespaces and document statuses as they are, our document
   catalog, the graph's nodes and edges, and the three vector stores (their texts are embedded
   again by the engine's storage, with the same model the knowledge base was indexed with);
3. the engine's copy is counted — documents, chunks, entities and relations must equal the
   source's — and only then does the placement marker (`storage.json`) switch, by an atomic
   rename.  Until that rename the JSON files are authoritative and the server keeps opening them;
   they are left in place afterwards (delete them once satisfied).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from config.settings import load_settings
from config.storages import ENGINE_STORAGES, LOCAL_STORAGES
from rag_worker.storage.catalog import DocumentCatalog
from rag_worker.storage.embedded_engine import EmbeddedEngine
from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag
from rag_worker.storage.locks import FileLock
from rag_worker.storage.placement import StoragePlacement

log = logging.getLogger("rag_worker.storage.migration")

KV_STORES = ("full_docs", "text_chunks", "full_entities", "full_relations", "entity_chunks", "relation_chunks", "llm_response_cache")
VECTOR_STORES = ("entities_vdb", "relationships_vdb", "chunks_vdb")
BATCH = 500


class MigrationRefused(Exception):
    """The knowledge base is not on the local files, or the copy's counts differ (nothing switched)."""


async def migrate(working_dir: Path, workspace: str, components: dict[str, Any], after_copy: Callable[[], Awaitable[None]] | None = None) -> dict[str, int]:
    """Copy `workspace` into the engine, verify, switch its placement; returns the verified counts."""
    directory = working_dir / workspace
    lock = await FileLock.acquire(directory)
    engine = EmbeddedEngine(working_dir)
    try:
        placement = StoragePlacement(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}))
        if placement.for_workspace(directory)[0] != LOCAL_STORAGES:
            raise MigrationRefused(f"knowledge base {workspace!r} is not on the local files")
        await engine.ensure_running()
        source = await new_lightrag(working_dir, workspace, components)
        engine_kwargs: dict[str, Any] = ENGINE_STORAGES.as_kwargs()
        async with engine.creating_tables():
            target = await new_lightrag(working_dir, workspace, components, **engine_kwargs)
        try:
            expected = await _counts(source, source)
            await _drop(target)
            await _copy(source, target)
            if after_copy is not None:
                await after_copy()  # tests interrupt here
            found = await _counts(source, target)
            if found != expected:
                raise MigrationRefused(f"the engine's copy differs from the files (files {expected}, engine {found}); nothing switched")
            StoragePlacement.record(directory, ENGINE_STORAGES, False, replace=True)
            return found
        finally:
            await source.finalize_storages()
            await target.finalize_storages()
    finally:
        lock.release()
        await engine.release()


async def _drop(target: Any) -> None:
    """What an interrupted run left in the engine for this workspace."""
    for name in (*KV_STORES, *VECTOR_STORES, "chunk_entity_relation_graph", "doc_status"):
        await getattr(target, name).drop()
    catalog = DocumentCatalog(target)
    await catalog.initialize()
    try:
        await catalog._kv.drop()
    finally:
        await catalog.finalize()


async def _copy(source: Any, target: Any) -> None:
    for name in KV_STORES:
        await _upsert_in_batches(getattr(target, name), dict(getattr(source, name)._data))
    await _upsert_in_batches(target.doc_status, dict(source.doc_status._data))
    await _copy_catalog(source, target)
    graph = await source.chunk_entity_relation_graph._get_graph()
    nodes = [(str(node), dict(data)) for node, data in graph.nodes(data=True)]
    edges = [(str(a), str(b), dict(data)) for a, b, data in graph.edges(data=True)]
    for start in range(0, len(nodes), BATCH):
        await target.chunk_entity_relation_graph.upsert_nodes_batch(nodes[start : start + BATCH])
    for start in range(0, len(edges), BATCH):
        await target.chunk_entity_relation_graph.upsert_edges_batch(edges[start : start + BATCH])
    chunks = source.text_chunks._data
    for name in VECTOR_STORES:
        rows = (await getattr(source, name).client_storage)["data"]
        # A chunk's vector row keeps only some of its fields; the engine's wants the chunk's own
        # (tokens, order): LightRAG upserts chunks into both from the same dict.
        data = {
            row["__id__"]: dict(chunks[row["__id__"]]) if name == "chunks_vdb" and row["__id__"] in chunks else
            {k: v for k, v in row.items() if not k.startswith("__") and k != "vector"}
            for row in rows
        }
        await _upsert_in_batches(getattr(target, name), data)
    for name in (*KV_STORES, *VECTOR_STORES, "chunk_entity_relation_graph", "doc_status"):
        await getattr(target, name).index_done_callback()


async def _copy_catalog(source: Any, target: Any) -> None:
    source_catalog, target_catalog = DocumentCatalog(source), DocumentCatalog(target)
    await source_catalog.initialize()
    await target_catalog.initialize()
    try:
        await _upsert_in_batches(target_catalog._kv, dict(source_catalog._kv._data))
        await target_catalog._kv.index_done_callback()
    finally:
        await source_catalog.finalize()
        await target_catalog.finalize()


async def _upsert_in_batches(store: Any, data: dict[str, Any]) -> None:
    items = list(data.items())
    for start in range(0, len(items), BATCH):
        await store.upsert(dict(items[start : start + BATCH]))


async def _counts(source: Any, where: Any) -> dict[str, int]:
    """Documents, chunks, entities and relations of the source that `where` holds (the source
    itself gives the expected figures)."""
    doc_ids = list(source.doc_status._data)
    chunk_ids = list(source.text_chunks._data)
    graph = await source.chunk_entity_relation_graph._get_graph()
    node_ids = [str(node) for node in graph.nodes]
    pairs = [{"src": str(a), "tgt": str(b)} for a, b in graph.edges]
    present_docs = sum(1 for row in await where.doc_status.get_by_ids(doc_ids) if row) if doc_ids else 0
    present_chunks = sum(1 for row in await where.text_chunks.get_by_ids(chunk_ids) if row) if chunk_ids else 0
    store = where.chunk_entity_relation_graph
    present_nodes = len(await store.has_nodes_batch(node_ids)) if node_ids else 0
    present_edges = 0
    for start in range(0, len(pairs), BATCH):
        present_edges += len(await store.get_edges_batch(pairs[start : start + BATCH]))
    return {"documents": present_docs, "chunks": present_chunks, "entities": present_nodes, "relations": present_edges}


async def _main(workspace: str) -> dict[str, int]:
    from rag_worker.bindings import build_components

    settings = load_settings()
    await anyio.to_thread.run_sync(import_lightrag)
    components = await build_components(settings, anyio.CapacityLimiter(2))
    return await migrate(Path(settings.data_dir), workspace, components)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workspace", help="the knowledge base to move (a workspace name, e.g. default)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    try:
        counts = anyio.run(_main, args.workspace)
    except MigrationRefused as exc:
        log.error("not moved: %s", exc)
        return 1
    log.info("moved %r into the embedded engine: %s", args.workspace, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
