"""A workspace's indexing in the background: the intake queue's feeder hands batches to LightRAG
and keeps its pipeline running; both outlive the call that queued the work and keep the
workspace in use (`Workspace.in_use`) until they end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio

from rag_worker.storage.intake import hand_over
from rag_worker.storage.outage_retry import requeue_storage_failures
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.storage.engine")

#: Starts background work that outlives the call that queued it (the worker's task group).
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]

#: A batch LightRAG refused (its storage restarting) is handed over again after 1, 2, 4, 8, 16 s.
HANDOVER_RETRY_S = 1.0
HANDOVER_RETRIES = 5
UNFINISHED_STATES = ("pending", "parsing", "analyzing", "processing")


class Indexing:
    """Starts feeders and pipeline runs, in tasks `spawn` starts."""

    def __init__(
        self,
        spawn: Spawn,
        after_processing: Callable[[Workspace], Awaitable[None]] | None = None,
    ) -> None:
        self._spawn = spawn
        self._after_processing = after_processing  # e.g. tell the front the document set changed

    async def resume_unfinished(self, entry: Workspace) -> None:
        """Durability: documents a previous worker (or an earlier opening) left unfinished are processed."""
        counts = await entry.status_counts()
        unfinished = sum(int(counts.get(state, 0)) for state in UNFINISHED_STATES)
        if unfinished:
            log.info("workspace %s: resuming %d unfinished document(s)", entry.name, unfinished)
            self.start(entry)

    def start(self, entry: Workspace) -> None:
        """Hand what the intake queue holds to LightRAG and keep its pipeline running, in the background.

        One feeder per workspace: what is queued while it hands a batch over is its next batch.
        A batch joins a running pipeline (LightRAG's in-batch feeder takes it from the ingress
        mailbox, published before we look at `busy`); otherwise a run starts.  With nothing to
        hand over a run starts too (documents LightRAG holds from a previous worker)."""
        if entry.intake.feeding:
            return  # the feeder at work takes this call's document in its next batch
        entry.intake.feeding = True

        async def feed() -> None:
            refused = False
            try:
                handed = False
                while batch := entry.intake.take():
                    if not await hand_over(entry, batch):
                        refused = True
                        break
                    handed = True
                    entry.handover_failures = 0
                    if not await entry.pipeline_busy():
                        self._run_pipeline(entry)
                if not handed:
                    self._run_pipeline(entry)
            finally:
                entry.intake.feeding = False
                entry.last_used = time.monotonic()
            if refused:
                self._feed_again_later(entry)

        self._spawn(feed)

    def _feed_again_later(self, entry: Workspace) -> None:
        """A batch LightRAG did not take (its storage went away: an engine restarting) is queued
        again; with no further call to hand it over, try again, spaced out, a few times."""
        entry.handover_failures += 1
        if entry.handover_failures > HANDOVER_RETRIES:
            log.error("workspace %s: queued documents wait for the next call or opening", entry.name)
            return
        entry.indexing_runs += 1  # the workspace stays open meanwhile

        async def later() -> None:
            try:
                await anyio.sleep(HANDOVER_RETRY_S * 2 ** (entry.handover_failures - 1))
            finally:
                entry.indexing_runs -= 1
            self.start(entry)

        self._spawn(later)

    def _run_pipeline(self, entry: Workspace) -> None:
        """Run LightRAG's pipeline in the background (it outlives the call that queued work).

        The run keeps the workspace in use until it ends."""
        entry.indexing_runs += 1

        async def process() -> None:
            try:
                try:
                    await entry.rag.apipeline_process_enqueue_documents()
                    if await requeue_storage_failures(entry.rag, entry.storage_retries):
                        self._run_pipeline(entry)  # documents an outage failed: indexed again (outage_retry)
                except Exception:
                    log.exception("indexing pipeline of workspace %s failed", entry.name)
                if self._after_processing is not None:
                    await self._after_processing(entry)
            finally:
                entry.indexing_runs -= 1
                entry.last_used = time.monotonic()

        self._spawn(process)
