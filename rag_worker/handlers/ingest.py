"""Ingestion methods: upload a file, insert text, poll indexing status."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.formats import FORMATS, DocFormat, normalize_mime
from rag_worker.ingest.metadata import validate_metadata
from rag_worker.ingest.paths import AllowedRoots, FolderRules, document_name, walk_folder
from rag_worker.ingest.validation import BYTES_PER_MB, data_url_mime, decode_base64, sanitize_filename
from rag_worker.operations.batches import load_source, text_source
from rag_worker.operations.indexing import (
    describe_document,
    describe_ingest,
    index_document,
    track_rows,
)
from rag_worker.operations.jobs import Job, JobItem, job_view
from rag_worker.operations.progress import still_indexing
from rag_worker.storage.catalog import SourceDocument
from rag_worker.storage.workspace import Workspace

FOLDER_CONCURRENCY = 2  # files read and parsed at once in a folder run (LightRAG indexes one by one)
CANCEL_WAIT_S = 10.0


def _decode_and_detect(
    content: str, filename: str, declared: str | None, max_bytes: int
) -> tuple[DocFormat, bytes, str]:
    """Decode and identify the upload (cheap, bounded): its format, bytes and SHA-256 (with the name, its identity).

    Its parsing is `RequestContext.extract`'s, in an extractor process."""
    data = decode_base64(content, max_bytes)
    return detect_format(data, filename, declared), data, hashlib.sha256(data).hexdigest()


def _stored_mime(fmt: DocFormat, declared: str | None) -> str:
    """The declared type when it says more than the format's own (text/x-python), else the canonical one.

    Aliases clients send for want of a better type (text/plain for Markdown, application/zip
    or application/vnd.ms-excel for Office and CSV) are replaced by the canonical type.
    """
    mime = normalize_mime(declared)
    if mime and mime.startswith("text/") and mime != "text/plain" and FORMATS[fmt].is_text:
        return mime
    return FORMATS[fmt].canonical_mime


