"""Ingestion methods: upload a file, insert text, poll indexing status."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.documents import SourceDocument, state_of
from rag_worker.indexing import describe_document, index_document
from rag_worker.ingest import (
    BYTES_PER_MB,
    FORMATS,
    DocFormat,
    ExtractedDocument,
    data_url_mime,
    decode_base64,
    detect_format,
    extract_isolated,
    normalize_mime,
    sanitize_filename,
    validate_metadata,
)

# How long one file's text extraction may run in its extractor process before it is killed.
EXTRACTION_TIMEOUT_S = 120.0


def _decode_and_extract(
    content: str, filename: str, declared: str | None, max_bytes: int
) -> tuple[DocFormat, int, ExtractedDocument, dict[str, float]]:
    """Decode and identify the upload here (cheap, bounded); parse it in an extractor process."""
    started = time.perf_counter()
    data = decode_base64(content, max_bytes)
    fmt = detect_format(data, filename, declared)
    decoded = time.perf_counter()
    extracted = extract_isolated(data, fmt, filename=filename, timeout=EXTRACTION_TIMEOUT_S)
    timings = {"decode_s": round(decoded - started, 4), "extract_s": round(time.perf_counter() - decoded, 4)}
    return fmt, len(data), extracted, timings


def _stored_mime(fmt: DocFormat, declared: str | None) -> str:
    """The declared type when it says more than the format's own (text/x-python), else the canonical one.

    Aliases clients send for want of a better type (text/plain for Markdown, application/zip
    or application/vnd.ms-excel for Office and CSV) are replaced by the canonical type.
    """
    mime = normalize_mime(declared)
    if mime and mime.startswith("text/") and mime != "text/plain" and FORMATS[fmt].is_text:
        return mime
    return FORMATS[fmt].canonical_mime


async def upload(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`upload_to_lightrag`: validate, extract text, index (SPEC §4 Ingestion)."""
    filename = sanitize_filename(args["filename"])
    metadata = validate_metadata(args.get("metadata"))
    declared = args.get("mimeType") or data_url_mime(args["content"])
    max_bytes = int(ctx.state.settings.max_file_mb * BYTES_PER_MB)
    fmt, size, extracted, timings = await ctx.run_cpu(
        _decode_and_extract, args["content"], filename, declared, max_bytes
    )
    source = SourceDocument(
        name=filename,
        text=extracted.text,
        mime_type=_stored_mime(fmt, declared),
        size_bytes=size,
        pages=extracted.pages,
        title=extracted.title,
        metadata=metadata,
        word_count=extracted.words,
    )
    result = await index_document(ctx, source)
    result["timings"] = {**timings, **result.get("timings", {})}
    if extracted.warnings:
        result["message"] += " Warnings: " + "; ".join(extracted.warnings)
    return result


async def insert_text(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_insert_text`: index text under a title (a new text under the same title replaces it)."""
    text = str(args["text"])
    if not text.strip():
        raise RagError(ErrorCode.INVALID_PARAMETER, "text is empty or only whitespace.")
    title = (args.get("title") or "").strip()
    if title:
        name = sanitize_filename(title if "." in title[-6:] else f"{title}.txt")
    else:
        name = f"text-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
    options = args.get("processing_options") or {}
    source = SourceDocument(
        name=name,
        text=text,
        mime_type="text/plain",
        size_bytes=len(text.encode()),
        title=title or None,
        metadata=validate_metadata(args.get("metadata")),
        chunk_size=options.get("chunk_size"),
        chunk_overlap=options.get("chunk_overlap"),
        extract_entities=bool(options.get("enable_entity_extraction", True)),
    )
    return await index_document(ctx, source)


async def get_status(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_status`: per-document state for a track id or ids, counts, pipeline progress."""
    from lightrag.kg.shared_storage import get_namespace_data

    ws = await ctx.state.engines.get(ctx.workspace)
    rows: dict[str, Any] = {}
    if args.get("track_id"):
        rows.update(await ws.rag.aget_docs_by_track_id(args["track_id"]))
    for doc_id in args.get("document_ids") or []:
        row = await ws.rag.doc_status.get_by_id(doc_id)
        if row is not None:
            rows[doc_id] = row
    wanted = bool(args.get("track_id") or args.get("document_ids"))
    documents = []
    for doc_id, row in rows.items():
        row = row if isinstance(row, dict) else vars(row)
        record = await ws.catalog.get(doc_id) or {}
        documents.append(await describe_document(ws, doc_id, row, record) | _times(row))
    counts = {state_of(k): int(v) for k, v in (await ws.rag.doc_status.get_status_counts()).items()}
    pipeline = dict(await get_namespace_data("pipeline_status", workspace=ws.name))
    pipeline_view = {
        key: pipeline.get(key)
        for key in ("busy", "job_name", "docs", "batchs", "cur_batch", "latest_message")
        if key in pipeline
    }
    if wanted and not documents:
        raise RagError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            "No document matches that track id or those document ids in your knowledge base.",
        )
    done = sum(1 for d in documents if d["status"] in {"processed", "failed"})
    message = (
        f"{done} of {len(documents)} document(s) finished."
        if documents
        else f"Knowledge base: {counts.get('processed', 0)} processed, {sum(counts.values())} in all."
    )
    return {"documents": documents, "counts": counts, "pipeline": pipeline_view, "message": message}


def _times(row: dict[str, Any]) -> dict[str, Any]:
    return {"created_at": row.get("created_at"), "updated_at": row.get("updated_at")}


async def insert_file(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_insert_file` (alias `lightrag_index_codebase`)."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_insert_file is not built yet.")


async def batch_process(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_batch_process`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_batch_process is not built yet.")
