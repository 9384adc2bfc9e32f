"""Running batch jobs: prepare items a few at a time, hand them to LightRAG, follow them.

A job runs in the background of the worker — it outlives the call that started it, which
only waits up to LIGHTRAG_MCP_WAIT_SECONDS and then answers with the batch id.  Phases:

1. prepare: each pending item is read (a file inside the allowed roots), fetched (a URL,
   SSRF rules in `ingest.urls`) or taken as is (a text), extracted in an extractor process
   and queued with LightRAG — `max_concurrent` items at a time.  A file whose bytes did not
   change since it was indexed is `unchanged` without being parsed again;
2. follow: queued documents are polled until LightRAG finishes them;
3. folder runs with `remove_missing`: documents of the folder whose files are gone are
   deleted.

The job file is saved after each step, so a worker restart resumes where it stopped
(`resume_all` at start-up): pending items are prepared again, queued ones followed —
LightRAG itself resumes the documents it holds.  Cancelling stops preparing new items;
documents LightRAG already holds finish indexing and stay.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.ingest import BYTES_PER_MB, detect_format, extract_isolated, validate_metadata
from rag_worker.ingest.isolation import EXTRACTION_TIMEOUT_S
from rag_worker.ingest.paths import AllowedRoots, document_name, read_file
from rag_worker.ingest.urls import UrlPolicy, fetch_url
from rag_worker.operations.indexing import delete_version, enqueue_document
from rag_worker.operations.jobs import Job, JobItem, JobStore
from rag_worker.storage.catalog import (
    GENERIC_INDEXING_ERROR,
    TERMINAL_STATES,
    SourceDocument,
    doc_id_for,
    name_from_file_path,
    public_error,
    state_of,
)

if TYPE_CHECKING:
    from rag_worker.context import WorkerRuntime
    from rag_worker.storage.engine import Spawn, Workspace

log = logging.getLogger("rag_worker.operations.batches")

FOLLOW_POLL_S = 0.5
SAVE_EVERY_S = 1.0


@dataclass
class _Running:
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


class BatchRunner:
    """The worker's running jobs."""

    def __init__(self, state: WorkerRuntime, spawn: Spawn) -> None:
        self._state = state
        self._spawn = spawn
        self._running: dict[str, _Running] = {}

    def store_for(self, workspace: str) -> JobStore:
        return JobStore(self._state.engines.workspace_dir(workspace))

    def start(self, job: Job) -> None:
        running = _Running(job, self.store_for(job.workspace))
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

    async def wait(self, job_id: str, seconds: float, ctx: RequestContext) -> None:
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
                await ctx.progress(done, total, f"{done} of {total} item(s) done")
                with anyio.move_on_after(min(FOLLOW_POLL_S, max(deadline - time.monotonic(), 0.01))):
                    await running.done.wait()
        except anyio.get_cancelled_exc_class():
            running.cancel_requested = True
            raise

    async def resume_all(self) -> None:
        """Resume the jobs a previous worker left unfinished (called once at start-up)."""
        root = Path(self._state.settings.data_dir)
        for directory in sorted(root.glob("*/batches")):
            workspace = directory.parent.name
            for job in JobStore(directory.parent).unfinished():
                if job.id in self._running or job.workspace != workspace:
                    continue
                log.info("resuming %s in workspace %s", job.id, workspace)
                running = _Running(job, JobStore(directory.parent))
                self._running[job.id] = running
                self._spawn(lambda running=running: self._run(running))  # type: ignore[misc]

    async def _run(self, running: _Running) -> None:
        job = running.job
        ctx = RequestContext(self._state, f"job-{job.id}", workspace=job.workspace, correlation_id=job.id[-8:])
        try:
            try:
                ws = await self._state.engines.get(job.workspace)
            except RagError as exc:
                if exc.code != ErrorCode.WORKSPACE_BUSY:
                    raise
                log.warning("batch %s waits: workspace %s is owned by another process", job.id, job.workspace)
                return  # stays unfinished: the process that owns the workspace next resumes it
            job.status = "processing"
            running.save(force=True)
            await self._prepare(ctx, ws, running)
            await self._follow(ws, running)
            if job.folder is not None and job.options.get("remove_missing") and not running.cancel_requested:
                await self._remove_missing(ws, running)
            job.status = _final_status(running)
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

    async def _prepare(self, ctx: RequestContext, ws: Workspace, running: _Running) -> None:
        job = running.job
        limiter = anyio.CapacityLimiter(int(job.options.get("max_concurrent") or 3))

        async def prepare_one(item: JobItem) -> None:
            async with limiter:
                if running.cancel_requested or running.stop_reason:
                    item.status = "cancelled" if running.cancel_requested else "skipped"
                    item.error_message = running.stop_reason if not running.cancel_requested else None
                    return
                started = time.perf_counter()
                try:
                    await self._prepare_item(ctx, ws, job, item)
                except RagError as exc:
                    item.fail(str(exc.code), exc.message)
                except Exception:
                    log.exception("batch %s item %d failed", job.id, item.index)
                    item.fail(str(ErrorCode.INTERNAL_ERROR), "An internal error occurred; see the server log.")
                item.processing_time_s = round(time.perf_counter() - started, 3)
                if item.status == "failed" and job.options.get("stop_on_error"):
                    running.stop_reason = f"stopped after item {item.index} failed (stop_on_error)"
                running.save()

        async with anyio.create_task_group() as tg:
            for item in job.items:
                if item.status == "pending":
                    tg.start_soon(prepare_one, item)

    async def _prepare_item(self, ctx: RequestContext, ws: Workspace, job: Job, item: JobItem) -> None:
        source = await load_source(ctx, ws, item, job.options, job.roots)
        if source is None:
            return  # unchanged since it was indexed
        queued = await enqueue_document(ctx, ws, source)
        item.document_id, item.action = queued.doc_id, queued.action
        existing = queued.existing_row
        if existing is not None and state_of(existing.get("status")) in TERMINAL_STATES:
            item.status = "unchanged" if job.kind == "folder" else "processed"
            return
        # New, or already queued (by this job before a restart, or by another call): follow it.
        item.status = "queued"
        if item.item_type == "text":
            item.content = None  # LightRAG holds it now; keep the job file small
        self._state.engines.start_processing(ws)

    async def _follow(self, ws: Workspace, running: _Running) -> None:
        """Poll LightRAG until every queued document is processed or failed."""
        job = running.job
        while True:
            queued = [item for item in job.items if item.status == "queued" and item.document_id]
            if not queued:
                return
            for item in queued:
                row = await ws.rag.doc_status.get_by_id(item.document_id)
                state = state_of((row or {}).get("status"))
                if row is None:
                    item.fail(str(ErrorCode.DOCUMENT_NOT_FOUND), "The document disappeared while indexing (deleted?).")
                elif state == "processed":
                    item.status = "processed"
                elif state == "failed":
                    item.fail(str(ErrorCode.PROCESSING_FAILED), public_error(row.get("error_msg")) or GENERIC_INDEXING_ERROR)
                    if job.options.get("stop_on_error") and not running.stop_reason:
                        running.stop_reason = f"stopped after item {item.index} failed (stop_on_error)"
            running.save()
            if running.cancel_requested:
                return  # what LightRAG holds finishes on its own; the job stops following it
            await anyio.sleep(FOLLOW_POLL_S)

    async def _remove_missing(self, ws: Workspace, running: _Running) -> None:
        """Delete the folder's documents whose files are gone (never anything outside it)."""
        job = running.job
        assert job.folder is not None
        prefix = str(job.folder["prefix"]).rstrip("/") + "/"
        seen = {item.name for item in job.items if item.name}
        seen.update(str(name) for name in job.folder.get("present", []))
        removed: list[str] = []
        rows = await _all_status_rows(ws)
        for doc_id, path in rows:
            if not path.startswith(prefix) or path in seen:
                continue
            record = await ws.catalog.get(doc_id) or {}
            if record.get("origin") != "path":
                continue
            await delete_version(ws, doc_id)
            removed.append(path)
        job.folder["removed"] = removed[:1000]
        job.folder["removed_count"] = len(removed)


