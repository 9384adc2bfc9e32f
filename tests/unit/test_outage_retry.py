"""Documents LightRAG failed because their storage went away mid-indexing are indexed again by
themselves, a bounded number of times; documents that failed for their own reasons stay failed
(rag_worker.storage.outage_retry).  Real LightRAG on the local files, in-process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rag_worker.storage.outage_retry import MAX_AUTOMATIC_RETRIES, requeue_storage_failures
from rag_worker.storage.workspace import Workspace
from tests.unit.test_engine_registry import ZEBRA, call_in_flight, doc_state, worker

pytestmark = pytest.mark.anyio

OUTAGE = "C[2/8]: doc-x-chunk-003: connection was closed in the middle of operation: terminating connection due to unexpected postmaster exit"


async def failed_document(ws: Workspace, doc_id: str, error: str) -> None:
    """A document LightRAG holds (its text in full_docs) whose indexing failed with `error`."""
    await ws.rag.apipeline_enqueue_documents(f"{ZEBRA} ({doc_id})", ids=[doc_id], file_paths=[f"{doc_id}.txt"])
    row = dict(await ws.rag.doc_status.get_by_id(doc_id))
    await ws.rag.doc_status.upsert({doc_id: {**row, "status": "failed", "error_msg": error}})


async def test_a_document_failed_by_a_storage_outage_is_indexed_again_after_the_run(tmp_path: Path) -> None:
    async with worker(tmp_path / "data") as state, call_in_flight(state, "ws_outage") as ws:
        await failed_document(ws, "doc-outage", OUTAGE)
        await failed_document(ws, "doc-own-fault", "KeyError: 'chunk-1234'")
        state.engines.start_processing(ws)  # a run; at its end the outage's document goes back to PENDING
        with anyio.fail_after(120):
            while await doc_state(ws, "doc-outage") != "processed":
                await anyio.sleep(0.1)
        assert await doc_state(ws, "doc-own-fault") == "failed"  # not the storage's fault: left for the user


async def test_automatic_retries_of_one_document_are_bounded(tmp_path: Path) -> None:
    async with worker(tmp_path / "data") as state, call_in_flight(state, "ws_bounded") as ws:
        await failed_document(ws, "doc-again", OUTAGE)
        retries: dict[str, int] = {}
        for _ in range(MAX_AUTOMATIC_RETRIES):
            assert await requeue_storage_failures(ws.rag, retries) == 1
            assert await doc_state(ws, "doc-again") == "pending"
            row = dict(await ws.rag.doc_status.get_by_id("doc-again"))
            await ws.rag.doc_status.upsert({"doc-again": {**row, "status": "failed", "error_msg": OUTAGE}})  # failed again
        assert await requeue_storage_failures(ws.rag, retries) == 0
        assert await doc_state(ws, "doc-again") == "failed"
