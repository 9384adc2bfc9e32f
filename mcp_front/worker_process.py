"""One worker subprocess and its pipe: spawn, request/response matching, ping, kill.

Plain verbs in the manner of uvicorn's `Process`: the supervisor decides *when*; this
class only knows *how*.  Pending calls are keyed by request id; when the process dies
every pending call fails at once with WORKER_RESTARTED.
"""

from __future__ import annotations

import itertools
import logging
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import psutil

from protocol import (
    ErrorCode,
    FrameError,
    FrameReader,
    FrameTooLarge,
    InvalidMessage,
    Notification,
    RagError,
    Request,
    Response,
    decode_frame,
    encode_frame,
    parse_message,
)
from protocol import methods as m

log = logging.getLogger("mcp_front.worker")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]


class WorkerGone(Exception):
    """The worker process exited or was killed while a call was pending."""


@dataclass
class PendingCall:
    method: str
    on_progress: ProgressCallback | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    response: Response | None = None
    gone_reason: str | None = None


class WorkerProcess:
    """A spawned `rag_worker` and the matching of its responses to our requests."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        max_frame_bytes: int,
    ) -> None:
        self.command = list(command)
        self._env = dict(env)
        self._cwd = cwd
        self._max_frame = max_frame_bytes
        self._process: anyio.abc.Process | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, PendingCall] = {}
        self._write_lock = anyio.Lock()
        self.ready = anyio.Event()
        self.exited = anyio.Event()
        self.ready_info: dict[str, Any] = {}
        self.spawned_at = 0.0
        self.ready_at: float | None = None
        self.blocking_until = 0.0  # a lease announced by worker/blocking
        self.exit_reason: str | None = None
        self.bad_frames = 0
        self.calls_started = 0

    # --- lifecycle ---------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Spawn the process and start reading its pipe in `task_group`."""
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
        task_group.start_soon(self._read_loop)

    def uptime(self) -> float:
        return round(time.monotonic() - self.spawned_at, 3) if self.spawned_at else 0.0

    def rss_mb(self) -> float | None:
        if self.pid is None or self.exited.is_set():
            return None
        try:
            return round(psutil.Process(self.pid).memory_info().rss / 2**20, 1)
        except psutil.Error:
            return None

    def kill(self, reason: str) -> None:
        """SIGKILL the worker (it also works on a SIGSTOPped process) and fail its calls."""
        if self._process is not None and self._process.returncode is None:
            log.warning("killing worker pid %s: %s", self.pid, reason)
            try:
                self._process.kill()
            except ProcessLookupError:
                pass
        self._fail_pending(reason)

    async def terminate(self, grace: float) -> None:
        """Ask the worker to stop (EOF on its stdin, then SIGTERM), SIGKILL after `grace`."""
        if self._process is None:
            return
        with anyio.move_on_after(grace / 2):
            if self._process.stdin is not None:
                try:
                    await self._process.stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
            await self._process.wait()
        if self._process.returncode is None:
            try:
                self._process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            with anyio.move_on_after(grace / 2):
                await self._process.wait()
        if self._process.returncode is None:
            self.kill("did not stop within the grace period")
            with anyio.move_on_after(5):
                await self._process.wait()
        self._fail_pending("the worker was stopped")

    async def wait_exit(self) -> int | None:
        if self._process is None:
            return None
        return await self._process.wait()

    # --- calls -------------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any], on_progress: ProgressCallback | None = None
    ) -> tuple[int, PendingCall]:
        """Send a request; returns its id and the pending call to wait on."""
        request_id = next(self._ids)
        pending = PendingCall(method, on_progress)
        if self.exited.is_set():
            raise WorkerGone(self.exit_reason or "the worker has exited")
        frame = encode_frame(Request(request_id, method, params).to_wire())
        if len(frame) > self._max_frame:
            raise RagError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                f"The request is {len(frame) / 2**20:.1f} MB; the limit is {self._max_frame / 2**20:.0f} MB.",
                suggested_action="Send less data in one call (split the document or the batch).",
            )
        self._pending[request_id] = pending
        self.calls_started += 1
        try:
            await self._write_frame(frame)
        except WorkerGone:
            self._pending.pop(request_id, None)
            raise
        return request_id, pending

    async def result(self, request_id: int, pending: PendingCall) -> Any:
        """Wait for the answer of a request sent with `request`."""
        try:
            await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if pending.response is None:
            raise WorkerGone(pending.gone_reason or "the worker has exited")
        if pending.response.error is not None:
            raise pending.response.error.to_rag_error()
        return pending.response.result

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        request_id, pending = await self.request(method, params)
        return await self.result(request_id, pending)

    async def cancel(self, request_id: int) -> None:
        """Tell the worker to cancel a request (best effort) and stop waiting for it."""
        pending = self._pending.pop(request_id, None)
        if pending is not None:
            pending.gone_reason = "cancelled"
            pending.done.set()
        try:
            await self._write(Notification(m.CANCEL, {"id": request_id}).to_wire())
        except WorkerGone:
            pass

    async def ping(self, timeout: float) -> float | None:
        """Round-trip time of a ping in seconds, or None when no pong came within `timeout`."""
        started = time.perf_counter()
        with anyio.move_on_after(timeout):
            try:
                await self.call(m.PING.name, {})
            except (WorkerGone, RagError):
                return None
            return time.perf_counter() - started
        return None

    # --- pipe --------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        await self._write_frame(encode_frame(message))

    async def _write_frame(self, frame: bytes) -> None:
        if self._process is None or self._process.stdin is None or self.exited.is_set():
            raise WorkerGone(self.exit_reason or "the worker is not running")
        try:
            async with self._write_lock:
                await self._process.stdin.send(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise WorkerGone(f"the pipe to the worker is closed ({type(exc).__name__})") from None

    async def _read_loop(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout

        async def receive() -> bytes:
            try:
                return await stdout.receive(1 << 20)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return b""

        frames = FrameReader(receive, self._max_frame)
        try:
            while True:
                try:
                    line = await frames.read_line()
                except FrameTooLarge as exc:
                    self.bad_frames += 1
                    log.error("discarded an oversized line from worker pid %s: %s", self.pid, exc)
                    continue
                if line is None:
                    break
                if line.strip():
                    await self._handle_line(line)
        finally:
            returncode = None
            with anyio.move_on_after(2, shield=True):
                returncode = await self._process.wait()
            if returncode is None:  # end of its output while the process lives on
                self.exit_reason = self.exit_reason or "the worker closed its output pipe but kept running"
            known = m.EXIT_REASONS.get(returncode) if returncode is not None else None
            self.exit_reason = self.exit_reason or known or f"the worker exited (code {returncode})"
            self._fail_pending(self.exit_reason)
            self.exited.set()

    async def _handle_line(self, line: bytes) -> None:
        try:
            message = parse_message(decode_frame(line))
        except (FrameError, InvalidMessage) as exc:
            self.bad_frames += 1
            log.error("ignoring a non-protocol line from worker pid %s (%d bytes): %s", self.pid, len(line), exc)
            return
        if isinstance(message, Response):
            if message.id is None:
                log.error("worker pid %s reported a protocol error: %s", self.pid, message.error)
                return
            pending = self._pending.get(message.id)  # type: ignore[arg-type]
            if pending is not None and not pending.done.is_set():
                pending.response = message
                pending.done.set()
        elif isinstance(message, Notification):
            await self._handle_notification(message)

    async def _handle_notification(self, message: Notification) -> None:
        if message.method == m.READY:
            self.ready_info = message.params
            self.ready_at = time.monotonic()
            self.ready.set()
            log.info(
                "worker pid %s ready in %.2fs (LightRAG %s)",
                self.pid,
                self.ready_at - self.spawned_at,
                (message.params.get("versions") or {}).get("lightrag"),
            )
        elif message.method == m.BLOCKING:
            seconds = min(max(float(message.params.get("seconds") or 0), 0.0), m.MAX_BLOCKING_LEASE_S)
            self.blocking_until = time.monotonic() + seconds
            if seconds:
                log.info("worker pid %s blocks for up to %.0fs: %s", self.pid, seconds, str(message.params.get("reason"))[:200])
        elif message.method == m.PROGRESS:
            pending = self._pending.get(message.params.get("id"))  # type: ignore[arg-type]
            if pending is not None and pending.on_progress is not None:
                try:
                    await pending.on_progress(
                        float(message.params.get("progress", 0)),
                        message.params.get("total"),
                        message.params.get("message"),
                    )
                except Exception:  # a client that went away must not stop the read loop
                    log.debug("forwarding progress failed", exc_info=True)

    def _fail_pending(self, reason: str) -> None:
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.gone_reason = reason
                pending.done.set()
        self._pending.clear()


def worker_command(configured: str = "") -> list[str]:
    """How the front (and scripts/ping_worker.py) start a worker: LIGHTRAG_MCP_WORKER_COMMAND
    when set (e.g. ``nice -n 10 /opt/venv/bin/python -m rag_worker``), else this interpreter."""
    if configured.strip():
        return shlex.split(configured)
    return [sys.executable, "-m", "rag_worker"]
