"""One worker, many users' workspaces (issue 15): the open LightRAG instances stay within
LIGHTRAG_MCP_MAX_OPEN_WORKSPACES without ever closing one in use, an idle sweep frees a
workspace and hands its lock to another process, acknowledged documents survive closing, and
one user's big upload holds up neither another user's query nor their small upload.

Real LightRAG on local storage in-process; calls go through the worker's own dispatch, each in
a task of its own as the pipe serves them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from config.settings import load_settings
from protocol import MethodSpec, RagError, Request
from protocol import methods as m
from protocol.context import CallContext
from rag_worker.app import warm_up
from rag_worker.context import WorkerRuntime
from rag_worker.dispatch import dispatch
from rag_worker.handlers import HANDLERS
from rag_worker.storage.catalog import state_of
from rag_worker.storage.locks import (
    advisory_key,
    describe_holder,
    file_lock_holder,
    holder_from_application,
    replica_name,
)
from rag_worker.storage.workspace import Workspace, indexing_share
from tests.conftest import PROJECT_ROOT
from tests.fixtures.documents import large_pdf_page_text

pytestmark = pytest.mark.anyio

ZEBRA = "The ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin."
ZEBRA_NOTE = f"# Zebra Project\n\n{ZEBRA}\n\nThe ZEBRA-7741 budget was 42 million euros, approved by the Nimbus Council.\n"
_ids = itertools.count(1)


async def _nothing(*_: Any) -> None:
    return None


@asynccontextmanager
async def worker(data: Path, **env: str) -> AsyncIterator[WorkerRuntime]:
    """The worker's runtime as the worker server builds it (engines, idle sweep, batch runner)."""
    settings = load_settings(
        {
            "WORKING_DIR": str(data),
            "LIGHTRAG_MCP_MAX_OPEN_WORKSPACES": "2",
            "LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS": "0",
            **env,
        }
    )
    state = WorkerRuntime(settings=settings, limiter=anyio.CapacityLimiter(2), notify=_nothing, send_raw=_nothing)
    async with anyio.create_task_group() as background:
        await warm_up(state, background.start_soon)
        try:
            yield state
        finally:
            background.cancel_scope.cancel()  # like a worker that stops: indexing runs end here
            with anyio.CancelScope(shield=True):
                await state.close()


async def call(state: WorkerRuntime, workspace: str, method: MethodSpec, arguments: dict[str, Any]) -> Any:
    """One tool call through the worker's dispatch, in a task of its own; returns once that task ended."""
    context = CallContext(workspace=workspace, correlation_id=f"c{next(_ids)}")
    request = Request(next(_ids), method.name, {"context": context.to_wire(), "arguments": arguments})
    outcome: list[Any] = []

    async def serve() -> None:
        try:
            outcome.append(await dispatch(state, HANDLERS, request))
        except RagError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
    await anyio.sleep(0)  # the ended task's done-callbacks (its lease) run
    if isinstance(outcome[0], RagError):
        raise outcome[0]
    return outcome[0]


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    with anyio.move_on_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"waited {timeout} s in vain until {what}")


@asynccontextmanager
async def call_in_flight(state: WorkerRuntime, workspace: str) -> AsyncIterator[Workspace]:
    """A call that got `workspace` and has not finished yet (it ends when the block does)."""
    done = anyio.Event()
    got: list[Workspace] = []

    async def long_call() -> None:
        got.append(await state.engines.get(workspace))
        await done.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        await wait_until(lambda: bool(got), "the call got its workspace")
        yield got[0]
        done.set()


