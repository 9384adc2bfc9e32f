"""A knowledge base's sizes are counted where its stores are (rag_worker.storage.store_counts):
on the embedded engine by SQL counts, on the files from the graph LightRAG holds in memory; both
equal what reading the stores whole gives.  Real LightRAG, real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from config.settings import load_settings
from config.storages import ENGINE_STORAGES, LOCAL_STORAGES, StorageSet
from rag_worker.storage.embedded_engine import ENGINE_DIR, EmbeddedEngine, stop_engine
from rag_worker.storage.store_counts import graph_size, processed_chunks

pytestmark = pytest.mark.anyio

DOCS = [
    "Kestrel Array is a radio telescope in Patagonia. Kestrel Array was funded by the Halvorsen Foundation.",
    "The Halvorsen Foundation is based in Bergen. Ingrid Halvorsen founded the Halvorsen Foundation in 1998.",
]


@pytest.fixture(params=[ENGINE_STORAGES, LOCAL_STORAGES], ids=["engine", "files"])
async def rag(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    storages: StorageSet = request.param
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    engine = EmbeddedEngine(tmp_path / "data")
    if storages.embedded:
        await engine.ensure_running()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    workspace = f"kb_{uuid.uuid4().hex[:8]}"
    (tmp_path / "data" / workspace).mkdir(parents=True)  # its lexical index's directory (the worker's lock makes it)
    instance = await new_lightrag(tmp_path / "data", workspace, components, **storages.as_kwargs())
    try:
        await instance.ainsert(DOCS, ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
        yield instance
    finally:
        await instance.lexical.close()
        await instance.finalize_storages()
        await engine.release()
        stop_engine(tmp_path / "data" / ENGINE_DIR)


async def test_the_counts_equal_what_reading_the_stores_whole_gives(rag: Any) -> None:
    from lightrag.base import DocStatus

    graph = rag.chunk_entity_relation_graph
    entities, relations = await graph_size(graph)
    assert entities == len(await graph.get_all_labels()) >= 3
    assert relations == len(await graph.get_all_edges()) >= 1
    processed = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
    assert await processed_chunks(rag.doc_status) == sum(row.chunks_count for row in processed.values()) >= 2
