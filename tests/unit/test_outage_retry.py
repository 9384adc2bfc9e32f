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


@pytest.mark.parametrize("first_run", ["halts", "raises"])
async def test_a_run_halted_by_its_storage_is_started_again_with_no_further_call(tmp_path: Path, first_run: str) -> None:
    """LightRAG halts a run on a storage error ("Pipeline halted on internal storage error"); on a
    full disk the document's FAILED status cannot be written either, and it stays processing.
    Here the first run returns at once, as a halted one does, or raises, as one does whose first
    write (LightRAG's consistency check) fails on a disk still full, leaving the document
    processing: a later run, started by itself, indexes it."""
    async with worker(tmp_path / "data") as state, call_in_flight(state, "ws_halt") as ws:
        await ws.rag.apipeline_enqueue_documents(ZEBRA, ids=["doc-halted"], file_paths=["doc-halted.txt"])
        row = dict(await ws.rag.doc_status.get_by_id("doc-halted"))
        await ws.rag.doc_status.upsert({"doc-halted": {**row, "status": "processing"}})
        process = ws.rag.apipeline_process_enqueue_documents
        runs: list[int] = []

        async def halted_first(*args: object, **kwargs: object) -> None:
            runs.append(len(runs) + 1)
            if len(runs) > 1:
                await process(*args, **kwargs)
            elif first_run == "raises":
                raise OSError(28, "No space left on device")

        ws.rag.apipeline_process_enqueue_documents = halted_first
        state.engines.start_processing(ws)
        with anyio.fail_after(120):
            while await doc_state(ws, "doc-halted") != "processed" or ws.indexing_runs:
                await anyio.sleep(0.1)
        assert runs == [1, 2]
        assert ws.halted_runs == 0  # the run that indexed it ended with nothing left
