"""One worker subprocess: spawn, ping, terminate, kill, around a `JsonRpcEndpoint`.

Plain verbs in the manner of uvicorn's `Process`: the supervisor decides *when*; this
class only knows *how*.  The endpoint matches answers to requests; when the process dies
every pending call fails at once with `WorkerGone`.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from protocol import Notification, RagError
from protocol import methods as m
from protocol.endpoint import JsonRpcEndpoint, PeerGone, ProgressCallback

log = logging.getLogger("mcp_front.worker")

# The front's name for the endpoint's PeerGone: the worker exited or was killed mid-call.
WorkerGone = PeerGone
# Told the workspace whose documents changed (`documents/changed`); called from the pipe's
# read loop, so it must only queue, never wait.
DocumentsChanged = Callable[[str], None]

__all__ = ["DocumentsChanged", "ProgressCallback", "WorkerGone", "WorkerProcess", "process_rss_mb", "worker_command"]


class WorkerProcess:
    """A spawned `rag_worker` and the endpoint on its pipe."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        max_frame_bytes: int,
        on_documents_changed: DocumentsChanged | None = None,
    ) -> None:
        self.command = list(command)
        self._on_documents_changed = on_documents_changed
        self._env = dict(env)
        self._cwd = cwd
        self._process: anyio.abc.Process | None = None
        self.endpoint = JsonRpcEndpoint(
            self._receive,
            self._send,
            max_frame_bytes=max_frame_bytes,
            on_notification=self._on_notification,
            peer="the worker",
        )
        self.ready = anyio.Event()
        self.exited = anyio.Event()
        self.ready_info: dict[str, Any] = {}
        self.spawned_at = 0.0
        self.blocking_until = 0.0  # a lease announced by worker/blocking
        self.indexing = False  # its last pong said documents are being indexed in the background
        self.exit_reason: str | None = None

    # --- what the supervisor reads -------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def in_flight(self) -> int:
        return self.endpoint.in_flight

    @property
    def calls_started(self) -> int:
        return self.endpoint.requests_sent

    @property
    def bad_frames(self) -> int:
        return self.endpoint.bad_frames

    def is_alive(self) -> bool:
        return self._process is not None and self._process.returncode is None and not self.exited.is_set()

    def uptime(self) -> float:
        return round(time.monotonic() - self.spawned_at, 3) if self.spawned_at else 0.0

    def rss_mb(self) -> float | None:
        if self.pid is None or self.exited.is_set():
            return None
        return process_rss_mb(self.pid)

    # --- verbs ---------------------------------------------------------------------

    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Spawn the process and serve its pipe in `task_group`."""
        self.spawned_at = time.monotonic()
        self._process = await anyio.open_process(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the worker's log goes straight to our stderr (the client's log)
            cwd=self._cwd,
            env=self._env,
            start_new_session=True,  # a Ctrl-C in a terminal reaches the front, which stops us
        )
        log.info("spawned worker pid %s", self._process.pid)
        self.endpoint.peer = f"worker pid {self._process.pid}"
        task_group.start_soon(self._serve)

    async def ping(self, timeout: float) -> float | None:
        """Round-trip time of a ping in seconds, or None when no pong came within `timeout`."""
        started = time.perf_counter()
        with anyio.move_on_after(timeout):
            try:
                pong = await self.endpoint.request(m.PING.name, {})
            except (WorkerGone, RagError):
                return None
            self.indexing = bool(pong.get("indexing"))
            return time.perf_counter() - started
        return None

    def kill(self, reason: str) -> None:
        """SIGKILL the worker (it also works on a SIGSTOPped process) and fail its calls."""
        if self._process is not None and self._process.returncode is None:
            log.warning("killing worker pid %s: %s", self.pid, reason)
            try:
                self._process.kill()
            except ProcessLookupError:
                pass
        self.endpoint.fail_pending(reason)

    async def terminate(self, grace: float) -> None:
        """Ask the worker to stop (EOF on its stdin, then SIGTERM), SIGKILL after `grace`."""
        process = self._process
        if process is None:
            return
        with anyio.move_on_after(grace / 2):
            if process.stdin is not None:
                try:
                    await process.stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
            await process.wait()
        if process.returncode is None:
            try:
                process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            with anyio.move_on_after(grace / 2):
                await process.wait()
        if process.returncode is None:
            self.kill("did not stop within the grace period")
            with anyio.move_on_after(5):
                await process.wait()
        self.endpoint.fail_pending("the worker was stopped")

    # --- the pipe ------------------------------------------------------------------

    async def _receive(self) -> bytes:
        assert self._process is not None and self._process.stdout is not None
        try:
            return await self._process.stdout.receive(1 << 20)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return b""

    async def _send(self, data: bytes) -> None:
        if self._process is None or self._process.stdin is None:
            raise anyio.ClosedResourceError
        await self._process.stdin.send(data)

    async def _serve(self) -> None:
        try:
            await self.endpoint.serve(on_eof=self._exit_reason)
        finally:
            self.exited.set()

    async def _exit_reason(self) -> str:
        """Why the pipe ended: the exit code's meaning, or a process that lives on without it."""
        assert self._process is not None
        returncode = None
        with anyio.move_on_after(2, shield=True):
            returncode = await self._process.wait()
        if returncode is None:
            reason = "the worker closed its output pipe but kept running"
        else:
            reason = m.EXIT_REASONS.get(returncode) or f"the worker exited (code {returncode})"
        self.exit_reason = self.exit_reason or reason
        return self.exit_reason

    async def _on_notification(self, message: Notification) -> None:
        if message.method == m.READY:
            self.ready_info = message.params
            self.ready.set()
            log.info(
                "worker pid %s ready in %.2fs (LightRAG %s)",
                self.pid,
                time.monotonic() - self.spawned_at,
                (message.params.get("versions") or {}).get("lightrag"),
            )
        elif message.method == m.DOCUMENTS_CHANGED:
            workspace = message.params.get("workspace")
            if self._on_documents_changed is not None and isinstance(workspace, str) and workspace:
                self._on_documents_changed(workspace[:256])
        elif message.method == m.BLOCKING:
            seconds = min(max(float(message.params.get("seconds") or 0), 0.0), m.MAX_BLOCKING_LEASE_S)
            self.blocking_until = time.monotonic() + seconds
            if seconds:
                reason = str(message.params.get("reason"))[:200]
                log.info("worker pid %s blocks for up to %.0fs: %s", self.pid, seconds, reason)


def process_rss_mb(pid: int) -> float | None:
    """A process's resident memory in MB (one decimal), None once it is gone.

    Linux reads /proc/PID/statm, as psutil does there: importing psutil costs the front ~1 MB
    and ~8 ms of start-up for two numbers.  Elsewhere psutil, imported at the first reading."""
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/statm", "rb") as statm:
                pages = int(statm.read().split()[1])
        except (OSError, IndexError, ValueError):
            return None
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    import psutil  # not on Linux's path (above)

    try:
        return round(float(psutil.Process(pid).memory_info().rss) / 2**20, 1)
    except psutil.Error:
        return None


def worker_command(configured: str = "") -> list[str]:
    """How the front (and scripts/ping_worker.py) start a worker: LIGHTRAG_MCP_WORKER_COMMAND
    when set (e.g. ``nice -n 10 /opt/venv/bin/python -m rag_worker``), else this interpreter."""
    if configured.strip():
        return shlex.split(configured)
    return [sys.executable, "-m", "rag_worker"]
