"""Per-process worker state and the per-request context handed to every handler."""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import psutil

from config.settings import Settings
from protocol import methods as m
from protocol.context import KNOWLEDGE_BASE_INFIX, CallContext
from rag_worker.ingest.extracted import ExtractedDocument
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.isolation import (
    EXTRACTION_TIMEOUT_S,
    PER_WORKSPACE,
    POOL_SIZE,
    extract_isolated,
    shutdown_extractors,
)
from rag_worker.ingest.scheduling import FairSlots
from rag_worker.operations.job_runner import BatchRunner
from rag_worker.storage.engine import EngineRegistry, Spawn

log = logging.getLogger("rag_worker")

T = TypeVar("T")
Notify = Callable[[str, dict[str, Any]], Awaitable[None]]

WORKER_VERSION = "0.1.0"


@dataclass
class WorkerRuntime:
    """What lives as long as the worker process: settings, thread limiter, engines, jobs, counters.

    `engines` and `batches` are built by the composition root (`rag_worker.app.warm_up`),
    before the worker says it is ready and takes calls."""

    settings: Settings
    limiter: anyio.CapacityLimiter
    notify: Notify
    send_raw: Callable[[bytes], Awaitable[None]]
    started: float = field(default_factory=time.monotonic)
    requests_served: int = 0
    requests_cancelled: int = 0
    lightrag_version: str = "unknown"
    extraction_slots: FairSlots = field(default_factory=lambda: FairSlots(POOL_SIZE, PER_WORKSPACE))
    engines: EngineRegistry = field(init=False)
    batches: BatchRunner = field(init=False)
    spawn: Spawn = field(init=False)  # starts background work that outlives the call (a delete's run)

    def versions(self) -> dict[str, Any]:
        return {
            "worker": WORKER_VERSION,
            "python": platform.python_version(),
            "lightrag": self.lightrag_version,
            "protocol": m.PROTOCOL_VERSION,
        }

    def uptime(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def ping(self) -> dict[str, Any]:
        indexing = self.warmed_up and self.engines.indexing()
        return {"pong": True, "pid": os.getpid(), "uptime_s": self.uptime(), "indexing": indexing}

    def rss_mb(self) -> float:
        rss: int = psutil.Process().memory_info().rss  # psutil ships no type hints
        return round(rss / 2**20, 1)

    @property
    def warmed_up(self) -> bool:
        return hasattr(self, "engines")

    def workspaces_open(self) -> list[str]:
        return self.engines.open_workspaces() if self.warmed_up else []

    async def close(self) -> None:
        if self.warmed_up:
            with anyio.move_on_after(15, shield=True):
                await self.engines.close_all()
        shutdown_extractors()


@dataclass
class RequestContext:
    """What a handler knows about the call it serves: the worker, the request, the caller."""

    state: WorkerRuntime
    request_id: Any
    call: CallContext = field(default_factory=lambda: CallContext(workspace="", correlation_id="-"))
    arrived: float = field(default_factory=time.monotonic)  # waits are budgeted from here
    _last_progress: float = -1.0

    @property
    def workspace(self) -> str:
        return self.call.workspace

    @property
    def user_id(self) -> str | None:
        return self.call.user_id

    @property
    def correlation_id(self) -> str:
        return self.call.correlation_id

    @property
    def roots(self) -> tuple[str, ...]:
        """The client's MCP roots (path tools only)."""
        return self.call.roots

    @property
    def tool(self) -> str:
        """The MCP tool name the call came in as (audit entries name it)."""
        return self.call.tool

    def deadline(self, seconds: float) -> float:
        """The monotonic time `seconds` after the call arrived (its answer budget)."""
        return self.arrived + seconds

    @classmethod
    def control(cls, state: WorkerRuntime, request_id: Any) -> RequestContext:
        return cls(state, request_id)

    @classmethod
    def from_envelope(cls, state: WorkerRuntime, request_id: Any, context: Any) -> RequestContext:
        """The context of a tool call, from its envelope's `context` (a `CallContext` on the wire)."""
        return cls(state, request_id, CallContext.from_wire(context, fallback_id=request_id))

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress to the client (only when it asked; values must increase)."""
        if not self.call.progress or progress <= self._last_progress:
            return
        self._last_progress = progress
        params: dict[str, Any] = {"id": self.request_id, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.state.notify(m.PROGRESS, params)

    async def run_cpu(self, func: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work in a worker thread under the worker's own limiter."""
        return await anyio.to_thread.run_sync(func, *args, limiter=self.state.limiter, abandon_on_cancel=True)

    async def extract(self, data: bytes, fmt: DocFormat, filename: str | None) -> ExtractedDocument:
        """The text of a file, extracted in an extractor process within this workspace's fair share of them.

        The share is the caller's, across all its knowledge bases (a user naming ten knowledge bases
        gets no more processes); the slot is waited for here, on the event loop, before a worker
        thread is taken."""
        owner = self.workspace.partition(KNOWLEDGE_BASE_INFIX)[0]
        slots = self.state.extraction_slots
        return await slots.run_in_thread(owner, _extract, data, fmt, filename, limiter=self.state.limiter)


def _extract(data: bytes, fmt: DocFormat, filename: str | None) -> ExtractedDocument:
    return extract_isolated(data, fmt, filename=filename, timeout=EXTRACTION_TIMEOUT_S)
