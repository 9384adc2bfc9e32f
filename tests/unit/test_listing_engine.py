"""On the embedded engine the listing (and what else needs every document's summary) keeps the
summaries while the stored documents are unchanged, and reads them again after any change: a new
document, a changed record, a delete.  A queued document shows at once either way.  Real LightRAG
on the real engine, through the worker's own dispatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import methods as m
from rag_worker.storage.workspace import Workspace
from tests.unit.test_engine_registry import call, worker
from tests.unit.test_intake import insert, processed

pytestmark = pytest.mark.anyio


class CountedReads:
    """Counts the workspace's reads of every stored status row."""

    def __init__(self, ws: Workspace) -> None:
        self.count = 0
        self._read = ws.stored_status_rows
        ws.stored_status_rows = self  # type: ignore[method-assign]

    async def __call__(self) -> dict[str, Any]:
        self.count += 1
        return await self._read()


async def titles(state: Any) -> list[str]:
    listed = await call(state, "ws", m.LIST_DOCUMENTS, {"sort_by": "title", "sort_order": "asc"})
    return [document["title"] for document in listed["documents"]]


async def test_an_unchanged_listing_is_read_once_and_every_change_is_seen(tmp_path: Path) -> None:
    async with worker(tmp_path / "data", LIGHTRAG_MCP_WAIT_SECONDS="0") as state:
        ws = await state.engines.get("ws")
        assert ws.storages.embedded
        for number in (0, 1):
            await insert(state, number)
        await processed(ws, 2)
        reads = CountedReads(ws)
        assert await titles(state) == ["note-0", "note-1"] and reads.count == 1
        assert await titles(state) == ["note-0", "note-1"] and reads.count == 1  # unchanged: kept

        await insert(state, 2)  # queued: listed at once, read from the queue
        assert await titles(state) == ["note-0", "note-1", "note-2"]
        await processed(ws, 3)
        assert await titles(state) == ["note-0", "note-1", "note-2"]
        assert reads.count >= 2  # stored now: the stored summaries were read again

        [first] = [doc_id for doc_id, row in (await ws.stored_status_rows()).items() if "note-0" in str(row.file_path)]
        record = await ws.catalog.get(first) or {}
        ws.catalog.put(first, {**record, "title": "renamed"})  # a changed record, stored
        await ws.catalog.commit([first])
        assert await titles(state) == ["note-1", "note-2", "renamed"]

        await call(state, "ws", m.DELETE_DOCUMENTS, {"document_ids": [first]})
        with anyio.fail_after(60):  # LIGHTRAG_MCP_WAIT_SECONDS=0: the call answered while LightRAG deletes
            while await ws.status_row(first) is not None:
                await anyio.sleep(0.1)
        assert await titles(state) == ["note-1", "note-2"]