def names(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(str(row["filename"]) for row in rows)


def pages(count: int, seed: int) -> str:
    rnd = random.Random(seed)
    return "\n\n".join("\n".join(large_pdf_page_text(rnd, number)) for number in range(1, count + 1))


# ------------------------------------------------------------------- the bound and the idle sweep


async def test_the_least_recently_used_idle_workspace_closes_first_and_releases_its_lock(tmp_path: Path) -> None:
    async with worker(tmp_path / "data") as state:
        for workspace in ("ws_a", "ws_b", "ws_a", "ws_c"):  # ws_a is used again after ws_b
            await call(state, workspace, m.LIST_DOCUMENTS, m.LIST_DOCUMENTS.with_defaults({}))
        await state.engines.sweep()
        assert sorted(state.engines.open_workspaces()) == ["ws_a", "ws_c"]
        closed = state.engines.workspace_dir("ws_b")
        await wait_until(lambda: file_lock_holder(closed) is None, "its lock is released once it closed")
        holder = file_lock_holder(state.engines.workspace_dir("ws_a"))
        assert holder is not None and holder["pid"] > 0


async def test_the_sweep_hands_back_the_memory_of_graph_snapshots_it_lets_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc keeps what a dropped snapshot freed (290 MB of RSS after a graph export at 5,000
    documents) until it is trimmed; a sweep that lets none go trims nothing."""
    import rag_worker.storage.engine as registry

    trims: list[int] = []
    monkeypatch.setattr(registry, "release_freed_memory", lambda: trims.append(1))
    async with worker(tmp_path / "data") as state:
        for let_go in (0, 2):
            monkeypatch.setattr(registry, "forget_unused_snapshots", lambda let_go=let_go: let_go)
            await state.engines.sweep()
    assert trims == [1]


@asynccontextmanager
async def in_use(state: WorkerRuntime, how: str) -> AsyncIterator[Workspace]:
    """Workspace `ws_busy`, kept in use in one way (and only that way) while the block runs."""
    if how == "a call in flight":
        async with call_in_flight(state, "ws_busy") as ws:
            yield ws
        return
    await call(state, "ws_busy", m.LIST_DOCUMENTS, m.LIST_DOCUMENTS.with_defaults({}))
    ws = state.engines.opened("ws_busy")
    assert ws is not None and not ws.in_use()  # the call is over
    if how == "its ingest lock held":
        async with ws.ingest_lock:
            yield ws
    else:
        await ws.rag.apipeline_enqueue_documents(pages(60, seed=1), ids=["doc-long"], file_paths=["long.txt"])
        state.engines.start_processing(ws)
        yield ws


@pytest.mark.parametrize("how", ["a call in flight", "its ingest lock held", "its indexing run"])
async def test_a_workspace_in_use_is_never_closed_to_make_room(tmp_path: Path, how: str) -> None:
    async with worker(tmp_path / "data") as state, in_use(state, how) as busy:
        for workspace in ("ws_b", "ws_c"):
            await call(state, workspace, m.LIST_DOCUMENTS, m.LIST_DOCUMENTS.with_defaults({}))
        await state.engines.sweep()
        assert busy.in_use(), f"{how} ended before the check: make the work longer"
        assert sorted(state.engines.open_workspaces()) == ["ws_busy", "ws_c"]


async def test_when_every_open_workspace_is_in_use_the_bound_is_exceeded_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with worker(tmp_path / "data", LIGHTRAG_MCP_MAX_OPEN_WORKSPACES="1") as state:
        with caplog.at_level(logging.WARNING, logger="rag_worker.storage.engine"):
            async with call_in_flight(state, "ws_a"), call_in_flight(state, "ws_b"):
                await state.engines.sweep()
                assert sorted(state.engines.open_workspaces()) == ["ws_a", "ws_b"]
            await anyio.sleep(0)
        assert "over LIGHTRAG_MCP_MAX_OPEN_WORKSPACES=1: all are in use" in caplog.text
        await state.engines.sweep()
        assert len(state.engines.open_workspaces()) == 1


async def test_a_closed_workspace_leaves_none_of_its_tasks_behind(tmp_path: Path) -> None:
    """LightRAG's per-instance LLM and embedding queues run worker tasks; closing stops them, so a
    worker that opens and closes many users' workspaces does not pile them up."""
    async with worker(tmp_path / "data", LIGHTRAG_MCP_MAX_OPEN_WORKSPACES="1") as state:
        question = m.QUERY.with_defaults({"query": "Who led ZEBRA-7741?"})
        for workspace in ("ws_a", "ws_b", "ws_c", "ws_d"):  # each closes the one before
            await call(state, workspace, m.INSERT_TEXT, {"text": ZEBRA, "title": "a.txt"})
            await call(state, workspace, m.QUERY, question)
            await state.engines.sweep()
            if workspace == "ws_a":
                one_open = len(asyncio.all_tasks())
        await wait_until(lambda: len(state.engines.open_workspaces()) == 1, "one workspace open")
        assert len(asyncio.all_tasks()) <= one_open


async def test_an_idle_workspace_is_closed_and_another_process_can_take_it(tmp_path: Path) -> None:
    """The sweep closes it (LightRAG's process-wide copy of its data too) and releases its lock; a
    second worker process indexes a document into it; reopened here, both documents are there."""
    data = tmp_path / "data"
    async with worker(data, LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS="0.3") as state:
        first = await call(state, "ws_shared", m.INSERT_TEXT, {"text": ZEBRA, "title": "first.txt"})
        assert first["status"] == "processed"
        directory = state.engines.workspace_dir("ws_shared")
        await wait_until(lambda: file_lock_holder(directory) is None, "the idle sweep closed it and let go")
        assert "ws_shared" not in state.engines.open_workspaces()
        from lightrag.kg import shared_storage

        assert not [key for key in shared_storage._shared_dicts or {} if key.startswith("ws_shared:doc_status")]

        second = await anyio.to_thread.run_sync(_index_in_another_process, data, "ws_shared", "second.txt")
        assert second == "processed"

        listed = await call(state, "ws_shared", m.LIST_DOCUMENTS, m.LIST_DOCUMENTS.with_defaults({}))
        assert names(listed["documents"]) == ["first.txt", "second.txt"]


async def test_an_idle_workspace_another_process_waits_for_is_let_go_within_seconds(tmp_path: Path) -> None:
    """Not after LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS (600 s by default): the waiting process's call
    is served, not answered WORKSPACE_BUSY, and nothing of either process is lost."""
    data = tmp_path / "data"
    async with worker(data, LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS="600") as state:
        first = await call(state, "ws_shared", m.INSERT_TEXT, {"text": ZEBRA, "title": "first.txt"})
        assert first["status"] == "processed" and "ws_shared" in state.engines.open_workspaces()
        second = await anyio.to_thread.run_sync(_index_in_another_process, data, "ws_shared", "second.txt")
        assert second == "processed"
        assert "ws_shared" not in state.engines.open_workspaces()  # this process let go of it
        listed = await call(state, "ws_shared", m.LIST_DOCUMENTS, m.LIST_DOCUMENTS.with_defaults({}))
        assert names(listed["documents"]) == ["first.txt", "second.txt"]


async def test_a_workspace_in_use_is_kept_and_the_waiting_process_is_told_who_holds_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with worker(data, LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS="600") as state:
        await call(state, "ws_shared", m.INSERT_TEXT, {"text": ZEBRA, "title": "first.txt"})
        async with call_in_flight(state, "ws_shared"):
            outcome = await anyio.to_thread.run_sync(_index_in_another_process, data, "ws_shared", "second.txt", "1")
            assert outcome == f"WORKSPACE_BUSY pid {os.getpid()}"
            assert "ws_shared" in state.engines.open_workspaces()


_SECOND_PROCESS = """
import sys
from pathlib import Path

import anyio

from protocol import RagError, methods as m
from tests.unit.test_engine_registry import call, worker


async def main() -> None:
    async with worker(Path(sys.argv[1]), LIGHTRAG_MCP_WAIT_SECONDS=sys.argv[4]) as state:
        text = "Helena Vargas commissioned the QUASAR-5521 reactor in Lisbon."
        try:
            result = await call(state, sys.argv[2], m.INSERT_TEXT, {"text": text, "title": sys.argv[3]})
        except RagError as exc:
            print(exc.code.value, f"pid {exc.details['held_by']['pid']}")
        else:
            print(result["status"])


anyio.run(main)
"""


def _index_in_another_process(data: Path, workspace: str, title: str, wait_seconds: str = "15") -> str:
    done = subprocess.run(
        [sys.executable, "-c", _SECOND_PROCESS, str(data), workspace, title, wait_seconds],
        cwd=data.parent,
        env={"PYTHONPATH": str(PROJECT_ROOT), "HOME": str(data.parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


async def test_documents_queued_when_a_workspace_closes_are_indexed_when_it_opens_again(tmp_path: Path) -> None:
    async with worker(tmp_path / "data", LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS="0.3") as state:
        async with call_in_flight(state, "ws_q") as ws:  # acknowledged, not yet indexed (a crash's leftovers)
            await ws.rag.apipeline_enqueue_documents(ZEBRA, ids=["doc-queued"], file_paths=["queued.txt"])
        await wait_until(lambda: "ws_q" not in state.engines.open_workspaces(), "the idle sweep closed it")

        async with call_in_flight(state, "ws_q") as reopened:
            assert reopened is not ws
            with anyio.fail_after(60):
                while (status := await doc_state(reopened, "doc-queued")) not in {"processed", "failed"}:
                    await anyio.sleep(0.1)
        assert status == "processed"


async def doc_state(ws: Workspace, doc_id: str) -> str:
    row = await ws.rag.doc_status.get_by_id(doc_id)
    return state_of(row["status"]) if row else "missing"


# ------------------------------------------------------------------- fairness between workspaces


async def test_each_workspace_has_only_its_share_of_the_indexing_lane_waiting() -> None:
    """Ten batches of one workspace are waiting for a one-thread model when another workspace's
    batch arrives: it runs after at most the first's share (2), not after all ten."""
    from lightrag.utils import EmbeddingFunc

    model = OneThreadModel()
    shared = EmbeddingFunc(embedding_dim=1, func=model.embed, supports_asymmetric=True)
    share_a, share_b = indexing_share(shared, 2), indexing_share(shared, 2)

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(lambda: share_a(["a"], context="document"))
        await wait_until(lambda: model.started >= 1, "the model works on the first batch")
        tg.start_soon(lambda: share_b(["b"], context="document"))
        await wait_until(lambda: model.queued() >= 2, "the batches reached the model's queue")
        with anyio.fail_after(5):  # a question is not held back by the share (nor by the model's queue)
            question = await share_a(["q"], context="query")
        model.gate.set()
    assert question.shape == (1, 1)
    assert model.order.index("b") <= 2, model.order
    assert model.order.count("a") == 10


class OneThreadModel:
    """A stand-in model with one inference thread and a first-come-first-served queue (EmbeddingLanes)."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=1)
        self.gate = threading.Event()  # the first inference waits for it, so the queue fills
        self.order: list[str] = []
        self.started = 0

    def queued(self) -> int:
        return self.pool._work_queue.qsize()

    def _infer(self, texts: list[str]) -> Any:
        self.started += 1
        self.gate.wait(30)
        self.order.append(texts[0])
        return np.ones((len(texts), 1), dtype=np.float32)

    async def embed(self, texts: list[str], **kwargs: Any) -> Any:
        if kwargs.get("context") == "query":  # the query lane: not this queue
            return np.ones((len(texts), 1), dtype=np.float32)
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._infer, list(texts))


@pytest.mark.slow
async def test_a_big_upload_in_one_workspace_holds_up_neither_a_query_nor_a_small_upload_in_another(
    tmp_path: Path,
) -> None:
    async with worker(tmp_path / "data", LIGHTRAG_MCP_WAIT_SECONDS="0.5") as state:
        big = await call(state, "ws_big", m.INSERT_TEXT, {"text": pages(100, seed=1), "title": "big.txt"})
        assert big["status"] != "processed"
        small = await call(state, "ws_small", m.INSERT_TEXT, {"text": ZEBRA_NOTE, "title": "small.txt"})

        async def small_state() -> str:
            found = await call(state, "ws_small", m.GET_STATUS, m.GET_STATUS.with_defaults({"document_ids": [small["document_id"]]}))
            return str(found["documents"][0]["status"])

        with anyio.fail_after(300):
            while await small_state() != "processed":
                await anyio.sleep(0.2)
        big_ws = state.engines.opened("ws_big")
        assert big_ws is not None
        async with big_ws.ingest_lock:  # the query must not need the other workspace's ingest lock
            with anyio.fail_after(60):
                answer = await call(state, "ws_small", m.QUERY, m.QUERY.with_defaults({"query": "Who led the ZEBRA-7741 project?", "mode": "naive"}))
        assert any("Alice Johnson" in source["content"] for source in answer["sources"]), answer["sources"]
        assert await doc_state(big_ws, big["document_id"]) != "processed", (
            "the big document finished first: it is too small to show that the other workspace did not wait"
        )


# ------------------------------------------------------------------- replicas: names and keys


def test_the_advisory_key_is_a_stable_signed_64_bit_hash_of_the_workspace_name() -> None:
    keys = {advisory_key(f"user_{index}") for index in range(1000)}
    assert len(keys) == 1000 and all(-(2**63) <= key < 2**63 for key in keys)
    assert advisory_key("alice") == advisory_key("alice") != advisory_key("alice2")


def test_a_busy_replica_is_named_by_host_and_pid_from_its_application_name() -> None:
    mine = holder_from_application(replica_name())
    assert mine["pid"] > 0 and mine["host"]
    other = holder_from_application("lightrag-mcp replica-b.internal 4242")
    assert other == {"host": "replica-b.internal", "pid": 4242}
    assert describe_holder(other) == "lightrag-mcp on replica-b.internal, pid 4242"
    assert holder_from_application("psql") == {} and holder_from_application(None) == {}
