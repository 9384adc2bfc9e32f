"""The ingestion rules of SPEC §4: idempotent by content, replace by name, bounded wait.

A call records the document in the workspace's intake queue (`rag_worker.storage.intake`),
which hands it to LightRAG with whatever else arrived meanwhile, and waits at most
LIGHTRAG_MCP_WAIT_SECONDS for it to be indexed; past that it answers with the track id and
how to poll.  The checks and the queueing run under the workspace's ingest lock, against
LightRAG's rows and the queue alike, so two uploads of the same content never both reach
LightRAG (which would leave a failed `dup-…` row).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.operations.limits import check_quota
from rag_worker.operations.progress import indexing_progress, still_indexing
from rag_worker.storage.catalog import (
    TERMINAL_STATES,
    SourceDocument,
    doc_id_for,
    document_name,
    known_count,
    lightrag_file_path,
    public_error,
    state_of,
)
from rag_worker.storage.intake import QueuedDocument
from rag_worker.storage.removal import remove_document
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.indexing")

POLL_SECONDS = 0.2
DELETE_WAIT_SECONDS = 30.0
STAGES = ["pending", "parsing", "analyzing", "processing", "processed"]
CLEAN_IN_THREAD_CHARS = 100_000  # shorter texts are cleaned and hashed on the loop (well under 1 ms)
TRACK_SEPARATOR = "-doc-"  # a track id ends with its document's id: `upload_<time>_<hex>-doc-<hex>`


@dataclass
class Enqueued:
    """What `enqueue_document` did: the document id, the action, our record, and when it started."""

    doc_id: str
    action: str  # indexed, replaced or already_indexed
    record: dict[str, Any]
    started: float  # when work on the file began (the reported time counts from here)
    existing_row: dict[str, Any] | None = None  # its status row when already indexed (or queued)
    queued_from: float = 0.0  # when queueing began (timings' queue_s)


async def index_document(ctx: RequestContext, source: SourceDocument, *, started: float | None = None) -> dict[str, Any]:
    """Index `source` in the caller's workspace following the ingestion rules.

    `started` (a `time.perf_counter()` value) is when the work on the file began, so the
    reported time includes reading it (OCR included); by default, now."""
    ws = await ctx.state.engines.get(ctx.workspace)
    await ctx.progress(0, len(STAGES), f"checking {source.name}")
    queued = await enqueue_document(ctx, ws, source, started=started, answer_by=ctx.deadline(ctx.state.settings.wait_seconds))
    if queued.existing_row is not None:
        return await describe_ingest(
            ws, queued.doc_id, queued.existing_row, queued.record, action=queued.action, started=queued.started
        )
    enqueued_at = time.perf_counter()
    ctx.state.engines.start_processing(ws)
    row = await _wait_for(ctx, ws, queued.doc_id, ctx.deadline(ctx.state.settings.wait_seconds))
    result = await describe_ingest(ws, queued.doc_id, row, queued.record, action=queued.action, started=queued.started)
    result["timings"] = {
        "queue_s": round(enqueued_at - queued.queued_from, 4),
        "index_wait_s": round(time.perf_counter() - enqueued_at, 4),
    }
    return result


async def enqueue_document(
    ctx: RequestContext, ws: Workspace, source: SourceDocument, *, started: float | None = None,
    answer_by: float | None = None,
) -> Enqueued:
    """Queue `source` for indexing (not processing it; `start_processing` hands it to LightRAG).

    A call passes `answer_by` (monotonic): while a delete runs in the background of the
    workspace (and holds its ingest lock) it is not waited for past then (WORKSPACE_BUSY).

    A document is its name and its bytes (for `lightrag_insert_text`: its title and text): the
    same file again is already indexed, new bytes under its name replace it, and a file of
    another name whose text matches an indexed one is still indexed, listed and deletable on
    its own (its text then starts with its name, so LightRAG does not refuse it as a duplicate).
    """
    from lightrag.utils import generate_track_id

    queued_from = time.perf_counter()
    started = queued_from if started is None else started
    if source.source_sha256 is None:
        source = replace(source, source_sha256=_text_digest(source.text))
    text, content_hash = await _clean_and_hash_off_loop(ctx, source.text)
    doc_id = doc_id_for(source.name)
    async with _ingest_turn(ws, answer_by):
        await ws.intake.settled(doc_id)  # a version on its way to LightRAG lands first
        row = await ws.status_row(doc_id)  # a new document's reads nothing (`Workspace.known`)
        previous = None  # the version this one takes the place of: "failed" (this very file's failed attempt) or "replaced"
        if row is not None:
            record = await ws.catalog.get(doc_id) or {}
            if not _same_file(record, source.source_sha256, content_hash):
                previous = "replaced"
            elif state_of(row.get("status")) != "failed":
                return Enqueued(doc_id, "already_indexed", record, started, existing_row=row, queued_from=queued_from)
            else:
                previous = "failed"
        if await _text_taken(ws, content_hash, doc_id):
            text, content_hash = await _distinct_text(ctx, ws, doc_id, source.name, text)
        await check_quota(ctx, ws, source.size_bytes, replacing=doc_id if previous else None)
        track_id = f"{generate_track_id('upload')}{TRACK_SEPARATOR}{doc_id.removeprefix('doc-')}"
        queued = _queued_document(source, doc_id, text, _catalog_record(source, content_hash, track_id))
        # A version LightRAG holds is deleted in the background (a minute at 5,000 documents), the
        # new one queued behind it: written down first, so a stopped worker finishes both.
        after_removal = previous is not None and not ws.intake.waiting(doc_id)
        with anyio.CancelScope(shield=True):  # whole or not at all
            if after_removal:
                ws.deletes.begin(doc_id)
            await ws.intake.add(queued, after_removal=after_removal)
            ws.catalog.put(doc_id, queued.record)  # no await since it was queued: both or neither
    action = "replaced" if previous == "replaced" else "indexed"
    return Enqueued(doc_id, action, queued.record, started, queued_from=queued_from)


@contextlib.asynccontextmanager
async def _ingest_turn(ws: Workspace, answer_by: float | None) -> AsyncIterator[None]:
    """The workspace's ingest lock.  A delete's run holds it for minutes in a large knowledge base
    (`operations.delete_runs`): a call then waits only until `answer_by`, and is told why."""
    if answer_by is None or not ws.deleting:
        async with ws.ingest_lock:
            yield
        return
    acquired = False
    with anyio.move_on_after(max(0.0, answer_by - time.monotonic())):
        await ws.ingest_lock.acquire()
        acquired = True
    if not acquired:
        names = ", ".join(f"'{name}'" for name in list(ws.deleting.values())[:5])
        raise RagError(
            ErrorCode.WORKSPACE_BUSY,
            f"Not queued: a delete runs in this knowledge base ({names}) and uploads wait for it; it rebuilds the "
            "entities the deleted documents share, which takes minutes in a large knowledge base.",
            suggested_action="Upload again once lightrag_list_documents no longer lists them.",
            retryable=True,
        )
    try:
        yield
    finally:
        ws.ingest_lock.release()


def _queued_document(source: SourceDocument, doc_id: str, text: str, record: dict[str, Any]) -> QueuedDocument:
    """What the intake queue hands to LightRAG for `source`: the text to index and LightRAG's options."""
    return QueuedDocument(
        doc_id,
        text,
        record["content_hash"],
        lightrag_file_path(source.name),
        record["track_id"],
        record,
        process_options="" if source.extract_entities else "!",
        chunk_options=_chunk_options(source),
    )


