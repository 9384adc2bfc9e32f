"""The worker's running batch jobs: start, follow, cancel, resume — whatever a job does.

A job runs in the background of the worker: it outlives the call that started it, which
only waits up to LIGHTRAG_MCP_WAIT_SECONDS (`wait`) and then answers with the batch id.
What running a job means (preparing items, following LightRAG) is `operations.batches`'
`run_batch`, handed in by the composition root (`rag_worker.app`); this module keeps the
bookkeeping: one `RunningJob` per job, its file saved as it goes, pruned when it ends, and
the jobs a previous worker left unfinished resumed at start-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import anyio

from protocol import RagError
from rag_worker.operations.jobs import Job, JobStore
from rag_worker.storage.engine import Spawn

log = logging.getLogger("rag_worker.operations.batches")

FOLLOW_POLL_S = 0.5
SAVE_EVERY_S = 1.0


@dataclass
class RunningJob:
    """A job this worker runs, and what its callers asked of it."""

    job: Job
    store: JobStore
    done: anyio.Event = field(default_factory=anyio.Event)
    cancel_requested: bool = False
    stop_reason: str | None = None
    last_saved: float = 0.0

    def save(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_saved >= SAVE_EVERY_S:
            self.store.save(self.job)
            self.last_saved = now


RunJob = Callable[[RunningJob], Awaitable[None]]


class ReportsProgress(Protocol):
    """Who waits for a job: told how far it got (a `RequestContext`)."""

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None: ...


class BatchRunner:
    """The worker's running jobs, each run by `run_job` in the background."""

    def __init__(self, data_dir: Path, spawn: Spawn, run_job: RunJob) -> None:
        self._root = data_dir
        self._spawn = spawn
        self._run_job = run_job
        self._running: dict[str, RunningJob] = {}

    def store_for(self, workspace: str) -> JobStore:
        return JobStore(self._root / workspace)

    def start(self, job: Job) -> None:
        running = RunningJob(job, self.store_for(job.workspace))
        running.save(force=True)
        self._running[job.id] = running
        self._spawn(lambda: self._run(running))

    def load(self, workspace: str, job_id: str) -> Job | None:
        running = self._running.get(job_id)
        if running is not None and running.job.workspace == workspace:
            return running.job
        return self.store_for(workspace).load(job_id)

    def cancel(self, workspace: str, job_id: str) -> Job | None:
        """Stop preparing new items of a job; its documents already queued finish indexing."""
        running = self._running.get(job_id)
        if running is not None and running.job.workspace == workspace:
            running.cancel_requested = True
            return running.job
        return self.load(workspace, job_id)

    async def wait(self, job_id: str, seconds: float, waiter: ReportsProgress) -> None:
        """Wait up to `seconds` for a job, reporting progress; cancelling the wait cancels the job."""
        running = self._running.get(job_id)
        if running is None:
            return
        deadline = time.monotonic() + seconds
        try:
            while not running.done.is_set() and time.monotonic() < deadline:
                progress = running.job.progress()
                total = len(running.job.items)
                done = total - progress["remaining"]
                await waiter.progress(done, total, f"{done} of {total} item(s) done")
                with anyio.move_on_after(min(FOLLOW_POLL_S, max(deadline - time.monotonic(), 0.01))):
                    await running.done.wait()
        except anyio.get_cancelled_exc_class():
            running.cancel_requested = True
            raise

    async def resume_all(self) -> None:
        """Resume the jobs a previous worker left unfinished (called once at start-up)."""
        for directory in sorted(self._root.glob("*/batches")):
            workspace = directory.parent.name
            for job in JobStore(directory.parent).unfinished():
                if job.id in self._running or job.workspace != workspace:
                    continue
                log.info("resuming %s in workspace %s", job.id, workspace)
                running = RunningJob(job, JobStore(directory.parent))
                self._running[job.id] = running
                self._spawn(lambda running=running: self._run(running))  # type: ignore[misc]

    async def _run(self, running: RunningJob) -> None:
        job = running.job
        try:
            await self._run_job(running)
        except RagError as exc:
            job.status, job.note = "failed", exc.message
        except Exception:
            log.exception("batch %s failed", job.id)
            job.status, job.note = "failed", "The batch stopped on an internal error; see the server log."
        finally:
            with anyio.CancelScope(shield=True):
                if job.status != "queued":
                    running.save(force=True)
                running.store.prune()
                running.done.set()
                self._running.pop(job.id, None)
