"""The worker supervisor (SPEC §2): start, ping, time out, restart with backoff, open the
circuit on a restart storm, recycle gracefully.

States::

    starting ──ready──▶ ready ──crash/hang──▶ restarting ──backoff──▶ starting
        │                 │                        │
        │                 └─recycle (drain)────────┤ (not counted as a restart)
        └─never ready─▶ restarting                 └─ >N restarts in window ─▶ circuit_open
                                                         ─cool-down─▶ starting (probe)

Calls wait (bounded) for a ready worker; while the circuit is open they fail fast with
SERVICE_UNAVAILABLE.  Every in-flight call of a dead or hung worker fails at once with
WORKER_RESTARTED.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
import psutil

from config.settings import Settings
from mcp_front.worker_process import ProgressCallback, WorkerGone, WorkerProcess
from protocol import ErrorCode, RagError

log = logging.getLogger("mcp_front.supervisor")

STOP_GRACE_SECONDS = 10.0


class WorkerSupervisor:
    """Keeps one healthy worker available and routes calls to it."""

    def __init__(
        self,
        settings: Settings,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
    ) -> None:
        self.settings = settings
        self._command = list(command)
        self._env = dict(env)
        self._cwd = cwd
        self.state = "starting"
        self.worker: WorkerProcess | None = None
        self._changed = anyio.Event()
        self._stopping = False
        self._recycle_reason: str | None = None
        self._recycle_wanted = anyio.Event()
        self._restart_times: deque[float] = deque()
        self.restarts_total = 0
        self.recycles_total = 0
        self.last_failure: str | None = None
        self.last_ping_rtt_ms: float | None = None
        self.ping_rtt_max_ms = 0.0
        self.pings_answered = 0
        self.pings_missed = 0
        self.pings_deferred = 0
        self.circuit_opened_at: float | None = None
        self.started_at = time.monotonic()
        self.first_ready_s: float | None = None

    # --- state changes -----------------------------------------------------------

    def _set_state(self, state: str) -> None:
        if state != self.state:
            log.info("worker state %s -> %s", self.state, state)
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def is_ready(self) -> bool:
        return self.state == "ready" and self.worker is not None

    # --- main loop ---------------------------------------------------------------

    async def run(self) -> None:
        """Supervise until `stop()`; run this in the front's lifespan task group."""
        delay = 0.0
        while not self._stopping:
            if delay:
                await self._sleep_unless_stopping(delay)
                if self._stopping:
                    break
            outcome = await self._run_one_worker()
            if self._stopping:
                break
            if outcome == "recycled":
                delay = 0.0
                continue
            delay = self._record_restart()
            if self.state == "circuit_open":
                await self._sleep_unless_stopping(self.settings.circuit_cooldown)
                delay = 0.0  # half-open: one probe start; a failure re-opens the circuit
                if not self._stopping:
                    self._set_state("starting")
        self._set_state("stopped")

    async def _sleep_unless_stopping(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            while not self._stopping:
                await self._changed.wait()

    def _record_restart(self) -> float:
        """Count a failure; returns the backoff before the next start (or opens the circuit)."""
        now = time.monotonic()
        self.restarts_total += 1
        self._restart_times.append(now)
        while self._restart_times and now - self._restart_times[0] > self.settings.restart_window:
            self._restart_times.popleft()
        recent = len(self._restart_times)
        if recent > self.settings.max_restarts:
            log.error(
                "%d worker restarts within %.0fs: opening the circuit for %.0fs",
                recent,
                self.settings.restart_window,
                self.settings.circuit_cooldown,
            )
            self.circuit_opened_at = now
            self._set_state("circuit_open")
            return 0.0
        self._set_state("restarting")
        return float(min(self.settings.backoff_max, self.settings.backoff_initial * 2 ** (recent - 1)))

    async def _run_one_worker(self) -> str:
        """Start a worker and watch it until it dies, hangs or is recycled."""
        worker = WorkerProcess(
            self._command,
            env=self._env,
            cwd=self._cwd,
            max_frame_bytes=self.settings.max_frame_mb * 1024 * 1024,
        )
        self._recycle_reason = None
        self._recycle_wanted = anyio.Event()
        if self.state != "circuit_open":
            self._set_state("starting")
        async with anyio.create_task_group() as tg:
            try:
                await worker.start(tg)
            except OSError as exc:
                self.last_failure = f"the worker could not be started ({type(exc).__name__})"
                log.error("%s: %s", self.last_failure, exc)
                return "failed"
            outcome = await self._watch(worker)
            tg.cancel_scope.cancel()
        return outcome

    async def _watch(self, worker: WorkerProcess) -> str:
        await _wait_any((worker.ready, worker.exited), self.settings.start_timeout)
        if not worker.ready.is_set() or worker.exited.is_set():
            reason = (worker.exit_reason if worker.exited.is_set() else None) or "the worker did not become ready in time"
            self.last_failure = reason
            worker.kill(reason)
            return "failed"
        self.worker = worker
        self.circuit_opened_at = None  # a probe that reaches ready closes the circuit
        if self.first_ready_s is None:
            self.first_ready_s = round(time.monotonic() - self.started_at, 3)
        self._set_state("ready")
        try:
            return await self._monitor(worker)
        finally:
            if self.worker is worker:
                self.worker = None

    async def _monitor(self, worker: WorkerProcess) -> str:
        """Ping until the worker dies, hangs, or must be recycled."""
        interval = self.settings.ping_interval
        while not self._stopping:
            await _wait_any((worker.exited, self._recycle_wanted), interval)
            if worker.exited.is_set():
                reason = worker.exit_reason or "the worker exited"
                if self._stopping:
                    return "stopped"
                log.warning("worker pid %s stopped: %s", worker.pid, reason)
                self.last_failure = reason
                worker.kill(reason)
                return "failed"
            if self._stopping:
                break
            if self._recycle_reason is not None:
                await self._recycle(worker, self._recycle_reason)
                return "recycled"
            rtt = await worker.ping(self.settings.ping_timeout)
            if rtt is None:
                if worker.exited.is_set():
                    continue  # reported as an exit on the next turn
                if time.monotonic() < worker.blocking_until:
                    self.pings_deferred += 1  # inside an announced blocking section: not a hang
                    continue
                self.pings_missed += 1
                reason = f"the worker did not answer a ping within {self.settings.ping_timeout:g}s (hung)"
                self.last_failure = reason
                worker.kill(reason)
                return "failed"
            self.last_ping_rtt_ms = round(rtt * 1000, 3)
            self.ping_rtt_max_ms = max(self.ping_rtt_max_ms, self.last_ping_rtt_ms)
            self.pings_answered += 1
            self._check_rss(worker)
            if self._recycle_reason is not None:
                await self._recycle(worker, self._recycle_reason)
                return "recycled"
        return "stopped"

    def _check_rss(self, worker: WorkerProcess) -> None:
        limit = self.settings.max_rss_mb
        if limit and self._recycle_reason is None:
            rss = worker.rss_mb()
            if rss is not None and rss > limit:
                self.request_recycle(f"worker RSS {rss:.0f} MB passed {limit} MB")

    async def _recycle(self, worker: WorkerProcess, reason: str) -> None:
        """Drain in-flight calls, then stop the worker; `run` starts a fresh one."""
        log.info("recycling worker pid %s: %s", worker.pid, reason)
        self.recycles_total += 1
        self.worker = None
        self._set_state("starting")  # new calls wait for the replacement
        with anyio.move_on_after(self._longest_timeout()):
            while worker.in_flight and not worker.exited.is_set():
                await anyio.sleep(0.05)
        await worker.terminate(STOP_GRACE_SECONDS)

    def _longest_timeout(self) -> float:
        return float(max(self.settings.call_timeout, 600.0))

    # --- calls -------------------------------------------------------------------

    async def wait_ready(self, timeout: float) -> WorkerProcess:
        """The ready worker, waiting up to `timeout` for one; raises when none comes."""
        with anyio.move_on_after(timeout):
            while True:
                if self.state == "circuit_open":
                    raise RagError(
                        ErrorCode.SERVICE_UNAVAILABLE,
                        "The knowledge-base worker keeps failing, so calls are paused for a short while.",
                    )
                if self.state == "stopped":
                    raise RagError(ErrorCode.SERVICE_UNAVAILABLE, "The server is shutting down.")
                worker = self.worker
                if self.state == "ready" and worker is not None and not worker.exited.is_set():
                    return worker
                await self._changed.wait()
        raise RagError(
            ErrorCode.SERVICE_UNAVAILABLE,
            "The knowledge-base worker is still starting.",
            suggested_action="Call the tool again in a few seconds.",
            retryable=True,
        )

    async def call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Route one call to the worker with a deadline; maps every failure to a RagError."""
        deadline = time.monotonic() + timeout
        worker = await self.wait_ready(min(timeout, self.settings.ready_wait))
        remaining = max(0.0, deadline - time.monotonic())
        try:
            request_id, pending = await worker.request(method, params, on_progress)
        except WorkerGone:
            raise RagError(ErrorCode.WORKER_RESTARTED) from None
        self._count_call(worker)
        try:
            with anyio.fail_after(remaining):
                return await worker.result(request_id, pending)
        except TimeoutError:
            with anyio.CancelScope(shield=True):
                await worker.cancel(request_id)
            raise RagError(
                ErrorCode.PROCESSING_TIMEOUT,
                f"The operation did not finish within {timeout:g} seconds and was cancelled.",
            ) from None
        except WorkerGone:
            raise RagError(ErrorCode.WORKER_RESTARTED) from None
        except anyio.get_cancelled_exc_class():
            # The client cancelled (notifications/cancelled) or the front is stopping.
            with anyio.CancelScope(shield=True):
                await worker.cancel(request_id)
            raise

    def _count_call(self, worker: WorkerProcess) -> None:
        limit = self.settings.max_requests
        if limit and worker.calls_started >= limit:
            self.request_recycle(f"served {worker.calls_started} calls (limit {limit})")

    def request_recycle(self, reason: str) -> None:
        """Ask for a graceful recycle: drain, stop, start a fresh worker."""
        if self._recycle_reason is None:
            self._recycle_reason = reason
            self._recycle_wanted.set()

    # --- shutdown and introspection ----------------------------------------------

    async def stop(self) -> None:
        """Stop supervising and stop the worker (graceful, then SIGKILL)."""
        self._stopping = True
        worker = self.worker
        self._set_state("stopped")
        if worker is not None:
            await worker.terminate(STOP_GRACE_SECONDS)

    def snapshot(self) -> dict[str, Any]:
        worker = self.worker
        now = time.monotonic()
        recent = sum(1 for t in self._restart_times if now - t <= self.settings.restart_window)
        return {
            "state": self.state,
            "pid": worker.pid if worker else None,
            "uptime_s": worker.uptime() if worker else None,
            "rss_mb": worker.rss_mb() if worker else None,
            "restarts": self.restarts_total,
            "restarts_recent": recent,
            "recycles": self.recycles_total,
            "in_flight": worker.in_flight if worker else 0,
            "calls_served": worker.calls_started if worker else 0,
            "last_ping_rtt_ms": self.last_ping_rtt_ms,
            "ping_rtt_max_ms": self.ping_rtt_max_ms,
            "pings_answered": self.pings_answered,
            "pings_missed": self.pings_missed,
            "pings_deferred": self.pings_deferred,
            "last_failure": self.last_failure,
            "circuit_open": self.state == "circuit_open",
            "bad_frames": worker.bad_frames if worker else 0,
            "versions": (worker.ready_info.get("versions") if worker else None) or {},
        }


async def _wait_any(events: tuple[anyio.Event, ...], timeout: float) -> None:
    """Return when any of `events` is set, or after `timeout` seconds."""
    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as tg:
            for event in events:

                async def _wait(event: anyio.Event = event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(_wait)


def front_rss_mb() -> float:
    return round(psutil.Process(os.getpid()).memory_info().rss / 2**20, 1)