async def track_rows(ws: Workspace, track_id: str) -> dict[str, dict[str, Any]]:
    """The status rows of the documents a track id stands for.

    Our track ids end with their document's id, which finds them without a scan (LightRAG's
    rows carry the track id of the batch they were handed over in); older ones are LightRAG's own."""
    head, separator, tail = track_id.rpartition(TRACK_SEPARATOR)
    if not separator or not head:
        rows = await ws.rag.aget_docs_by_track_id(track_id)
        return {doc_id: row if isinstance(row, dict) else vars(row) for doc_id, row in rows.items()}
    doc_id = f"doc-{tail}"
    row = await ws.status_row(doc_id)
    record = await ws.catalog.get(doc_id) or {}
    return {doc_id: row} if row is not None and record.get("track_id") == track_id else {}


def _text_digest(text: str) -> str:
    """The identity of a text without a file (`lightrag_insert_text`): SHA-256 of its UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _same_file(record: dict[str, Any], source_sha256: str | None, content_hash: str) -> bool:
    """Whether the indexed document of this name came from these very bytes.

    Records written before identity by bytes have no `source_sha256`: their text decides."""
    if record.get("source_sha256"):
        return bool(record["source_sha256"] == source_sha256)
    return bool(record.get("content_hash") == content_hash)


async def _distinct_text(ctx: RequestContext, ws: Workspace, doc_id: str, name: str, text: str) -> tuple[str, str]:
    """The text to index and its hash when another document (not this name's previous version)
    has its text: the copy starts with a line naming its file.

    LightRAG keeps one document per text: a second one becomes a failed `dup-…` row. Only then:
    other documents keep exactly their extracted text, and hashes of documents indexed earlier
    stay valid."""
    text, content_hash = await _clean_and_hash_off_loop(ctx, f"{name}\n\n{text}")
    if await _text_taken(ws, content_hash, doc_id):
        raise RagError(
            ErrorCode.PROCESSING_FAILED,
            f"The text of '{name}' matches another document's, even headed by its name.",
            suggested_action="Rename the file, or delete the other document first.",
        )
    return text, content_hash


async def _text_taken(ws: Workspace, content_hash: str, doc_id: str) -> bool:
    """Whether another document (LightRAG's or still queued) has this text."""
    if ws.intake.with_hash(content_hash, exclude_doc_id=doc_id) is not None:
        return True
    if ws.known is not None and not ws.known.may_hold_text(content_hash):
        return False
    return await ws.rag.doc_status.get_doc_by_content_hash(content_hash, exclude_doc_id=doc_id) is not None


async def _clean_and_hash_off_loop(ctx: RequestContext, text: str) -> tuple[str, str]:
    """LightRAG's own cleaning and hash (so ours match its rows); a long text off the loop (~0.2 s for 8 M chars)."""
    if len(text) <= CLEAN_IN_THREAD_CHARS:
        return _clean_and_hash(text)
    return await ctx.run_cpu(_clean_and_hash, text)


def _clean_and_hash(text: str) -> tuple[str, str]:
    from lightrag.utils import sanitize_text_for_encoding
    from lightrag.utils_pipeline import compute_text_content_hash

    cleaned = sanitize_text_for_encoding(text)
    if not cleaned.strip():
        raise RagError(ErrorCode.EXTRACTION_FAILED, "The document contains no text to index.")
    return cleaned, compute_text_content_hash(cleaned)


def _chunk_options(source: SourceDocument) -> dict[str, Any] | None:
    if source.chunk_size is None and source.chunk_overlap is None:
        return None
    fixed: dict[str, Any] = {"split_by_character": None, "split_by_character_only": False}
    if source.chunk_size is not None:
        fixed["chunk_token_size"] = source.chunk_size
    if source.chunk_overlap is not None:
        fixed["chunk_overlap_token_size"] = min(source.chunk_overlap, (source.chunk_size or 1200) // 2)
    return {"fixed_token": fixed}


def _catalog_record(source: SourceDocument, content_hash: str, track_id: str) -> dict[str, Any]:
    return {
        "filename": source.name,
        "title": source.title,
        "mime_type": source.mime_type,
        "size_bytes": source.size_bytes,
        "pages": source.pages,
        "words": source.words,
        "content_hash": content_hash,
        "uploaded_at": datetime.now(UTC).isoformat(),
        "track_id": track_id,
        "metadata": source.metadata or {},
        "origin": source.origin,
        "source_sha256": source.source_sha256,
        "ocr_pages": source.ocr_pages,
        "empty_pages": source.empty_pages,
        "warnings": source.warnings,
    }


async def delete_version(ws: Workspace, doc_id: str) -> None:
    """Remove a document's previous version (for a replacement), waiting while the pipeline is busy."""
    removed = await remove_document(ws, doc_id, deadline=time.monotonic() + DELETE_WAIT_SECONDS)
    if removed.status in {"success", "not_found"}:
        return
    if removed.status == "busy":
        raise RagError(
            ErrorCode.DELETION_FORBIDDEN,
            "The previous version of this document could not be removed while indexing runs.",
            suggested_action="Wait for indexing to finish (lightrag_get_status), then upload again.",
        )
    raise RagError(
        ErrorCode.PROCESSING_FAILED,
        "The previous version of this document could not be removed.",
        suggested_action="Retry once; if it persists, delete the document with lightrag_delete_documents first.",
        retryable=True,
    )


async def _wait_for(ctx: RequestContext, ws: Workspace, doc_id: str, deadline: float) -> dict[str, Any]:
    """Poll the document's state until it is final or the call's answer budget is spent; report progress."""
    row: dict[str, Any] = {}
    while True:
        row = await ws.status_row(doc_id) or {}
        state = state_of(row.get("status"))
        if state in STAGES:
            await ctx.progress(STAGES.index(state) + 1, len(STAGES), f"{state}")
        if state in TERMINAL_STATES or time.monotonic() >= deadline:
            return row
        await anyio.sleep(POLL_SECONDS)


async def document_counts(ws: Workspace, doc_id: str) -> tuple[int, int]:
    """Entities and relations LightRAG recorded for one processed document."""
    entities = await ws.rag.full_entities.get_by_id(doc_id)
    relations = await ws.rag.full_relations.get_by_id(doc_id)
    return (int(entities["count"]) if entities else 0, int(relations["count"]) if relations else 0)


async def describe_document(ws: Workspace, doc_id: str, row: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """A document's state and counts, from LightRAG's status row and our record."""
    state = state_of(row.get("status"))
    entities: int | None = None
    relations: int | None = None
    progress: dict[str, Any] | None = None
    if state == "processed":
        entities, relations = await document_counts(ws, doc_id)
    elif state not in TERMINAL_STATES:
        progress = await indexing_progress(ws, doc_id, row)
    return {
        "document_id": doc_id,
        "filename": document_name(doc_id, row, record),
        "status": state if state in STAGES + ["failed"] else "pending",
        "track_id": record.get("track_id") or row.get("track_id") or "",
        "words": int(record.get("words") or 0),
        "pages": int(record.get("pages") or 0),
        "chunks": known_count(row.get("chunks_count")),
        "entities": entities,
        "relations": relations,
        "size_bytes": int(record.get("size_bytes") or 0),
        "mime_type": record.get("mime_type") or "",
        "content_hash": record.get("content_hash") or row.get("content_hash") or "",
        "metadata": record.get("metadata") or {},
        "error": public_error(row.get("error_msg"), llm_configured=ws.llm_configured),
        # Scanned pages read by OCR, and pages that gave no text: what the document holds.
        "ocr_pages": list(record.get("ocr_pages") or []),
        "empty_pages": list(record.get("empty_pages") or []),
        "warnings": list(record.get("warnings") or []),
    } | ({"progress": progress} if progress else {})


async def describe_ingest(
    ws: Workspace,
    doc_id: str,
    row: dict[str, Any],
    record: dict[str, Any],
    *,
    action: str,
    started: float,
) -> dict[str, Any]:
    """The result of an ingestion call: what happened, counts, and how to follow up."""
    result = await describe_document(ws, doc_id, row, record)
    result["action"] = action
    result["processing_time_s"] = round(time.perf_counter() - started, 3)
    result["message"] = _message(result, behind_removal=doc_id in ws.intake.awaiting_removal)
    return result


def _message(result: dict[str, Any], *, behind_removal: bool = False) -> str:
    name, state, action = result["filename"], result["status"], result["action"]
    if behind_removal and state == "pending":
        return (
            f"'{name}' is queued to replace its previous version, which is being deleted first (LightRAG rebuilds "
            "what that version shares with other documents: minutes in a large knowledge base); it is then indexed "
            f"in the background. Ask again later: lightrag_get_status with track_id {result['track_id']}."
        )
    if action == "already_indexed" and state == "processed":
        return (
            f"'{name}' is already indexed with identical content (document {result['document_id']}); nothing was added."
        )
    if state == "failed":
        return f"Indexing '{name}' failed: {result['error'] or 'unknown reason'}."
    if state != "processed":
        return still_indexing(result, again=action == "already_indexed")
    verb = "Replaced the previous version of" if action == "replaced" else "Indexed"
    return (
        f"{verb} '{name}': {result['pages']} page(s), {result['words']} words, {result['chunks']} chunks, "
        f"{result['entities']} entities, {result['relations']} relations in {result['processing_time_s']:.1f}s."
    )
