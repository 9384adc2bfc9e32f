"""What scripts/bench.py measures with: the real server over stdio, LightRAG called
directly in-process (the floor), a bare `mcp` server, and an RSS sampler."""

from __future__ import annotations

import base64
import contextlib
import platform
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil

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

    async def index(self, docs: list[Any], concurrency: int) -> float:
        """Upload every document (at most `concurrency` at once); seconds until all are processed."""
        limiter = anyio.CapacityLimiter(concurrency)
        started = time.perf_counter()

        async def one(doc: Any) -> None:
            async with limiter:
                result = await self.call(
                    "upload_to_lightrag",
                    {"filename": doc.name, "content": base64_of(doc.pdf), "mimeType": "application/pdf"},
                )
                assert not result.is_error and result.structured_content["status"] == "processed", result.content

        async with anyio.create_task_group() as tg:
            for doc in docs:
                tg.start_soon(one, doc)
        return time.perf_counter() - started


@contextlib.asynccontextmanager
async def front(home: Path, **env: str) -> AsyncIterator[BenchClient]:
    """The real server (`python -m mcp_front`) over stdio, with production supervision settings."""
    home.mkdir(parents=True, exist_ok=True)
    spawned_at = time.perf_counter()
    async with running_server(home, **{**PRODUCTION_SUPERVISION, **env}) as client:
        bench = BenchClient(client.session, spawned_at=spawned_at, initialized_after=time.perf_counter() - spawned_at)
        yield bench


async def bare_server_initialize() -> float:
    """Spawn → initialize answered for a trivial low-level `mcp` server (the start-up floor)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=PYTHON, args=["-c", BARE_SERVER])
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return time.perf_counter() - started


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
    """LightRAG in this process, built exactly as the worker builds it: the floor."""

    def __init__(self, working_dir: Path) -> None:
        self._dir = working_dir
        self.rag: Any = None

    async def open(self) -> None:
        from config.settings import load_settings
        from rag_worker.bindings import build_components
        from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

        import_lightrag()
        components = await build_components(load_settings({"WORKING_DIR": str(self._dir)}), anyio.CapacityLimiter(4))
        self.rag = await new_lightrag(self._dir, "direct", components)

    async def index(self, docs: list[Any]) -> float:
        from rag_worker.ingest.pdf import extract_pdf

        started = time.perf_counter()
        texts = [extract_pdf(doc.pdf).text for doc in docs]
        await self.rag.apipeline_enqueue_documents(texts, file_paths=[doc.name for doc in docs])
        await self.rag.apipeline_process_enqueue_documents()
        return time.perf_counter() - started

    async def query(self, question: str, mode: str) -> Any:
        from rag_worker.operations.querying import query_param

        return await self.rag.aquery_data(question, query_param({"query": question, "mode": mode}, stream=False, with_llm=False))

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
