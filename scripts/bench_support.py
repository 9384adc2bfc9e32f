"""What scripts/bench.py measures with: the real server over stdio, LightRAG called
directly in-process (the floor), a bare `mcp` server, and an RSS sampler."""

from __future__ import annotations

import base64
import contextlib
import platform
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil

from scripts.corpus import BenchDoc, bench_documents
from tests.conftest import PYTHON
from tests.integration.harness import Client, running_server

MODES = ["naive", "local", "global", "hybrid", "mix"]
PRODUCTION_SUPERVISION = {
    "LIGHTRAG_MCP_PING_INTERVAL": "5",
    "LIGHTRAG_MCP_PING_TIMEOUT": "3",
    "LIGHTRAG_MCP_BACKOFF_INITIAL": "0.5",
    "LIGHTRAG_MCP_BACKOFF_MAX": "30",
    "LIGHTRAG_MCP_WAIT_SECONDS": "600",
}

BARE_SERVER = """
import anyio, mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])
async def main():
    server = Server("bare", on_list_tools=list_tools)
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"""


def machine_info() -> dict[str, Any]:
    """What a benchmark table names the machine by."""
    return {
        "cpus": psutil.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }


def lexical_search(rag: Any, on: bool) -> None:
    """Switch the lexical side of `rag`'s searches on or off. Off, every search is the vectors'
    alone: the query path before the lexical index (issue 28). Without an index nothing changes."""
    index = getattr(getattr(rag, "lexical", None), "index", None)
    if index is None:
        return
    if on:
        vars(index).pop("search", None)  # the class's own search again
    else:
        index.search = lambda *_: ([], [])


