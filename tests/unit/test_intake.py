"""The intake queue (issue 16): an upload answers once its document is recorded, LightRAG gets
what was queued in batches, a queued document answers status, listing and delete like any
other, and a killed worker loses none of it.

Real LightRAG on local storage in-process; calls go through the worker's own dispatch.  A
wrapper around LightRAG's `apipeline_enqueue_documents` counts the batches and can hold one
on its way, so what happens meanwhile is seen without timing anything.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.context import WorkerRuntime
from rag_worker.storage.intake import INTAKE_DIR
from rag_worker.storage.workspace import Workspace
from tests.conftest import PROJECT_ROOT
from tests.unit.test_engine_registry import call, wait_until, worker

pytestmark = pytest.mark.anyio

FACTS = [
    "The ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin.",
    "The Quillon relay was tuned by Marta Oyelaran in Tromso during the winter trials.",
    "Helena Vargas commissioned the QUASAR-5521 reactor in Lisbon for the Nimbus Council.",
    "The Borealis-9 antenna array was assembled by Tomas Lindqvist near Kiruna.",
    "Yusuf Demir drafted the Meridian charter for the Ankara water board.",
    "The Kestrel survey mapped the Orkney shoals under Fiona MacLeod.",
    "Priya Raman calibrated the Halcyon seismometers at the Pune observatory.",
    "The Sable-3 rover was rebuilt by Jonas Weber in a Hamburg workshop.",
]


class EnqueueWatch:
    """Records the document ids of each LightRAG enqueue; the first waits until `release`."""

    def __init__(self, ws: Workspace) -> None:
        self.batches: list[list[str]] = []
        self.release = anyio.Event()
        self._enqueue = ws.rag.apipeline_enqueue_documents
        ws.rag.apipeline_enqueue_documents = self

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.batches.append(list(kwargs["ids"]))
        if len(self.batches) == 1:
            await self.release.wait()
        return await self._enqueue(*args, **kwargs)


async def insert(state: WorkerRuntime, number: int) -> dict[str, Any]:
    result: dict[str, Any] = await call(state, "ws", m.INSERT_TEXT, {"text": FACTS[number], "title": f"note-{number}"})
    return result


@asynccontextmanager
async def first_upload_held(data: Path) -> AsyncIterator[tuple[WorkerRuntime, Workspace, EnqueueWatch, dict[str, Any]]]:
    """A worker whose first upload (FACTS[0]) is on its way to LightRAG, held there until `watch.release`."""
    async with worker(data, LIGHTRAG_MCP_WAIT_SECONDS="0") as state:
        ws = await state.engines.get("ws")
        watch = EnqueueWatch(ws)
        first = await insert(state, 0)
        await wait_until(lambda: len(watch.batches) == 1, "the first upload is on its way to LightRAG")
        yield state, ws, watch, first


async def processed(ws: Workspace, count: int) -> None:
    with anyio.fail_after(300):
        while (await ws.status_counts())["processed"] < count:
            await anyio.sleep(0.1)


async def test_uploads_arriving_while_a_batch_is_handed_over_reach_lightrag_as_one_next_batch(tmp_path: Path) -> None:
    async with first_upload_held(tmp_path / "data") as (state, ws, watch, first):
        others = [await insert(state, number) for number in range(1, len(FACTS))]  # each answers meanwhile
        assert all(result["status"] == "pending" and result["action"] == "indexed" for result in others)
        watch.release.set()
        await processed(ws, len(FACTS))
        assert watch.batches == [[first["document_id"]], [result["document_id"] for result in others]]
        assert (await ws.status_counts())["failed"] == 0
        assert not list((tmp_path / "data" / "ws" / INTAKE_DIR).iterdir())


async def test_a_batch_lightrag_refuses_is_handed_over_again_with_no_further_call(tmp_path: Path) -> None:
    """An engine restarting under an upload: LightRAG's enqueue fails once (a wedged connection,
    as seen after an engine kill); the queued document is still indexed, no other call needed."""
    async with worker(tmp_path / "data", LIGHTRAG_MCP_WAIT_SECONDS="0") as state:
        ws = await state.engines.get("ws")
        enqueue, refused = ws.rag.apipeline_enqueue_documents, []

        async def refuse_once(*args: Any, **kwargs: Any) -> Any:
            if not refused:
                refused.append(kwargs["ids"])
                raise ConnectionError("cannot switch to state 12; another operation (2) is in progress")
            return await enqueue(*args, **kwargs)

        ws.rag.apipeline_enqueue_documents = refuse_once
        queued = await insert(state, 0)
        await processed(ws, 1)
        assert refused == [[queued["document_id"]]]
        assert ws.handover_failures == 0


async def test_a_queued_document_answers_status_and_listing_as_pending_under_its_own_track_id(tmp_path: Path) -> None:
    async with first_upload_held(tmp_path / "data") as (state, ws, watch, _):
        queued = await insert(state, 1)
        status = await call(state, "ws", m.GET_STATUS, {"track_id": queued["track_id"]})
        assert status["status"] == "pending" and status["documents"][0]["track_id"] == queued["track_id"]
        assert status["counts"]["pending"] == 2
        listing = await call(state, "ws", m.LIST_DOCUMENTS, {})
        assert {doc["filename"]: doc["status"] for doc in listing["documents"]} == {
            "note-0.txt": "pending",
            "note-1.txt": "pending",
        }
        again = await insert(state, 1)
        assert again["action"] == "already_indexed" and again["document_id"] == queued["document_id"]
        watch.release.set()
        await processed(ws, 2)
        status = await call(state, "ws", m.GET_STATUS, {"track_id": queued["track_id"]})
        assert status["status"] == "processed" and status["documents"][0]["track_id"] == queued["track_id"]


async def test_deleting_a_queued_document_drops_it_before_lightrag_gets_it(tmp_path: Path) -> None:
    async with first_upload_held(tmp_path / "data") as (state, ws, watch, kept):
        dropped = await insert(state, 1)
        deleted = await call(state, "ws", m.DELETE_DOCUMENTS, {"document_ids": [dropped["document_id"]]})
        assert deleted["deleted_documents"] == [dropped["document_id"]] and not deleted["failed_deletions"]
        watch.release.set()
        await processed(ws, 1)
        assert watch.batches == [[kept["document_id"]]]
        with pytest.raises(RagError) as gone:
            await call(state, "ws", m.GET_STATUS, {"track_id": dropped["track_id"]})
        assert gone.value.code == ErrorCode.DOCUMENT_NOT_FOUND
        assert not list((tmp_path / "data" / "ws" / INTAKE_DIR).iterdir())


_KILLED_WORKER = """
import os, signal, sys
from pathlib import Path
import anyio
from protocol.context import CallContext
from rag_worker.context import RequestContext
from rag_worker.operations.indexing import enqueue_document
from rag_worker.storage.catalog import SourceDocument
from rag_worker.storage.intake import hand_over
from tests.unit.test_engine_registry import worker

