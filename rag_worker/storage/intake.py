"""The intake queue: documents acknowledged to their caller and not yet handed to LightRAG.

An ingestion call records its document here — one small file per document under
`<workspace>/intake/`, our catalog record in memory — and answers: no LightRAG storage is
written on the call's path.  (LightRAG 1.5.7's `apipeline_enqueue_documents` rewrites the whole
full-docs and doc-status files on every call, under the locks its running pipeline takes for
its own saves: 30-300 ms per upload while indexing ran, growing with the knowledge base.)

The workspace's feeder (`EngineRegistry.start_processing`) then hands everything queued to
LightRAG in ONE `apipeline_enqueue_documents` batch (`hand_over`): those files are rewritten
once per batch, and documents queued meanwhile form the next batch, which joins the running
pipeline through LightRAG's ingress mailbox.

Until its batch is in LightRAG a document is answered from here (`Workspace.status_row` and
the like): `pending`, with its own track id; it counts, lists, and a delete drops it from the
queue.  A killed worker loses nothing: `recover` reads the files back when the workspace opens,
and a document LightRAG already holds (the kill fell between its enqueue and our cleanup) is
not queued twice.  Files are renamed into place without fsync (`write_atomic(sync=False)`),
the guarantee LightRAG's doc-status file has.

A new version of a document LightRAG holds waits in the queue until LightRAG's delete of the
old one ends (`awaiting_removal`; one id cannot be in LightRAG twice): that delete runs in the
background (`Indexing.remove_previous_versions`), as it takes minutes in a large knowledge base.
The id is in the delete journal meanwhile, which is how `recover` tells such a document from
one already handed over.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from rag_worker.storage.durable import write_atomic

if TYPE_CHECKING:
    from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.storage.intake")

INTAKE_DIR = "intake"
WRITE_IN_THREAD_CHARS = 256_000  # bigger documents are written off the event loop
CONFLICT_RETRY_S = 0.5  # LightRAG refuses enqueues while it deletes: try again this often
CONFLICT_GIVE_UP_S = 120.0


@dataclass
class QueuedDocument:
    """A document as LightRAG will get it (cleaned text, its hash, options) and our record of it."""

    doc_id: str
    text: str
    content_hash: str
    file_path: str  # LightRAG's file_path for it
    track_id: str  # the caller's
    record: dict[str, Any]  # our catalog record
    process_options: str = ""  # LightRAG's per-document flags ("!" skips entity extraction)
    chunk_options: dict[str, Any] | None = None
    queued_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def status_row(self) -> dict[str, Any]:
        """Its doc-status row as LightRAG's `get_by_id` gives rows: pending, nothing processed yet."""
        return {
            "status": "pending",
            "content_summary": _summary(self.text),
            "content_length": len(self.text),
            "file_path": self.file_path,
            "track_id": self.track_id,
            "created_at": self.queued_at,
            "updated_at": self.queued_at,
            "chunks_count": None,
            "chunks_list": [],
            "content_hash": self.content_hash,
            "error_msg": None,
            "metadata": {},
        }

    def processing_status(self) -> Any:
        """Its row as LightRAG's `get_docs_by_statuses` gives rows (a `DocProcessingStatus`)."""
        from lightrag.base import DocProcessingStatus, DocStatus  # deferred: LightRAG is imported once, off the loop

        return DocProcessingStatus(**{**self.status_row(), "status": DocStatus.PENDING})


def _summary(text: str, length: int = 250) -> str:
    """LightRAG's content summary (`lightrag.utils.get_content_summary`)."""
    text = text.strip()
    return text if len(text) <= length else text[:length] + "..."