async def load_source(
    ctx: RequestContext, ws: Workspace, item: JobItem, options: dict[str, Any], client_roots: list[str]
) -> SourceDocument | None:
    """The document an item stands for, read, fetched and extracted; None when its bytes are unchanged."""
    settings = ctx.state.settings
    max_bytes = int(float(options.get("max_file_mb") or settings.max_file_mb) * BYTES_PER_MB)
    metadata = validate_metadata(item.metadata)
    content = item.content or ""
    if item.item_type == "text":
        return text_source(content, item.title, metadata, options.get("processing_options"))
    if item.item_type == "file":
        roots = AllowedRoots.from_sources(settings.allowed_dirs, client_roots)
        real, root = roots.resolve(content)
        if real.is_dir():
            raise RagError(ErrorCode.INVALID_PARAMETER, "A file item must name a file, not a folder.")
        item.name = document_name(real, root)
        data = await ctx.run_cpu(read_file, real, max_bytes)
        origin, filename, declared = "path", real.name, None
    elif item.item_type == "url":
        page = await fetch_url(content, UrlPolicy.from_settings(settings, max_bytes))
        item.name = page.document_name
        data, origin, filename, declared = page.data, "url", page.filename, page.mime_type
    else:
        raise RagError(ErrorCode.INVALID_PARAMETER, f"Unknown item_type {item.item_type!r}.")
    digest = hashlib.sha256(data).hexdigest()
    if await _unchanged(ws, item, digest):
        return None
    fmt, extracted = await ctx.run_cpu(_detect_and_extract, data, filename, declared)
    processing = options.get("processing_options") or {}
    return SourceDocument.from_extracted(
        item.name,
        extracted,
        mime_type=declared or _canonical_mime(fmt),
        size_bytes=len(data),
        title=item.title or extracted.title,
        metadata=metadata,
        chunk_size=processing.get("chunk_size"),
        chunk_overlap=processing.get("chunk_overlap"),
        extract_entities=bool(processing.get("enable_entity_extraction", True)),
        origin=origin,
        source_sha256=digest,
    )


