"""What running a batch job does: prepare items a few at a time, hand them to LightRAG, follow them.

`run_batch` runs one job in the background (`operations.job_runner.BatchRunner` keeps the
running jobs, their files and the wait of the call that started them).  Phases:

1. prepare: each pending item is read (a file inside the allowed roots), fetched (a URL,
   SSRF rules in `ingest.urls`) or taken as is (a text), extracted in an extractor process
   and queued with LightRAG — `max_concurrent` items at a time.  A file whose bytes did not
   change since it was indexed is `unchanged` without being parsed again;
2. follow: queued documents are polled until LightRAG finishes them;
3. folder runs with `remove_missing`: documents of the folder whose files are gone are
   deleted.

The job file is saved after each step, so a worker restart resumes where it stopped
(`BatchRunner.resume_all` at start-up): pending items are prepared again, queued ones followed —
LightRAG itself resumes the documents it holds.  Cancelling stops preparing new items;
documents LightRAG already holds finish indexing and stay.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from protocol.context import CallContext
from rag_worker.context import RequestContext, WorkerRuntime
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.formats import FORMATS, DocFormat
from rag_worker.ingest.metadata import validate_metadata
from rag_worker.ingest.normalize import normalize_text
from rag_worker.ingest.paths import AllowedRoots, document_name
from rag_worker.ingest.regular_files import read_file
from rag_worker.ingest.urls import UrlPolicy, fetch_url
from rag_worker.ingest.validation import BYTES_PER_MB, sanitize_filename
from rag_worker.operations.changes import announce_documents_changed
from rag_worker.operations.indexing import delete_version, enqueue_document
from rag_worker.operations.job_runner import FOLLOW_POLL_S, RunningJob
from rag_worker.operations.jobs import Job, JobItem
from rag_worker.storage.catalog import (
    GENERIC_INDEXING_ERROR,
    TERMINAL_STATES,
    SourceDocument,
    doc_id_for,
    name_from_file_path,
    public_error,
    state_of,
)
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.batches")

async def run_batch(state: WorkerRuntime, running: RunningJob) -> None:
    """Run one job to its end: prepare its items, follow them, remove a folder's missing files."""
    job = running.job
    # The job's user: its `{user}` allowed directories are the ones its file items may read.
    call = CallContext(workspace=job.workspace, correlation_id=job.id[-8:], user_id=job.user_id)
    ctx = RequestContext(state, f"job-{job.id}", call)
    try:
        ws = await state.engines.get(job.workspace)
    except RagError as exc:
        if exc.code != ErrorCode.WORKSPACE_BUSY:
            raise
        log.warning("batch %s waits: workspace %s is owned by another process", job.id, job.workspace)
        return  # stays unfinished: the process that owns the workspace next resumes it
    job.status = "processing"
    running.save(force=True)
    await _prepare(ctx, ws, running)
    await _follow(ws, running)
    if job.folder is not None and job.options.get("remove_missing") and not running.cancel_requested:
        await _remove_missing(ws, running)
        if job.folder.get("removed_count"):
            await announce_documents_changed(state.notify, ws.name)
    job.status = _final_status(running)


async def _prepare(ctx: RequestContext, ws: Workspace, running: RunningJob) -> None:
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
                await _prepare_item(ctx, ws, job, item)
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

async def _prepare_item(ctx: RequestContext, ws: Workspace, job: Job, item: JobItem) -> None:
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
    ctx.state.engines.start_processing(ws)

async def _follow(ws: Workspace, running: RunningJob) -> None:
    """Poll LightRAG until every queued document is processed or failed."""
    job = running.job
    while True:
        queued = [(item, item.document_id) for item in job.items if item.status == "queued" and item.document_id]
        if not queued:
            return
        for item, doc_id in queued:
            row = await ws.status_row(doc_id)
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

async def _remove_missing(ws: Workspace, running: RunningJob) -> None:
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
        roots = AllowedRoots.from_sources(settings.allowed_dirs, client_roots, ctx.user_id, settings.data_dir)
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
    fmt = await ctx.run_cpu(detect_format, data, filename, declared)
    extracted = await ctx.extract(data, fmt, filename)
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
    row = await ws.status_row(doc_id)
    if row is None or state_of(row.get("status")) == "failed":
        return False
    item.document_id, item.action, item.status = doc_id, "unchanged", "unchanged"
    return True


async def _all_status_rows(ws: Workspace) -> list[tuple[str, str]]:
    rows = await ws.status_rows()
    return [(doc_id, name_from_file_path(str(getattr(row, "file_path", "") or ""))) for doc_id, row in rows.items()]


def _canonical_mime(fmt: DocFormat) -> str:
    return FORMATS[fmt].canonical_mime


def _final_status(running: RunningJob) -> str:
    if running.cancel_requested:
        return "cancelled"
    items = running.job.items
    if running.stop_reason or (items and all(item.status == "failed" for item in items)):
        return "failed"
    return "completed"
