"""A knowledge base's sizes are counted where its stores are (rag_worker.storage.store_counts):
on the embedded engine by SQL counts, on the files from the graph LightRAG holds in memory; both
equal what reading the stores whole gives.  Real LightRAG, real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from config.storages import ENGINE_STORAGES, LOCAL_STORAGES, StorageSet
from rag_worker.storage.store_counts import graph_size, processed_chunks
from tests.engine_rows import lightrag_on

pytestmark = pytest.mark.anyio

DOCS = [
    "Kestrel Array is a radio telescope in Patagonia. Kestrel Array was funded by the Halvorsen Foundation.",
    "The Halvorsen Foundation is based in Bergen. Ingrid Halvorsen founded the Halvorsen Foundation in 1998.",
]


@pytest.fixture(params=[ENGINE_STORAGES, LOCAL_STORAGES], ids=["engine", "files"])
async def rag(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    storages: StorageSet = request.param
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    async with lightrag_on(tmp_path, storages) as instance:
        await instance.ainsert(DOCS, ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
        yield instance


async def test_the_counts_equal_what_reading_the_stores_whole_gives(rag: Any) -> None:
    from lightrag.base import DocStatus

    graph = rag.chunk_entity_relation_graph
    entities, relations = await graph_size(graph)
    assert entities == len(await graph.get_all_labels()) >= 3
    assert relations == len(await graph.get_all_edges()) >= 1
    processed = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
    assert await processed_chunks(rag.doc_status) == sum(row.chunks_count for row in processed.values()) >= 2
