"""A workspace's indexing in the background: the intake queue's feeder hands batches to LightRAG
and keeps its pipeline running, and the remover deletes the old versions replaced documents
wait for; all outlive the call that queued the work and keep the workspace in use
(`Workspace.in_use`) until they end.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio

from rag_worker.embedded.embedding_lanes import release_freed_memory
from rag_worker.storage.catalog import status_counts
from rag_worker.storage.intake import hand_over
from rag_worker.storage.outage_retry import requeue_storage_failures
from rag_worker.storage.removal import remove_from_lightrag
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.storage.engine")

#: Starts background work that outlives the call that queued it (the worker's task group).
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]

#: A batch LightRAG refused (its storage restarting) is handed over again after 1, 2, 4, 8, 16 s.
HANDOVER_RETRY_S = 1.0
HANDOVER_RETRIES = 5
#: A previous version whose delete stopped part-way (its storage went away) is tried again after 5, 10 s.
REMOVAL_RETRY_S = 5.0
REMOVAL_RETRIES = 2
#: A run that halted with documents left unfinished (its storage failed: a full disk) is started
#: again after 2, 4, 8, 16, 32, 64 s; later, the next call or opening resumes them.
HALT_RETRY_S = 2.0
HALT_RETRIES = 6
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

    def remove_previous_versions(self, entry: Workspace) -> None:
        """Delete LightRAG's versions of the documents whose new versions wait behind them
        (`IntakeQueue.awaiting_removal`), one at a time in the background, each new version then
        handed over.  LightRAG deletes only while its pipeline is idle: a removal waits for it."""
        if entry.intake.removing or not entry.intake.awaiting_removal:
            return
        entry.intake.removing = True

        async def remove() -> None:
            failures: dict[str, int] = {}
            try:
                while waiting := [doc_id for doc_id in entry.intake.awaiting_removal if failures.get(doc_id, 0) <= REMOVAL_RETRIES]:
                    doc_id = waiting[0]
                    removed = await remove_from_lightrag(entry, doc_id, deadline=math.inf)
                    if removed.status == "fail":  # written down still: the next opening finishes it at the latest
                        failures[doc_id] = failures.get(doc_id, 0) + 1
                        if failures[doc_id] <= REMOVAL_RETRIES:
                            await anyio.sleep(REMOVAL_RETRY_S * failures[doc_id])
                        continue
                    if removed.status == "refused":
                        self._drop_new_version(entry, doc_id, removed.message)
                    entry.intake.removed(doc_id)
                    self.start(entry)
            finally:
                entry.intake.removing = False
                entry.last_used = time.monotonic()
            await anyio.to_thread.run_sync(release_freed_memory)  # the rebuild's heap (as after a delete call's run)
            for doc_id, count in failures.items():
                if count > REMOVAL_RETRIES and doc_id in entry.intake.awaiting_removal:
                    log.error("workspace %s: the old version of %s is not deleted; its new version waits for the next opening", entry.name, doc_id)

        self._spawn(remove)

    @staticmethod
    def _drop_new_version(entry: Workspace, doc_id: str, reason: str) -> None:
        """LightRAG refuses to delete the old version (its records of what the document contributed
        are incomplete): it stays, and the new version, which cannot take its id, is dropped."""
        entry.intake.drop(doc_id)
        entry.catalog.forget_pending(doc_id)
        log.error("workspace %s: the new version of %s was dropped: LightRAG refused to delete the old one (%s)", entry.name, doc_id, reason)

    def _feed_again_later(self, entry: Workspace) -> None:
        """A batch LightRAG did not take (its storage went away: an engine restarting) is queued
        again; with no further call to hand it over, try again, spaced out, a few times."""
        entry.handover_failures += 1
        if entry.handover_failures > HANDOVER_RETRIES:
            log.error("workspace %s: queued documents wait for the next call or opening", entry.name)
            return
        self._start_later(entry, HANDOVER_RETRY_S * 2 ** (entry.handover_failures - 1))

    @staticmethod
    async def _halted_with_work_left(entry: Workspace) -> bool:
        """The run that just ended was the last one and left documents pending or processing:
        LightRAG halts a run on a storage error ("Pipeline halted on internal storage error"), and
        a document whose FAILED status could not be written either (a full disk) stays processing,
        resumed only by a later run.  A run that raised (the consistency check that starts it
        writes too) counts the same: a document stayed processing for good when the run started
        again after a halt met the disk still full."""
        if entry.indexing_runs > 1 or await entry.pipeline_busy():
            return False  # another run of ours, or LightRAG's, goes on and takes them
        counts = await status_counts(entry.rag.doc_status)
        return any(counts.get(state, 0) for state in UNFINISHED_STATES)

    def _resume_after_halt(self, entry: Workspace) -> None:
        """Start the pipeline again later, spaced out, a few times (the storage may write again)."""
        entry.halted_runs += 1
        if entry.halted_runs > HALT_RETRIES:
            log.error("workspace %s: indexing halted on a storage error; unfinished documents wait for the next call or opening", entry.name)
            return
        delay = HALT_RETRY_S * 2 ** (entry.halted_runs - 1)
        log.warning("workspace %s: indexing halted with documents unfinished; starting it again in %g s", entry.name, delay)
        self._start_later(entry, delay)

    def _start_later(self, entry: Workspace, delay: float) -> None:
        """`start` after `delay` seconds; the workspace stays open meanwhile."""
        entry.indexing_runs += 1

        async def later() -> None:
            try:
                await anyio.sleep(delay)
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
                except Exception:  # e.g. its first write failed on a full disk: what it left is resumed below
                    log.exception("indexing pipeline of workspace %s failed", entry.name)
                try:
                    if await requeue_storage_failures(entry.rag, entry.storage_retries):
                        self._run_pipeline(entry)  # documents an outage failed: indexed again (outage_retry)
                    elif await self._halted_with_work_left(entry):
                        self._resume_after_halt(entry)
                    else:
                        entry.halted_runs = 0
                except Exception:
                    log.exception("workspace %s: reading what the indexing run left unfinished failed", entry.name)
                if self._after_processing is not None:
                    await self._after_processing(entry)
            finally:
                entry.indexing_runs -= 1
                entry.last_used = time.monotonic()

        self._spawn(process)