class IntakeQueue:
    """One workspace's queued documents: in memory for the calls, one file each for a restart.

    Callers that add or drop documents hold the workspace's ingest lock; the feeder takes
    batches without it, so a document being handed over (`settled`) is waited for, not dropped."""

    def __init__(self, workspace_dir: Path) -> None:
        self.directory = workspace_dir / INTAKE_DIR
        self.feeding = False  # a feeder task works for this workspace (it is in use meanwhile)
        self.removing = False  # a task deletes the previous versions of documents awaiting removal
        self.awaiting_removal: set[str] = set()  # ids whose version in LightRAG goes before the queued one
        self._queued: dict[str, QueuedDocument] = {}  # arrival order
        self._handing: dict[str, QueuedDocument] = {}  # in a batch on its way to LightRAG
        self._settled = anyio.Event()
        self._settled.set()

    def __len__(self) -> int:
        return len(self._queued) + len(self._handing)

    def get(self, doc_id: str) -> QueuedDocument | None:
        return self._queued.get(doc_id) or self._handing.get(doc_id)

    def documents(self) -> list[QueuedDocument]:
        return [*self._handing.values(), *self._queued.values()]

    def waiting(self, doc_id: str) -> bool:
        """Queued and not yet taken by the feeder: dropping it touches nothing LightRAG holds."""
        return doc_id in self._queued

    def with_hash(self, content_hash: str, *, exclude_doc_id: str) -> str | None:
        """Another queued document with this text, as LightRAG's content-hash check would find it."""
        return next(
            (doc.doc_id for doc in self.documents() if doc.content_hash == content_hash and doc.doc_id != exclude_doc_id),
            None,
        )

    async def settled(self, doc_id: str) -> None:
        """Return once `doc_id` is not on its way to LightRAG (its batch landed or came back)."""
        while doc_id in self._handing:
            await self._settled.wait()

    async def add(self, doc: QueuedDocument, *, after_removal: bool = False) -> None:
        """Queue `doc` (replacing a queued version of it) once its file is written; `after_removal`:
        handed over only once LightRAG's version of it is deleted (`removed`)."""
        assert doc.doc_id not in self._handing, "wait for `settled` first"
        if after_removal:
            self.awaiting_removal.add(doc.doc_id)
        data = orjson.dumps(asdict(doc))
        if len(doc.text) > WRITE_IN_THREAD_CHARS:
            await anyio.to_thread.run_sync(self._write, doc.doc_id, data)
        else:
            self._write(doc.doc_id, data)
        self._queued.pop(doc.doc_id, None)
        self._queued[doc.doc_id] = doc

    def drop(self, doc_id: str) -> bool:
        """Remove a waiting document (a delete, a replaced version); False when it is not waiting."""
        if self._queued.pop(doc_id, None) is None:
            return False
        self._path(doc_id).unlink(missing_ok=True)
        return True

    def take(self) -> list[QueuedDocument]:
        """Everything waiting but what awaits a removal, as the next batch for LightRAG (marked as on its way)."""
        batch = [doc for doc in self._queued.values() if doc.doc_id not in self.awaiting_removal]
        if batch:
            for doc in batch:
                del self._queued[doc.doc_id]
            self._handing.update((doc.doc_id, doc) for doc in batch)
            self._settled = anyio.Event()
        return batch

    def removed(self, doc_id: str) -> None:
        """LightRAG's version of `doc_id` is deleted: a version queued behind it may be handed over."""
        self.awaiting_removal.discard(doc_id)

    def landed(self, batch: list[QueuedDocument]) -> None:
        """LightRAG holds the batch: its rows answer for these documents from now on."""
        self._settle(batch)

    def put_back(self, batch: list[QueuedDocument]) -> None:
        """LightRAG did not take the batch: it waits again, ahead of what arrived since."""
        self._settle(batch)
        self._queued = {**{doc.doc_id: doc for doc in batch}, **self._queued}

    def forget(self, batch: list[QueuedDocument]) -> None:
        """Delete the files of documents LightRAG holds and whose records are committed."""
        for doc in batch:
            if self.get(doc.doc_id) is None:  # not queued again (a new version) meanwhile
                self._path(doc.doc_id).unlink(missing_ok=True)

    def read_files(self) -> list[QueuedDocument]:
        """The documents a previous worker left queued (blocking: run it in a thread at open)."""
        documents = []
        for path in sorted(self.directory.glob("*.json"), key=lambda path: path.stat().st_mtime_ns):
            try:
                documents.append(QueuedDocument(**orjson.loads(path.read_bytes())))
            except (OSError, ValueError, TypeError) as exc:
                log.error("the queued document %s is unreadable (%s); it is left where it is", path.name, exc)
        return documents

    def restore(self, doc: QueuedDocument) -> None:
        """Queue again a document read back from its file."""
        self._queued[doc.doc_id] = doc

    def _settle(self, batch: list[QueuedDocument]) -> None:
        for doc in batch:
            self._handing.pop(doc.doc_id, None)
        if not self._handing:
            self._settled.set()

    def _write(self, doc_id: str, data: bytes) -> None:
        write_atomic(self._path(doc_id), data, sync=False)

    def _path(self, doc_id: str) -> Path:
        return self.directory / f"{doc_id}.json"