def text_source(
    text: str, title: str | None, metadata: dict[str, Any] | None, options: dict[str, Any] | None
) -> SourceDocument:
    """A text item or `lightrag_insert_text`: named by its title (or its hash)."""
    from rag_worker.ingest import sanitize_filename
    from rag_worker.ingest.normalize import normalize_text

    if not text.strip():
        raise RagError(ErrorCode.INVALID_PARAMETER, "text is empty or only whitespace.")
    title = (title or "").strip()
    if title:
        name = sanitize_filename(title if "." in title[-6:] else f"{title}.txt")
    else:  # named by the text as sent, so the same text keeps its name
        name = f"text-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    options = options or {}
    return SourceDocument(
        name=name,
        text=normalize_text(text),  # the same normalisation every extracted document gets
        mime_type="text/plain",
        size_bytes=len(text.encode()),
        title=title or None,
        metadata=metadata,
        chunk_size=options.get("chunk_size"),
        chunk_overlap=options.get("chunk_overlap"),
        extract_entities=bool(options.get("enable_entity_extraction", True)),
        origin="text",
    )


async def _unchanged(ws: Workspace, item: JobItem, digest: str) -> bool:
    """True when the document of this name was indexed from these very bytes (and did not fail)."""
    assert item.name is not None
    doc_id = doc_id_for(item.name)
    record = await ws.catalog.get(doc_id)
    if not record or record.get("source_sha256") != digest:
        return False
    row = await ws.rag.doc_status.get_by_id(doc_id)
    if row is None or state_of(row.get("status")) == "failed":
        return False
    item.document_id, item.action, item.status = doc_id, "unchanged", "unchanged"
    return True


async def _all_status_rows(ws: Workspace) -> list[tuple[str, str]]:
    from lightrag.base import DocStatus

    rows = await ws.rag.doc_status.get_docs_by_statuses(list(DocStatus))
    return [(doc_id, name_from_file_path(str(getattr(row, "file_path", "") or ""))) for doc_id, row in rows.items()]


def _detect_and_extract(data: bytes, filename: str, declared: str | None) -> tuple[Any, Any]:
    fmt = detect_format(data, filename, declared)
    return fmt, extract_isolated(data, fmt, filename=filename, timeout=EXTRACTION_TIMEOUT_S)


def _canonical_mime(fmt: Any) -> str:
    from rag_worker.ingest import FORMATS

    return FORMATS[fmt].canonical_mime


def _final_status(running: _Running) -> str:
    if running.cancel_requested:
        return "cancelled"
    items = running.job.items
    if running.stop_reason or (items and all(item.status == "failed" for item in items)):
        return "failed"
    return "completed"
