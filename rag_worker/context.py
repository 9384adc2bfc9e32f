"""Per-process worker state and the per-request context handed to every handler."""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import psutil

from config.settings import Settings
from protocol import ErrorCode, RagError
from protocol import methods as m

log = logging.getLogger("rag_worker")

T = TypeVar("T")
Notify = Callable[[str, dict[str, Any]], Awaitable[None]]

WORKER_VERSION = "0.1.0"


@dataclass
class WorkerRuntime:
    """What lives as long as the worker process: settings, thread limiter, engines, counters."""

    settings: Settings
    limiter: anyio.CapacityLimiter
    notify: Notify
    send_raw: Callable[[bytes], Awaitable[None]]
    started: float = field(default_factory=time.monotonic)
    requests_served: int = 0
    requests_cancelled: int = 0
    lightrag_version: str = "unknown"
    engines: Any = None  # rag_worker.storage.engine.EngineRegistry, created in warm_up()
    batches: Any = None  # rag_worker.operations.batches.BatchRunner, created in warm_up()

    async def warm_up(self, spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]) -> None:
        """Everything that must work before the worker says it is ready.

        `spawn` starts background work (indexing) that outlives the call that queued it."""
        from rag_worker.storage.engine import EngineRegistry, import_lightrag

        self.lightrag_version = await anyio.to_thread.run_sync(import_lightrag, limiter=self.limiter)
        async def announce_blocking(seconds: float, reason: str) -> None:
            await self.notify(m.BLOCKING, {"seconds": seconds, "reason": reason})

        self.engines = EngineRegistry(self.settings, self.limiter, spawn, announce_blocking)
        self.engines.check_data_dir()
        await anyio.to_thread.run_sync(self.engines.placement.check_servers)
        from rag_worker.operations.batches import BatchRunner

        self.batches = BatchRunner(self, spawn)
        spawn(self.batches.resume_all)  # batches a previous worker left unfinished

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
        return {"pong": True, "pid": os.getpid(), "uptime_s": self.uptime()}

    def rss_mb(self) -> float:
        return round(psutil.Process().memory_info().rss / 2**20, 1)

    def workspaces_open(self) -> list[str]:
        return self.engines.open_workspaces() if self.engines is not None else []

    async def close(self) -> None:
        if self.engines is not None:
            with anyio.move_on_after(15, shield=True):
                await self.engines.close_all()
        from rag_worker.ingest.isolation import shutdown_extractors

        shutdown_extractors()


@dataclass
class RequestContext:
    """What a handler knows about the call it serves."""

    state: WorkerRuntime
    request_id: Any
    workspace: str = ""
    user_id: str | None = None
    correlation_id: str = "-"
    wants_progress: bool = False
    roots: tuple[str, ...] = ()  # the client's MCP roots (path tools only)
    arrived: float = field(default_factory=time.monotonic)  # waits are budgeted from here
    _last_progress: float = -1.0

    def deadline(self, seconds: float) -> float:
        """The monotonic time `seconds` after the call arrived (its answer budget)."""
        return self.arrived + seconds

    @classmethod
    def control(cls, state: WorkerRuntime, request_id: Any) -> RequestContext:
        return cls(state, request_id)

    @classmethod
    def from_envelope(cls, state: WorkerRuntime, request_id: Any, context: Any) -> RequestContext:
        if not isinstance(context, dict) or not context.get("workspace"):
            raise RagError(ErrorCode.INVALID_PARAMETER, "The call carries no workspace context.")
        return cls(
            state,
            request_id,
            workspace=str(context["workspace"]),
            user_id=context.get("user_id"),
            correlation_id=str(context.get("correlation_id") or request_id),
            wants_progress=bool(context.get("progress")),
            roots=tuple(str(root) for root in context.get("roots") or ()),
        )

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress to the client (only when it asked; values must increase)."""
        if not self.wants_progress or progress <= self._last_progress:
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