@handles(m.UPLOAD)
async def upload(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`upload_to_lightrag`: validate, extract text, index (SPEC §4 Ingestion)."""
    filename = sanitize_filename(args["filename"])
    metadata = validate_metadata(args.get("metadata"))
    declared = args.get("mimeType") or data_url_mime(args["content"])
    max_bytes = int(ctx.state.settings.max_file_mb * BYTES_PER_MB)
    started = time.perf_counter()  # the reported time includes reading the file (OCR can be most of it)
    fmt, data, digest = await ctx.run_cpu(_decode_and_detect, args["content"], filename, declared, max_bytes)
    decoded = time.perf_counter()
    extracted = await ctx.extract(data, fmt, filename)
    timings = {"decode_s": round(decoded - started, 4), "extract_s": round(time.perf_counter() - decoded, 4)}
    source = SourceDocument.from_extracted(
        filename,
        extracted,
        mime_type=_stored_mime(fmt, declared),
        size_bytes=len(data),
        metadata=metadata,
        source_sha256=digest,
    )
    result = await index_document(ctx, source, started=started)
    result["timings"] = {**timings, **result.get("timings", {})}
    if extracted.warnings:
        result["message"] += " Warnings: " + "; ".join(extracted.warnings)
    return result


@handles(m.INSERT_TEXT)
async def insert_text(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_insert_text`: index text under a title (a new text under the same title replaces it)."""
    source = text_source(
        str(args["text"]), args.get("title"), validate_metadata(args.get("metadata")), args.get("processing_options")
    )
    return await index_document(ctx, source)


@handles(m.INSERT_FILE)
async def insert_file(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_insert_file`: a file (indexed like an upload) or a folder (a background folder run)."""
    settings = ctx.state.settings
    roots = AllowedRoots.from_sources(settings.allowed_dirs, ctx.roots, ctx.user_id, settings.data_dir)
    real, root = roots.resolve(args["file_path"])
    validation = args.get("file_validation") or {}
    max_mb = min(float(validation.get("max_size_mb") or settings.max_file_mb), settings.max_file_mb)
    options = {
        "processing_options": args.get("processing_options"),
        "max_file_mb": max_mb,
        "max_concurrent": FOLDER_CONCURRENCY,
        "remove_missing": bool(args["remove_missing"]),
    }
    metadata = validate_metadata(args.get("metadata"))
    extensions = [ext.lower().lstrip(".") for ext in validation.get("allowed_extensions") or []]
    if not real.is_dir():  # a file, or something that is not: `read_file` refuses FIFOs, devices, sockets
        if extensions and real.suffix.lower().lstrip(".") not in extensions:
            raise RagError(
                ErrorCode.UNSUPPORTED_FORMAT,
                f"'{real.name}' does not have one of the allowed extensions ({', '.join(extensions)}).",
            )
        return await _index_one_file(ctx, real, metadata, options)
    rules = FolderRules(
        include=[*(args.get("include") or []), *(f"*.{ext}" for ext in extensions)],
        exclude=args.get("exclude") or [],
        use_gitignore=bool(args["use_gitignore"]),
        recursive=bool(args["recursive"]),
        max_file_bytes=int(max_mb * BYTES_PER_MB),
        max_files=settings.max_folder_files,
    )
    listing = await ctx.run_cpu(walk_folder, real, roots, rules)
    items = [
        JobItem(index, "file", str(path), metadata=metadata, name=document_name(path, roots.containing(path) or root))
        for index, path in enumerate(listing.files)
    ]
    prefix = document_name(real, root)
    job = Job.new("folder", ctx.workspace, options, list(ctx.roots), items, ctx.user_id)
    job.folder = {
        "prefix": prefix,
        "skipped": [list(entry) for entry in listing.skipped[:1000]],
        "skipped_count": len(listing.skipped),
        # Files skipped this time (too large, unsupported, ...) are not "missing": never removed for that.
        "present": [f"{prefix}/{path}" for path, _ in listing.skipped[:10_000]],
        "truncated": listing.truncated,
    }
    return await _run_job(ctx, job)


@handles(m.BATCH_PROCESS)
async def batch_process(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_batch_process`: files, texts and URLs in one background batch."""
    items = []
    for index, raw in enumerate(args["items"]):
        try:
            metadata = validate_metadata(raw.get("metadata"))
        except RagError as exc:
            raise RagError(exc.code, f"items/{index}: {exc.message}", suggested_action=exc.suggested_action) from None
        items.append(JobItem(index, raw["item_type"], raw["content"], raw.get("title"), metadata))
    options = dict(args["batch_options"])
    options["processing_options"] = args.get("processing_options")
    job = Job.new("batch", ctx.workspace, options, list(ctx.roots), items, ctx.user_id)
    return await _run_job(ctx, job)


async def _index_one_file(
    ctx: RequestContext, real: Path, metadata: dict[str, Any] | None, options: dict[str, Any]
) -> dict[str, Any]:
    ws = await ctx.state.engines.get(ctx.workspace)
    item = JobItem(0, "file", str(real), metadata=metadata)
    source = await load_source(ctx, ws, item, options, list(ctx.roots))
    if source is None and item.document_id:  # the same bytes are indexed under this name
        row = await ws.status_row(item.document_id) or {}
        record = await ws.catalog.get(item.document_id) or {}
        return await describe_ingest(
            ws, item.document_id, row, record, action="already_indexed", started=time.perf_counter()
        )
    assert source is not None
    return await index_document(ctx, source)


async def _run_job(ctx: RequestContext, job: Job) -> dict[str, Any]:
    """Start a job, wait for it within the wait window, answer with its state."""
    await ctx.state.engines.get(ctx.workspace)  # WORKSPACE_BUSY and the like fail the call, not the job
    runner = ctx.state.batches
    runner.start(job)
    await runner.wait(job.id, max(0.0, ctx.deadline(ctx.state.settings.wait_seconds) - time.monotonic()), ctx)
    return job_view(runner.load(ctx.workspace, job.id) or job)


@handles(m.GET_STATUS)
async def get_status(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_status`: a batch's progress (or cancel it), or per-document state for a track id or ids."""
    ws = await ctx.state.engines.get(ctx.workspace)
    if args.get("batch_id"):
        return await _batch_status(ctx, ws, str(args["batch_id"]), bool(args["cancel"]))
    if args["cancel"]:
        raise RagError(ErrorCode.INVALID_PARAMETER, "cancel needs the batch_id of the batch to stop.")
    rows: dict[str, Any] = {}
    if args.get("track_id"):
        rows.update(await track_rows(ws, args["track_id"]))
    for requested in args.get("document_ids") or []:  # ids or names, like every tool that takes them
        found = await ws.find_document(requested)
        if found is not None:
            rows[found[0]] = found[1]
    wanted = bool(args.get("track_id") or args.get("document_ids"))
    documents = []
    for doc_id, row in rows.items():
        record = await ws.catalog.get(doc_id) or {}
        documents.append(await describe_document(ws, doc_id, row, record) | _times(row))
    counts, pipeline_view = await _workspace_progress(ws)
    if wanted and not documents:
        raise RagError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            "No document matches that track id or those document ids or names in your knowledge base.",
            suggested_action="lightrag_list_documents shows the names and ids that exist.",
        )
    message = _status_message(documents, counts, pipeline_view)
    result = {"documents": documents, "counts": counts, "pipeline": pipeline_view, "message": message}
    if len(documents) == 1:  # the common case: "how is my upload doing?"
        result["status"] = documents[0]["status"]
    return result


def _status_message(documents: list[dict[str, Any]], counts: dict[str, int], pipeline: dict[str, Any]) -> str:
    """One line per document asked about (its state, counts or progress, and what to do), then the
    knowledge base's counts once; while indexing runs and no document was named, what it does."""
    lines = [_document_status(doc) for doc in documents]
    states = ", ".join(f"{count} {state}" for state, count in counts.items() if count)
    lines.append(f"Knowledge base: {states or 'empty'}; {sum(counts.values())} in all.")
    if not documents and pipeline.get("busy") and pipeline.get("latest_message"):
        lines.append(f"Indexing runs: {str(pipeline['latest_message'])[:200]}")
    return "\n".join(lines)


def _document_status(doc: dict[str, Any]) -> str:
    if doc["status"] == "failed":
        return f"Indexing '{doc['filename']}' failed: {doc['error'] or 'unknown reason'}."
    if doc["status"] != "processed":
        return still_indexing(doc)
    return (
        f"'{doc['filename']}' is indexed: {doc['pages']} page(s), {doc['words']} words, {doc['chunks']} chunks, "
        f"{doc['entities']} entities, {doc['relations']} relations."
    )


async def _batch_status(ctx: RequestContext, ws: Workspace, batch_id: str, cancel: bool) -> dict[str, Any]:
    runner = ctx.state.batches
    job = runner.cancel(ctx.workspace, batch_id) if cancel else runner.load(ctx.workspace, batch_id)
    if job is None:
        raise RagError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            "No batch or folder run with that batch_id in your knowledge base.",
            suggested_action="Use the batch_id returned by lightrag_batch_process or lightrag_insert_file.",
        )
    if cancel and not job.finished:
        await runner.wait(job.id, CANCEL_WAIT_S, ctx)  # items being prepared finish first
        job = runner.load(ctx.workspace, batch_id) or job
    counts, pipeline = await _workspace_progress(ws)
    return job_view(job) | {"counts": counts, "pipeline": pipeline}


async def _workspace_progress(ws: Workspace) -> tuple[dict[str, int], dict[str, Any]]:
    """Documents of the workspace by state, and LightRAG's pipeline progress."""
    from lightrag.kg.shared_storage import get_namespace_data

    counts = await ws.status_counts()
    pipeline = dict(await get_namespace_data("pipeline_status", workspace=ws.name))
    view = {
        key: pipeline.get(key)
        for key in ("busy", "job_name", "docs", "batchs", "cur_batch", "latest_message")
        if key in pipeline
    }
    return counts, view


def _times(row: dict[str, Any]) -> dict[str, Any]:
    return {"created_at": row.get("created_at"), "updated_at": row.get("updated_at")}