def base64_of(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


@dataclass
class BenchClient(Client):
    spawned_at: float = 0.0
    initialized_after: float = 0.0
    pids: dict[str, int] = field(default_factory=dict)

    async def wait_ready(self, timeout: float = 120, not_pid: int | None = None) -> dict[str, Any]:
        health = await super().wait_ready(timeout, not_pid)
        self.pids["front"] = health["components"]["front"]["pid"]
        self.pids["worker"] = health["components"]["worker"]["pid"]
        return health

    async def counts(self) -> dict[str, int]:
        """The workspace's documents by state (lightrag_get_status)."""
        result = await self.call("lightrag_get_status", {})
        assert not result.is_error, result.content
        return dict((result.structured_content or {}).get("counts") or {})

    async def upload(self, doc: Any) -> Any:
        """`upload_to_lightrag` of one generated PDF; the call's result."""
        arguments = {"filename": doc.name, "content": base64_of(doc.pdf), "mimeType": "application/pdf"}
        result = await self.call("upload_to_lightrag", arguments)
        assert not result.is_error, result.content
        return result

    async def index(self, docs: list[Any], concurrency: int, poll: float = 0.2) -> float:
        """Upload every document (at most `concurrency` calls in flight, as a client sends them)
        and poll lightrag_get_status until all are processed; the seconds that took.

        With LIGHTRAG_MCP_WAIT_SECONDS=0 the uploads return once queued and the polling measures
        indexing; with a long wait each upload returns once its document is processed."""
        limiter = anyio.CapacityLimiter(concurrency)
        before = await self.counts()
        settled = before.get("processed", 0) + before.get("failed", 0) + len(docs)
        started = time.perf_counter()

        async def one(doc: Any) -> None:
            async with limiter:
                await self.upload(doc)

        async with anyio.create_task_group() as tg:
            for doc in docs:
                tg.start_soon(one, doc)
        while True:
            counts = await self.counts()
            if counts.get("processed", 0) + counts.get("failed", 0) >= settled:
                elapsed = time.perf_counter() - started
                break
            await anyio.sleep(poll)
        failed = counts.get("failed", 0) - before.get("failed", 0)
        assert not failed, f"{failed} of {len(docs)} documents failed to index"
        return elapsed


@contextlib.asynccontextmanager
async def front(home: Path, **env: str) -> AsyncIterator[BenchClient]:
    """The real server (`python -m mcp_front`) over stdio, with production supervision settings."""
    home.mkdir(parents=True, exist_ok=True)
    spawned_at = time.perf_counter()
    async with running_server(home, **{**PRODUCTION_SUPERVISION, **env}) as client:
        bench = BenchClient(client.session, spawned_at=spawned_at, initialized_after=time.perf_counter() - spawned_at)
        yield bench


def engine_processes(data_dir: Path) -> list[psutil.Process]:
    """The engine's postmaster and its backends (none for the JSON files)."""
    pid_file = data_dir / "engine" / "postmaster.pid"
    try:
        postmaster = psutil.Process(int(pid_file.read_text().split("\n", 1)[0]))
        return [postmaster, *postmaster.children(recursive=True)]
    except (OSError, ValueError, psutil.Error):
        return []


def pss_mb(processes: list[psutil.Process]) -> float:
    """Proportional set size, summed: PostgreSQL's backends share its buffers, which plain RSS
    would count once per backend."""
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += process.memory_full_info().pss
    return round(total / 2**20, 1)


def child_rss_mb(marker: str) -> float:
    """RSS (MB) of this process's child whose command line contains `marker` (0: none)."""
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if any(marker in part for part in child.cmdline()):
                return round(child.memory_info().rss / 2**20, 1)
    return 0.0


async def bare_server_start() -> tuple[float, float]:
    """Spawn → initialize answered for a trivial low-level `mcp` server (the start-up floor),
    and its RSS (MB) after initialize + tools/list (the front's memory floor)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=PYTHON, args=["-c", BARE_SERVER])
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        seconds = time.perf_counter() - started
        await session.list_tools()
        return seconds, child_rss_mb(BARE_SERVER)


class RssSampler:
    """Peak RSS (MB) of the front and the worker while a phase runs."""

    def __init__(self, pids: dict[str, int]) -> None:
        self._pids = dict(pids)
        self._peaks = {name: 0.0 for name in pids}

    @contextlib.asynccontextmanager
    async def running(self, interval: float = 0.1) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._sample, interval)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _sample(self, interval: float) -> None:
        while True:
            for name, pid in self._pids.items():
                with contextlib.suppress(psutil.Error):
                    self._peaks[name] = max(self._peaks[name], psutil.Process(pid).memory_info().rss / 2**20)
            await anyio.sleep(interval)

    def peak(self, name: str) -> float:
        return round(self._peaks.get(name, 0.0), 1)

    def peaks(self) -> dict[str, float]:
        return {name: self.peak(name) for name in self._peaks}


class DirectLightRAG:
    """LightRAG in this process, built exactly as the worker builds it: the floor.

    `env` is the configuration the server runs with (bindings); `workspace` names the
    workspace directory under `working_dir` (a copy of the server's, for the query floors)."""

    def __init__(self, working_dir: Path, workspace: str | None = None, env: dict[str, str] | None = None) -> None:
        self._dir = working_dir
        # LightRAG keeps a workspace's data in process-wide dicts keyed by its name (and refuses a
        # file name it has seen there): each floor gets a name of its own.
        self._workspace = workspace or f"direct_{uuid.uuid4().hex[:8]}"
        self._env = dict(env or {})
        self.rag: Any = None
        self.llm_configured = False

    async def open(self) -> None:
        from config.settings import load_settings
        from config.storages import resolve_storages
        from rag_worker.bindings import build_components
        from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

        import_lightrag()
        settings = load_settings({**self._env, "WORKING_DIR": str(self._dir)})
        components = await build_components(settings, anyio.CapacityLimiter(settings.worker_threads))
        self.llm_configured = bool(components.get("llm_configured"))
        overrides: dict[str, Any] = resolve_storages(settings).as_kwargs()  # local storages unless env names others
        if "COSINE_THRESHOLD" in self._env:  # LightRAG reads it from the environment once, at import
            overrides["cosine_better_than_threshold"] = float(self._env["COSINE_THRESHOLD"])
        self.rag = await new_lightrag(self._dir, self._workspace, components, **overrides)

    async def enqueue(self, texts: list[str], names: list[str]) -> None:
        await self.rag.apipeline_enqueue_documents(texts, file_paths=names)

    async def index(self, docs: list[Any]) -> float:
        """LightRAG's batch pipeline: extract every PDF, enqueue all in one call, process; seconds."""
        from rag_worker.ingest.pdf import extract_pdf

        started = time.perf_counter()
        texts = [extract_pdf(doc.pdf).text for doc in docs]
        await self.enqueue(texts, [doc.name for doc in docs])
        await self.rag.apipeline_process_enqueue_documents()
        return time.perf_counter() - started

    async def query(self, question: str, mode: str, *, answer: bool = False) -> Any:
        """`aquery_data` (or `aquery_llm` with `answer`) with the QueryParam the worker builds
        for `lightrag_query` with these arguments and every other argument at its default."""
        param = floor_query_param(question, mode, answer=answer)
        return await (self.rag.aquery_llm if answer else self.rag.aquery_data)(question, param)

    async def close(self) -> None:
        await self.rag.finalize_storages()

    @staticmethod
    async def worker_ping_rtts(count: int) -> list[float]:
        """Ping RTTs (ms) of a worker started exactly as ping_worker.py starts one."""
        done = subprocess.run(
            [PYTHON, str(Path(__file__).with_name("ping_worker.py")), "--count", str(count), "--json"],
            capture_output=True,
            timeout=300,
        )
        return list(orjson.loads(done.stdout).get("rtt_samples_ms", []))


def floor_query_param(question: str, mode: str, *, answer: bool) -> Any:
    """The QueryParam of `lightrag_query(query, mode)`: the method's defaults filled in as the
    worker's dispatch fills them (protocol QUERY spec), turned into LightRAG's parameters by the
    worker's own function, so both sides ask with the same parameters."""
    from protocol import methods as m
    from rag_worker.operations.querying import query_param

    return query_param(m.QUERY.with_defaults({"query": question, "mode": mode}), stream=False, with_llm=answer)


_CORPORA: dict[int, list[BenchDoc]] = {}


def corpus(count: int, seed: int = 11) -> list[BenchDoc]:
    """The first `count` generated two-page PDFs of `seed` (scripts/corpus.py), made once per run:
    document i is the same whatever `count` is, so a larger corpus extends a smaller one."""
    made = _CORPORA.setdefault(seed, [])
    if len(made) < count:
        made[:] = bench_documents(count, seed=seed)
    return made[:count]


@dataclass
class ServerIndex:
    """Documents indexed through the server in `home` (data in `home`/data), kept for queries.

    The query floors open LightRAG on a copy of this workspace's directory, so both sides
    answer from the same index without indexing it twice."""

    home: Path
    env: dict[str, str]
    docs: list[BenchDoc]
    seconds: float = 0.0

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def server_env(self, **extra: str) -> dict[str, str]:
        return {**self.env, "WORKING_DIR": str(self.data_dir), **extra}

    def workspace_dir(self) -> Path:
        """The one workspace directory LightRAG wrote (it holds the document status store)."""
        found = [path.parent for path in self.data_dir.glob("*/kv_store_doc_status.json")]
        assert len(found) == 1, f"expected one workspace under {self.data_dir}: {found}"
        return found[0]

    def copy_for_floor(self, into: Path) -> tuple[Path, str]:
        """(working_dir, workspace) of a copy of the server's workspace, once the server is closed."""
        workspace = f"floor_{self.home.name}"
        shutil.copytree(self.workspace_dir(), into / workspace)
        return into, workspace

    @contextlib.asynccontextmanager
    async def both_sides(self, floor_home: Path, *, answer: bool = False) -> AsyncIterator[tuple[BenchClient, DirectLightRAG]]:
        """The server on this index and LightRAG in-process on a copy of it, each having answered
        one question per mode (which opens the workspace and loads every store: not a figure)."""
        direct = DirectLightRAG(*self.copy_for_floor(floor_home), self.env)
        await direct.open()
        try:
            async with front(self.home, **self.server_env()) as client:
                await client.wait_ready()
                for mode in MODES:
                    arguments: dict[str, Any] = {"query": f"What happened first ({mode})?", "mode": mode}
                    await client.call("lightrag_query", arguments | ({} if answer else {"only_context": True}))
                    await direct.query(arguments["query"], mode, answer=answer)
                yield client, direct
        finally:
            await direct.close()


async def index_through_server(home: Path, docs: list[BenchDoc], env: dict[str, str], concurrency: int = 4) -> ServerIndex:
    """Index `docs` through a server in `home` (uploads with no wait, then polled); closes it."""
    index = ServerIndex(home, dict(env), docs)
    async with front(home, **index.server_env(LIGHTRAG_MCP_WAIT_SECONDS="0")) as client:
        await client.wait_ready()
        index.seconds = await client.index(docs, concurrency)
    return index
