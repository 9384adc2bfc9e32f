"""The worker supervisor (SPEC §2): start, ping, time out, restart with backoff, open the
circuit on a restart storm, recycle gracefully.

States (`WorkerState`; only the run loop changes them, the policy is `RestartPolicy`)::

    starting ──ready──▶ ready ──crash/hang──▶ restarting ──backoff──▶ starting
        │                 │                        │
        │                 └─recycle (drain)──▶ starting (not counted as a restart)
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
from dataclasses import asdict, dataclass
from typing import Any

import anyio
import anyio.abc

from config.settings import Settings
from mcp_front.restart_policy import Decision, Outcome, RestartPolicy, WorkerState
from mcp_front.worker_process import DocumentsChanged, ProgressCallback, WorkerGone, WorkerProcess, process_rss_mb
from protocol import ErrorCode, RagError
from protocol import methods as m

log = logging.getLogger("mcp_front.supervisor")

STOP_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class SupervisorSnapshot:
    """The supervisor's view of its worker, as the health and stats tools report it."""

    state: WorkerState
    pid: int | None
    uptime_s: float | None
    rss_mb: float | None
    restarts: int
    restarts_recent: int
    recycles: int
    in_flight: int
    calls_served: int
    last_ping_rtt_ms: float | None
    ping_rtt_max_ms: float
    pings_answered: int
    pings_missed: int
    pings_deferred: int
    last_failure: str | None
    circuit_open: bool
    bad_frames: int
    versions: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values (the state as its string)."""
        return {**asdict(self), "state": self.state.value}


class WorkerSupervisor:
    """Keeps one healthy worker available and routes calls to it."""

    def __init__(
        self,
        settings: Settings,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        on_documents_changed: DocumentsChanged | None = None,
    ) -> None:
        self.settings = settings
        self._on_documents_changed = on_documents_changed  # each worker's `documents/changed` goes here
        self.policy = RestartPolicy.from_settings(settings)
        self._command = list(command)
        self._env = dict(env)
        self._cwd = cwd
        self.state = WorkerState.STARTING
        self.worker: WorkerProcess | None = None  # the ready worker calls go to
        self._current: WorkerProcess | None = None  # the live one, ready or not
        self._changed = anyio.Event()
        self._stopping = False
        self._loop_scope = anyio.CancelScope()
        self._stopped = anyio.Event()
        self._running = False
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

    @property
    def is_ready(self) -> bool:
        return self.state is WorkerState.READY and self.worker is not None

    # --- the run loop: the only place the state changes ---------------------------

    def _set_state(self, state: WorkerState) -> None:
        if state != self.state:
            log.info("worker state %s -> %s", self.state.value, state.value)
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()

    async def run(self) -> None:
        """Supervise until `stop()`; run this in the front's lifespan task group."""
        self._running = True
        try:
            async with anyio.create_task_group() as tg:  # the workers' pipes are served here
                try:
                    with self._loop_scope:
                        await self._supervise(tg)
                finally:  # `stop()`, or the front cancelled from outside (a signal): the worker stops gracefully
                    self._set_state(WorkerState.STOPPED)
                    with anyio.CancelScope(shield=True):
                        await self._stop_current()
                    tg.cancel_scope.cancel()
        finally:
            self._stopped.set()

    async def _supervise(self, tg: anyio.abc.TaskGroup) -> None:
        decision = Decision(WorkerState.STARTING, 0.0)
        while True:
            self._set_state(decision.state)
            await anyio.sleep(decision.delay)
            self._set_state(WorkerState.STARTING)
            worker = await self._start(tg)
            outcome = Outcome.FAILED
            if worker is not None:
                self.worker = worker
                self._set_state(WorkerState.READY)
                outcome = await self._monitor(worker)
                self.worker = None
                if outcome is Outcome.RECYCLED:
                    self._set_state(WorkerState.STARTING)  # new calls wait for the replacement
                    await self._drain_and_stop(worker)
            decision = self._decide(outcome)

    def _decide(self, outcome: Outcome) -> Decision:
        """Ask the policy what follows `outcome`; count it when it is a restart."""
        now = time.monotonic()
        decision = self.policy.next(outcome, self._restart_times, now)
        if outcome is Outcome.FAILED:
            self.restarts_total += 1
            self._restart_times.append(now)
            while now - self._restart_times[0] > self.policy.restart_window:
                self._restart_times.popleft()
        if decision.state is WorkerState.CIRCUIT_OPEN:
            log.error(
                "%d worker restarts within %.0fs: opening the circuit for %.0fs",
                len(self._restart_times),
                self.policy.restart_window,
                self.policy.circuit_cooldown,
            )
        return decision

    async def _start(self, tg: anyio.abc.TaskGroup) -> WorkerProcess | None:
        """Spawn a worker and wait for it to be ready; None when it fails to."""
        worker = WorkerProcess(
            self._command,
            env=self._env,
            cwd=self._cwd,
            max_frame_bytes=self.settings.max_frame_mb * 1024 * 1024,
            on_documents_changed=self._on_documents_changed,
        )
        self._current = worker
        self._recycle_reason = None
        self._recycle_wanted = anyio.Event()
        try:
            await worker.start(tg)
        except OSError as exc:
            self.last_failure = f"the worker could not be started ({type(exc).__name__})"
            log.error("%s: %s", self.last_failure, exc)
            return None
        await _wait_any((worker.ready, worker.exited), self.settings.start_timeout)
        if not worker.ready.is_set() or worker.exited.is_set():
            reason = (worker.exit_reason if worker.exited.is_set() else None) or "the worker did not become ready in time"
            self._failed(worker, reason)
            return None
        return worker

    async def _monitor(self, worker: WorkerProcess) -> Outcome:
        """Ping until the worker dies, hangs, or is due for recycling.

        A planned recycle waits while the worker indexes in the background (its pong says so):
        stopping it would interrupt LightRAG's pipeline, whose documents are then processed again."""
        while True:
            waiting_for_indexing = self._recycle_wanted.is_set()  # it was due at the last look, and indexing
            await _wait_any((worker.exited,) if waiting_for_indexing else (worker.exited, self._recycle_wanted),
                            self.settings.ping_interval)
            if worker.exited.is_set():
                reason = worker.exit_reason or "the worker exited"
                log.warning("worker pid %s stopped: %s", worker.pid, reason)
                return self._failed(worker, reason)
            rtt = await worker.ping(self.settings.ping_timeout)
            if rtt is not None:
                self._record_pong(rtt)
                self._check_rss(worker)
                if self._recycle_wanted.is_set():
                    if not worker.indexing:
                        return Outcome.RECYCLED
                    if not waiting_for_indexing:
                        log.info("recycling worker pid %s waits until its indexing ends (%s)", worker.pid, self._recycle_reason)
            elif worker.exited.is_set():
                continue  # reported as an exit on the next turn
            elif time.monotonic() < worker.blocking_until:
                self.pings_deferred += 1  # inside an announced blocking section: not a hang
            else:
                self.pings_missed += 1
                return self._failed(worker, f"the worker did not answer a ping within {self.settings.ping_timeout:g}s (hung)")

    def _failed(self, worker: WorkerProcess, reason: str) -> Outcome:
        self.last_failure = reason
        worker.kill(reason)
        return Outcome.FAILED

    def _record_pong(self, rtt: float) -> None:
        self.last_ping_rtt_ms = round(rtt * 1000, 3)
        self.ping_rtt_max_ms = max(self.ping_rtt_max_ms, self.last_ping_rtt_ms)
        self.pings_answered += 1

    def _check_rss(self, worker: WorkerProcess) -> None:
        limit = self.settings.max_rss_mb
        if limit and self._recycle_reason is None:
            rss = worker.rss_mb()
            if rss is not None and rss > limit:
                self.request_recycle(f"worker RSS {rss:.0f} MB passed {limit} MB")

    async def _drain_and_stop(self, worker: WorkerProcess) -> None:
        """Let in-flight calls finish (bounded), then stop the worker."""
        log.info("recycling worker pid %s: %s", worker.pid, self._recycle_reason)
        self.recycles_total += 1
        with anyio.move_on_after(self._longest_timeout()):
            while worker.in_flight and not worker.exited.is_set():
                await anyio.sleep(0.05)
        await worker.terminate(STOP_GRACE_SECONDS)

    def _longest_timeout(self) -> float:
        return float(max(self.settings.call_timeout, *(spec.timeout or 0.0 for spec in m.METHODS.values())))

    async def _stop_current(self) -> None:
        worker, self.worker, self._current = self._current, None, None
        if worker is not None and worker.is_alive():
            await worker.terminate(STOP_GRACE_SECONDS)

    # --- calls -------------------------------------------------------------------

    async def wait_ready(self, timeout: float) -> WorkerProcess:
        """The ready worker, waiting up to `timeout` for one; raises when none comes."""
        with anyio.move_on_after(timeout):
            while True:
                if self.state is WorkerState.CIRCUIT_OPEN:
                    raise RagError(
                        ErrorCode.SERVICE_UNAVAILABLE,
                        "The knowledge-base worker keeps failing, so calls are paused for a short while.",
                    )
                if self.state is WorkerState.STOPPED or self._stopping:
                    raise RagError(ErrorCode.SERVICE_UNAVAILABLE, "The server is shutting down.")
                worker = self.worker
                if self.state is WorkerState.READY and worker is not None and not worker.exited.is_set():
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
        """Route one call to the worker with a deadline; maps every failure to a RagError.

        When the deadline passes or the caller is cancelled, the endpoint tells the worker
        to cancel the request."""
        deadline = time.monotonic() + timeout
        worker = await self.wait_ready(min(timeout, self.settings.ready_wait))
        remaining = max(0.0, deadline - time.monotonic())
        try:
            call = await worker.endpoint.send_request(method, params, on_progress)
            self._count_call(worker)
            with anyio.fail_after(remaining):
                return await worker.endpoint.result(call)
        except TimeoutError:
            raise RagError(
                ErrorCode.PROCESSING_TIMEOUT,
                f"The operation did not finish within {timeout:g} seconds and was cancelled.",
            ) from None
        except WorkerGone:
            raise RagError(ErrorCode.WORKER_RESTARTED) from None

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
        self._changed.set()  # waiting calls see `_stopping` and fail fast
        self._loop_scope.cancel()
        if self._running:
            await self._stopped.wait()

    def snapshot(self) -> SupervisorSnapshot:
        worker = self.worker
        return SupervisorSnapshot(
            state=self.state,
            pid=worker.pid if worker else None,
            uptime_s=worker.uptime() if worker else None,
            rss_mb=worker.rss_mb() if worker else None,
            restarts=self.restarts_total,
            restarts_recent=self.policy.recent(self._restart_times, time.monotonic()),
            recycles=self.recycles_total,
            in_flight=worker.in_flight if worker else 0,
            calls_served=worker.calls_started if worker else 0,
            last_ping_rtt_ms=self.last_ping_rtt_ms,
            ping_rtt_max_ms=self.ping_rtt_max_ms,
            pings_answered=self.pings_answered,
            pings_missed=self.pings_missed,
            pings_deferred=self.pings_deferred,
            last_failure=self.last_failure,
            circuit_open=self.state is WorkerState.CIRCUIT_OPEN,
            bad_frames=worker.bad_frames if worker else 0,
            versions=(worker.ready_info.get("versions") if worker else None) or {},
        )


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
    return process_rss_mb(os.getpid()) or 0.0