async def hand_over(ws: Workspace, batch: list[QueuedDocument]) -> bool:
    """Give LightRAG `batch` in one enqueue, then commit the batch's records and delete its files.

    False when LightRAG did not take it (the batch is queued again and the error logged).
    While LightRAG deletes a document it refuses enqueues (`PipelineReservationConflictError`):
    the batch waits for that, for `CONFLICT_GIVE_UP_S` at most."""
    from lightrag.exceptions import PipelineReservationConflictError  # deferred: imported once, off the loop

    deadline = anyio.current_time() + CONFLICT_GIVE_UP_S
    while True:
        try:
            await _enqueue(ws.rag, batch)
            break
        except PipelineReservationConflictError as exc:
            if anyio.current_time() < deadline:
                await anyio.sleep(CONFLICT_RETRY_S)
                continue
            log.error("workspace %s: LightRAG kept refusing %d queued document(s): %s", ws.name, len(batch), exc)
        except Exception:
            log.exception("workspace %s: handing %d queued document(s) to LightRAG failed", ws.name, len(batch))
        ws.intake.put_back(batch)
        return False
    ws.intake.landed(batch)
    try:
        await ws.catalog.commit([doc.doc_id for doc in batch])
    except Exception:  # the files stay: the next opening restores the records from them (`recover`)
        log.exception("workspace %s: saving the records of %d document(s) failed", ws.name, len(batch))
        return True
    ws.intake.forget(batch)
    return True


async def _enqueue(rag: Any, batch: list[QueuedDocument]) -> None:
    from lightrag.parser.routing import resolve_chunk_options  # deferred: LightRAG is imported once, off the loop
    from lightrag.utils import generate_track_id

    # Per-document options in one call; a document without its own chunk options gets the
    # snapshot LightRAG builds when none are given (what `ainsert` does before enqueueing).
    await rag.apipeline_enqueue_documents(
        [doc.text for doc in batch],
        ids=[doc.doc_id for doc in batch],
        file_paths=[doc.file_path for doc in batch],
        track_id=generate_track_id("intake"),  # LightRAG's, one per batch; callers have their own (`record`)
        process_options=[doc.process_options for doc in batch],
        chunk_options=[
            doc.chunk_options or resolve_chunk_options(rag.addon_params, process_options=doc.process_options)
            for doc in batch
        ],
    )


async def recover(ws: Workspace) -> None:
    """At open, before any call: queue again what a previous worker acknowledged and did not hand over.

    A document whose id is in the delete journal is a new version whose old one LightRAG was
    deleting: it waits for that delete again.  Any other one LightRAG holds was handed over just
    before the previous worker stopped: only its record is committed and its file deleted."""
    documents = await anyio.to_thread.run_sync(ws.intake.read_files)
    deleting = set(ws.deletes.pending())
    landed = []
    for doc in documents:
        ws.catalog.put(doc.doc_id, doc.record)
        if doc.doc_id in deleting:
            ws.intake.restore(doc)
            ws.intake.awaiting_removal.add(doc.doc_id)
        elif await ws.rag.doc_status.get_by_id(doc.doc_id) is not None:
            landed.append(doc)
        else:
            ws.intake.restore(doc)
    if landed:
        await ws.catalog.commit([doc.doc_id for doc in landed])
        ws.intake.forget(landed)
    if documents:
        log.info("workspace %s: %d queued document(s) found, %d handed over already", ws.name, len(documents), len(landed))
