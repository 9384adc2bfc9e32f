"""A delete call's work, run in the background of the worker so the call answers in time.

At thousands of documents LightRAG's cascade outlasts any client's patience: it rebuilds each
entity the document shares from the extractions of every other document naming it (69 s for one
document at 5,000 generated reports, against LibreChat's 60 s).  So `lightrag_delete_documents`
starts a `DeleteRun` in the worker's background and waits for it only up to
LIGHTRAG_MCP_WAIT_SECONDS; what is still being deleted then is named in its answer and goes on.

The run holds the workspace's ingest lock throughout, as the call did before: an upload of the
same name or content cannot interleave.  Every document it is to delete is written in the
workspace's delete journal before the call may answer (`storage.removal` reads it), so a worker
stopped meanwhile has them all finished when the workspace reopens.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from protocol import ErrorCode
from rag_worker.context import RequestContext
from rag_worker.embedded.embedding_lanes import release_freed_memory
from rag_worker.operations.backups import write_backup
from rag_worker.operations.changes import announce_documents_changed
from rag_worker.operations.deletion import (
    POLL_SECONDS,
    Contribution,
    DeleteOptions,
    Failure,
    Outcome,
    delete_inspected,
    inspect,
    not_ready_failure,
    readiness,
    restrict_failure,
)
from rag_worker.storage.catalog import state_of
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.delete_runs")

Report = Callable[[float, float | None, str | None], Awaitable[None]]
Target = tuple[str, dict[str, Any]]  # (id as requested, status row)


@dataclass
class DeleteRun:
    """What one call asked to delete and how far its run got: read by the call while it waits."""

    requested: list[str]
    options: DeleteOptions
    ready_by: float  # monotonic: until when a document may still become deletable (indexing ends)
    report: Report | None = None  # the waiting call's progress; None once it answered
    remaining: dict[str, str] = field(init=False)  # still to delete: id (a name until found) → name
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    backup_info: dict[str, Any] | None = None
    error: Exception | None = None  # what stopped the run (raised to the call if it still waits)
    leased: anyio.Event = field(default_factory=anyio.Event)
    planning: bool = False  # it holds the ingest lock and looks the documents up (not queued behind another run)
    planned: anyio.Event = field(default_factory=anyio.Event)  # every refusal is known: only deletes remain
    finished: anyio.Event = field(default_factory=anyio.Event)
    created: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.remaining = {name: name for name in self.requested}

    def fail(self, failure: Failure) -> None:
        """Record a document not deleted: in the answer, or in the log once the call answered."""
        self.failures.append(failure)
        if self.report is None:
            log.warning("%s was not deleted (after the call answered): %s", failure.document_id, failure.message)

    async def say(self, progress: float, total: float, message: str) -> None:
        if self.report is not None:
            await self.report(progress, total, message)

    async def waiting(self, _: str) -> None:
        """Progress while a document waits for indexing to end (`removal.WaitReport`)."""
        budget, elapsed = self.ready_by - self.created, time.monotonic() - self.created
        fraction = min(0.99, elapsed / budget) if budget > 0 else 0.99
        await self.say(fraction, len(self.requested) + 1, f"waiting for indexing to finish before deleting ({elapsed:.0f} s)")


async def run_deletes(ctx: RequestContext, ws: Workspace, run: DeleteRun) -> None:
    """The run's whole life (spawned in the worker's background): never raises."""
    ws.lease_to_current_task()  # the workspace stays open until the run ends
    run.leased.set()
    try:
        async with ws.ingest_lock:
            run.planning = True
            try:
                planned = await _plan(ctx, ws, run)
                # Documents LightRAG has not got yet leave the queue at once: answered with the refusals.
                queued = {found.doc_id for found in planned if ws.intake.waiting(found.doc_id)}
                await _delete_planned(ws, run, [found for found in planned if found.doc_id in queued])
            finally:
                run.planned.set()
            await _delete_planned(ws, run, [found for found in planned if found.doc_id not in queued], done_before=len(queued))
    except Exception as exc:  # kept for the call, or logged when it already answered
        run.error = exc
        if run.report is None:
            log.error("deleting %s in workspace %s stopped: %s", list(run.remaining.values()), ws.name, exc)
    finally:
        for doc_id in run.remaining:
            ws.deleting.pop(doc_id, None)
        run.planned.set()
        run.finished.set()
    # LightRAG's rebuild read the extractions of every chunk naming a shared entity (most of the
    # corpus at 5,000 documents): heap the worker would otherwise keep.
    await anyio.to_thread.run_sync(release_freed_memory)
    if run.outcomes:
        await announce_documents_changed(ctx.state.notify, ws.name)


async def _plan(ctx: RequestContext, ws: Workspace, run: DeleteRun) -> list[Contribution]:
    """Find the documents, wait (until `ready_by`) for them to be deletable, read what each
    contributed and back it up: every refusal is known when this returns."""
    targets: dict[str, Target] = {}
    for name in run.requested:
        hit = await ws.find_document(name)
        if hit is None:
            run.fail(
                Failure(
                    name,
                    ErrorCode.DOCUMENT_NOT_FOUND,
                    "No document with this id or file name in your knowledge base (already deleted?). "
                    "lightrag_list_documents shows the ids.",
                )
            )
        elif hit[0] not in targets:
            targets[hit[0]] = (name, hit[1])
    ready, not_ready = await _wait_until_ready(ws, targets, run.ready_by, run.options.force, run.waiting)
    for failure in not_ready:
        run.fail(failure)
    planned: list[Contribution] = []
    for doc_id, (name, row) in ready.items():
        found = await inspect(ws, doc_id, name, row)
        refusal = None if run.options.cascade else restrict_failure(found)
        if refusal is None:
            planned.append(found)
        else:
            run.fail(refusal)
    run.remaining = {found.doc_id: found.filename for found in planned}
    ws.deleting.update(run.remaining)
    if run.options.backup and planned:
        run.backup_info = await write_backup(ctx, ws, planned)
    # Written down before the call can answer that they are being deleted: a worker stopped in
    # the middle of the run (a recycle, a kill) has every one of them finished when it reopens.
    for found in planned:
        if not ws.intake.waiting(found.doc_id):
            ws.deletes.begin(found.doc_id)
    return planned


async def _delete_planned(ws: Workspace, run: DeleteRun, planned: list[Contribution], done_before: int = 0) -> None:
    total_steps = len(run.requested) + 1
    await run.say(1 + done_before, total_steps, "deleting")
    for step, planned_doc in enumerate(planned, start=2 + done_before):
        # Read again: a document deleted earlier in this run may have changed what this one shares.
        found = await inspect(ws, planned_doc.doc_id, planned_doc.requested_as, planned_doc.row)
        refusal = None if run.options.cascade else restrict_failure(found)
        if refusal is not None:
            ws.deletes.end(found.doc_id)  # not to be finished at the next opening either
        result = refusal or await delete_inspected(ws, found, run.ready_by, run.waiting)
        if isinstance(result, Failure):
            run.fail(result)
        else:
            run.outcomes.append(result)
        run.remaining.pop(found.doc_id, None)
        ws.deleting.pop(found.doc_id, None)
        await run.say(step, total_steps, f"deleted {found.filename}")


async def _wait_until_ready(
    ws: Workspace, targets: dict[str, Target], deadline: float, force: bool, waiting: Callable[[str], Awaitable[None]]
) -> tuple[dict[str, Target], list[Failure]]:
    """Wait (until `deadline`) for no indexing to run and each document to be finished."""
    pending = dict(targets)
    ready: dict[str, Target] = {}
    reasons: dict[str, str] = {}
    failures: list[Failure] = []
    while pending:
        busy = await ws.pipeline_busy()
        for doc_id, (name, _) in list(pending.items()):
            row = await ws.status_row(doc_id)
            if row is None:  # deleted meanwhile (e.g. by a replacing upload elsewhere)
                failures.append(Failure(name, ErrorCode.DOCUMENT_NOT_FOUND, "The document no longer exists."))
                del pending[doc_id]
                continue
            # Still in our intake queue: dropping it touches nothing LightRAG holds.
            queued = ws.intake.waiting(doc_id)
            reasons[doc_id] = "ready" if queued else readiness(state_of(row.get("status")), busy, force)
            if reasons[doc_id] == "ready":
                ready[doc_id] = (name, dict(row))
                del pending[doc_id]
        if not pending or time.monotonic() >= deadline:
            break
        await waiting("")
        await anyio.sleep(POLL_SECONDS)
    failures += [not_ready_failure(name, reasons[doc_id]) for doc_id, (name, _) in pending.items()]
    return ready, failures
