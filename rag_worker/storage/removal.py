"""Removing one document with LightRAG's cascade, journaled so a killed worker's delete is finished.

`remove_document` is the one way a document leaves a workspace (the delete tool, a folder run's
removed files): a document still in the intake queue is dropped from it; otherwise it writes
the id into the workspace's delete journal before LightRAG starts, retries while the pipeline
is busy and drops our catalog record.  `remove_from_lightrag` is its LightRAG half, also what
deletes the old version of a replaced document (whose new version waits in the intake queue
and keeps its record).
`finish_interrupted_deletes` runs when a workspace opens (`EngineRegistry.get`), in the
background, for the ids a killed worker left written down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.storage.removal")

RETRY_POLL_SECONDS = 0.5  # between tries while LightRAG's pipeline is busy
REOPEN_WAIT_SECONDS = 30.0  # how long an interrupted delete may wait for the pipeline at open

WaitReport = Callable[[str], Awaitable[None]]


@dataclass
class Removed:
    """What LightRAG's delete of one document ended with."""

    status: str  # success, not_found, busy, refused, fail
    message: str = ""


async def remove_document(ws: Workspace, doc_id: str, *, deadline: float, on_wait: WaitReport | None = None) -> Removed:
    """Delete one document with LightRAG's cascade, retrying until `deadline` while the
    pipeline is busy; on success (or when LightRAG has no such document) our catalog record
    goes too.  Shielded from cancellation: a delete is never left half-recorded by us.

    Callers hold `ws.ingest_lock`.  `status` is success, not_found, busy (the deadline
    passed while indexing ran), refused (LightRAG found the graph records incomplete) or
    fail (stopped part-way; LightRAG recorded where, so a retry finishes it)."""
    await ws.intake.settled(doc_id)  # on its way to LightRAG: LightRAG's delete below takes it
    if ws.intake.drop(doc_id):  # a version LightRAG still holds (`awaiting_removal`) goes in the background
        await ws.catalog.delete(doc_id)
        return Removed("success")
    return await remove_from_lightrag(ws, doc_id, deadline=deadline, on_wait=on_wait)


async def remove_from_lightrag(
    ws: Workspace, doc_id: str, *, deadline: float, on_wait: WaitReport | None = None
) -> Removed:
    """LightRAG's cascade delete of `doc_id` (see `remove_document`); our record goes too unless a
    new version of the document waits in the intake queue (a replacement)."""
    while True:
        with anyio.CancelScope(shield=True):
            ws.deletes.begin(doc_id)  # a worker killed from here on has the delete finished on reopen
            result = await ws.rag.adelete_by_doc_id(doc_id, delete_llm_cache=False)
            status = str(getattr(result, "status", "fail"))
            if status in {"success", "not_found"} and ws.intake.get(doc_id) is None:
                await ws.catalog.delete(doc_id)
            refused = status == "fail" and getattr(result, "status_code", 500) == 409  # nothing was deleted
            if status != "fail" or refused:  # a delete that failed part-way stays written down: a retry finishes it
                ws.deletes.end(doc_id)
        message = str(getattr(result, "message", ""))
        if status in {"success", "not_found"}:
            return Removed(status, message)
        if status != "not_allowed":
            log.warning("deleting %s failed (%s): %s", doc_id, status, message)
            return Removed("refused" if refused else "fail", message)
        if time.monotonic() >= deadline:
            return Removed("busy", message)
        if on_wait is not None:
            await on_wait(doc_id)
        await anyio.sleep(RETRY_POLL_SECONDS)


async def finish_interrupted_deletes(ws: Workspace, doc_ids: list[str]) -> None:
    """Finish the deletes of `doc_ids` a killed worker left in the workspace's journal (at open, in
    the background, under `ws.ingest_lock`, before indexing resumes: LightRAG's pipeline is idle)."""
    for doc_id in doc_ids:
        removed = await remove_document(ws, doc_id, deadline=time.monotonic() + REOPEN_WAIT_SECONDS)
        if removed.status in {"success", "not_found"}:
            log.info("workspace %s: finished the interrupted delete of %s", ws.name, doc_id)
        else:
            log.error("workspace %s: the interrupted delete of %s did not finish (%s): %s", ws.name, doc_id, removed.status, removed.message)