async def main() -> None:
    async with worker(Path(sys.argv[1])) as state:
        ws = await state.engines.get("ws")
        ctx = RequestContext(state, "r", CallContext(workspace="ws", correlation_id="c"))
        handed = await enqueue_document(ctx, ws, SourceDocument("handed.txt", sys.argv[2], "text/plain", 80))
        batch = ws.intake.take()
        queued = await enqueue_document(ctx, ws, SourceDocument("queued.txt", sys.argv[3], "text/plain", 80))
        print(handed.record["track_id"], queued.record["track_id"], flush=True)

        async def killed(doc_ids: list[str]) -> None:  # LightRAG holds the batch; our cleanup never happens
            os.kill(os.getpid(), signal.SIGKILL)

        ws.catalog.commit = killed
        await hand_over(ws, batch)

anyio.run(main)
"""


@pytest.mark.slow
async def test_documents_acknowledged_before_the_worker_is_killed_are_indexed_once_after_a_restart(
    tmp_path: Path,
) -> None:
    """One document was queued only; the other had reached LightRAG when the kill came."""
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WORKER, str(data), FACTS[2], FACTS[3]],
        cwd=tmp_path,
        env={"PYTHONPATH": str(PROJECT_ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -9, done.stderr[-3000:]
    track_ids = done.stdout.split()
    assert len(list((data / "ws" / INTAKE_DIR).iterdir())) == 2

    async with worker(data) as state:
        ws = await state.engines.get("ws")
        await processed(ws, 2)
        for track_id, name in zip(track_ids, ["handed.txt", "queued.txt"], strict=True):
            status = await call(state, "ws", m.GET_STATUS, {"track_id": track_id})
            assert status["documents"][0]["filename"] == name and status["status"] == "processed"
        counts = await ws.status_counts()
        assert sum(counts.values()) == 2 and counts["failed"] == 0  # no `dup-` row for the handed-over one
        assert not list((data / "ws" / INTAKE_DIR).iterdir())
