"""`lightrag_list_documents`: LightRAG's doc-status rows joined with our catalog records,
filtered, sorted and paged in one pass, with statistics over the whole workspace.

The filters (metadata search, upload-date range, sort by title/size/processing time) need
our catalog records, which no storage can filter on, so the listing works on every document's
summary: built from every status row and record (two storage calls) in a thread, and on
PostgreSQL kept while the stored documents are unchanged (`workspace_views`).  Graph counts are
read for the documents of the requested page only.
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from protocol import ErrorCode, RagError
from protocol.methods.documents import DOCUMENT_STATES
from rag_worker.context import RequestContext
from rag_worker.storage.catalog import document_name, known_count, public_error, state_of
from rag_worker.storage.workspace import Workspace

# Pipeline order, for sort_by=status (unknown states sort last).
STATE_RANK = {state: rank for rank, state in enumerate(DOCUMENT_STATES)}


@dataclass(frozen=True)
class ListRequest:
    """The validated arguments of one listing call."""

    status: str | None = None
    limit: int = 50
    offset: int = 0
    sort_by: str = "created_date"
    descending: bool = True
    search: str | None = None
    start: datetime | None = None
    end: datetime | None = None  # exclusive

    def filters(self) -> dict[str, Any]:
        """The filters in force, for the result (so an agent sees what it asked for)."""
        applied: dict[str, Any] = {"sort_by": self.sort_by, "sort_order": "desc" if self.descending else "asc"}
        if self.status:
            applied["status_filter"] = self.status
        if self.search:
            applied["search_query"] = self.search
        if self.start or self.end:
            applied["date_range"] = {
                "start": self.start.isoformat() if self.start else None,
                "end_before": self.end.isoformat() if self.end else None,
            }
        return applied


def parse_list_request(args: dict[str, Any]) -> ListRequest:
    """Validate what the schema cannot (dates); raises INVALID_PARAMETER naming the field."""
    dates = args.get("date_range") or {}
    start = parse_instant(dates.get("start_date"), "date_range.start_date", end=False)
    end = parse_instant(dates.get("end_date"), "date_range.end_date", end=True)
    if start and end and start >= end:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            "date_range.start_date is after date_range.end_date.",
            suggested_action="Swap the two dates or widen the range, then call again.",
        )
    search = (args.get("search_query") or "").strip()
    return ListRequest(
        status=None if args.get("status_filter") in (None, "", "all") else str(args["status_filter"]),
        limit=int(args["limit"]),
        offset=int(args["offset"]),
        sort_by=str(args["sort_by"]),
        descending=args["sort_order"] != "asc",
        search=search.casefold() or None,
        start=start,
        end=end,
    )


def parse_instant(value: Any, name: str, *, end: bool) -> datetime | None:
    """An ISO 8601 date or date-time as an aware UTC datetime.

    A date alone means the start of that day, or for an end bound the start of the next
    day (the bound is exclusive), so end_date=2025-01-31 includes all of the 31st."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            instant = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return instant + timedelta(days=1) if end else instant
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"{name} is not an ISO 8601 date or date-time: {text[:64]!r}.",
            suggested_action=f"Send {name} like 2025-01-31 or 2025-01-31T08:00:00Z.",
        ) from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    instant = instant.astimezone(UTC)
    return instant + timedelta(microseconds=1) if end else instant


def _timestamp(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        instant = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def file_type_of(filename: str, mime_type: str | None) -> str | None:
    """The file's extension without the dot (lower case), else the MIME subtype."""
    extension = posixpath.splitext(filename)[1].lstrip(".").lower()
    if extension and len(extension) <= 16:
        return extension
    if mime_type and "/" in mime_type:
        return mime_type.split("/", 1)[1].split(";", 1)[0][:32] or None
    return None


def status_row(raw: Any) -> dict[str, Any]:
    """A doc-status row (LightRAG's dataclass or a dict) as a plain dict with a string status."""
    row = dict(raw) if isinstance(raw, dict) else dict(vars(raw))
    row["status"] = state_of(row.get("status"))
    return row


def document_view(doc_id: str, row: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """A document's summary from its status row and our record (graph counts come later)."""
    state = state_of(row.get("status"))
    filename = document_name(doc_id, row, record)
    mime_type = record.get("mime_type") or None
    size = record.get("size_bytes")
    if size is None:
        size = row.get("content_length")
    created, updated = row.get("created_at"), row.get("updated_at")
    processing_time = None
    if state in {"processed", "failed"}:
        began, finished = _timestamp(created), _timestamp(updated)
        if began and finished and finished >= began:
            processing_time = round((finished - began).total_seconds(), 3)
    return {
        "id": doc_id,
        "title": str(record.get("title") or filename),
        "filename": filename,
        "status": state,
        "created_at": created or record.get("uploaded_at"),
        "updated_at": updated,
        "processed_at": updated if state == "processed" else None,
        "file_type": file_type_of(filename, mime_type),
        "mime_type": mime_type,
        "file_size": int(size) if size is not None else None,
        "pages": record.get("pages"),
        "words": record.get("words"),
        "chunk_count": known_count(row.get("chunks_count")),
        "entity_count": None,
        "relationship_count": None,
        "processing_time_s": processing_time,
        "error_message": public_error(row.get("error_msg")),
        "metadata": record.get("metadata") or {},
        "track_id": record.get("track_id") or row.get("track_id") or None,
        "content_hash": record.get("content_hash") or row.get("content_hash") or None,
    }


def _metadata_text(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _metadata_text(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _metadata_text(item)]
    return [] if value is None else [str(value)]


def matches_search(view: dict[str, Any], needle: str) -> bool:
    """Case-insensitive substring over file name, title, id and metadata values (incl. tag lists)."""
    fields = [view["filename"], view["title"], view["id"], *_metadata_text(view["metadata"])]
    return any(needle in text.casefold() for text in fields)


def _in_range(view: dict[str, Any], request: ListRequest) -> bool:
    created = _timestamp(view["created_at"])
    if created is None:
        return False
    return (request.start is None or created >= request.start) and (request.end is None or created < request.end)


def _sort_key(view: dict[str, Any], sort_by: str) -> Any:
    if sort_by == "created_date":
        return _timestamp(view["created_at"])
    if sort_by == "updated_date":
        return _timestamp(view["updated_at"])
    if sort_by == "title":
        return view["title"].casefold()
    if sort_by == "filename":
        return view["filename"].casefold()
    if sort_by == "status":
        return STATE_RANK.get(view["status"], len(STATE_RANK))
    if sort_by == "size":
        return view["file_size"]
    return view["processing_time_s"]


def sort_views(views: list[dict[str, Any]], sort_by: str, descending: bool) -> list[dict[str, Any]]:
    """Sorted by `sort_by`, ties broken by id; documents without the value come last either way."""
    ordered = sorted(views, key=lambda view: view["id"])
    known = [view for view in ordered if _sort_key(view, sort_by) is not None]
    unknown = [view for view in ordered if _sort_key(view, sort_by) is None]
    known.sort(key=lambda view: _sort_key(view, sort_by), reverse=descending)
    return known + unknown


def statistics(views: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the whole workspace: by state, by file type, success rate, chunks, bytes."""
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    chunks = size = 0
    for view in views:
        by_status[view["status"]] = by_status.get(view["status"], 0) + 1
        kind = view["file_type"] or "unknown"
        by_type[kind] = by_type.get(kind, 0) + 1
        chunks += int(view["chunk_count"] or 0)
        size += int(view["file_size"] or 0)
    finished = by_status.get("processed", 0) + by_status.get("failed", 0)
    return {
        "total_documents": len(views),
        "by_status": by_status,
        "by_file_type": dict(sorted(by_type.items(), key=lambda item: (-item[1], item[0]))),
        "processing_success_rate": round(by_status.get("processed", 0) / finished, 4) if finished else None,
        "total_chunks": chunks,
        "total_size_bytes": size,
    }


@dataclass
class Listing:
    """One page of documents, how many matched, and the workspace statistics."""

    page: list[dict[str, Any]]
    total: int
    statistics: dict[str, Any]
    request: ListRequest = field(default_factory=ListRequest)


def build_views(rows: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every document's summary by id, from status rows and records (CPU only: run it in a thread)."""
    return {doc_id: document_view(doc_id, status_row(row), records.get(doc_id) or {}) for doc_id, row in rows.items()}


def select_views(views: dict[str, dict[str, Any]], request: ListRequest) -> Listing:
    """Filter, sort and page the documents in one pass (CPU only: run it in a thread).  The page
    holds copies: graph counts are added to them, never to the views a workspace keeps."""
    everything = list(views.values())
    selected = [
        view
        for view in everything
        if (request.status is None or view["status"] == request.status)
        and (request.search is None or matches_search(view, request.search))
        and (request.start is None and request.end is None or _in_range(view, request))
    ]
    ordered = sort_views(selected, request.sort_by, request.descending)
    page = [dict(view) for view in ordered[request.offset : request.offset + request.limit]]
    return Listing(page, len(selected), statistics(everything), request)


async def workspace_views(ctx: RequestContext, ws: Workspace) -> dict[str, dict[str, Any]]:
    """Every document's summary, queued ones included.  Read whole (every status row and record)
    unless the workspace kept them under the stored documents' current version (on PostgreSQL:
    one aggregate query instead of reading and decoding every row, 5-10x less at 1,000
    documents); documents queued or with a record not stored yet are read afresh on top.
    Read-only: it may be what the workspace keeps."""
    version = await ws.documents_version()
    kept = ws.listing_views
    if version is not None and kept is not None and kept[0] == version:
        stored: dict[str, dict[str, Any]] = kept[1]
    else:
        rows = await ws.stored_status_rows()
        stored = await ctx.run_cpu(build_views, rows, await ws.catalog.get_many(list(rows)) if rows else {})
        if version is not None:
            ws.listing_views = (version, stored)
    fresh = list(dict.fromkeys([doc.doc_id for doc in ws.intake.documents()] + ws.catalog.pending_ids()))
    if not fresh:
        return stored
    rows = {doc_id: row for doc_id in fresh if (row := await ws.status_row(doc_id)) is not None}
    return {**stored, **build_views(rows, await ws.catalog.get_many(list(rows)))}


async def add_graph_counts(ws: Workspace, page: list[dict[str, Any]]) -> None:
    """Entity and relation counts of the page's processed documents (two batched reads)."""
    ids = [view["id"] for view in page if view["status"] == "processed"]
    if not ids:
        return
    entities = await ws.rag.full_entities.get_by_ids(ids)
    relations = await ws.rag.full_relations.get_by_ids(ids)
    counts = {
        doc_id: (_count(entity_row), _count(relation_row))
        for doc_id, entity_row, relation_row in zip(ids, entities, relations, strict=True)
    }
    for view in page:
        if view["id"] in counts:
            view["entity_count"], view["relationship_count"] = counts[view["id"]]


def _count(row: Any) -> int:
    return int(row.get("count") or 0) if isinstance(row, dict) else 0


def listing_result(listing: Listing, deleting: list[str] | None = None) -> dict[str, Any]:
    """The tool result: documents, pagination, statistics, filters and a summary message, which
    names the documents being deleted in the background (`deleting`): they stay listed until then."""
    request = listing.request
    total_pages = math.ceil(listing.total / request.limit) if listing.total else 0
    pagination = {
        "total_documents": listing.total,
        "offset": request.offset,
        "limit": request.limit,
        "current_page": request.offset // request.limit + 1,
        "total_pages": total_pages,
        "has_next": request.offset + request.limit < listing.total,
        "has_previous": request.offset > 0,
    }
    return {
        "documents": listing.page,
        "pagination": pagination,
        "statistics": listing.statistics,
        "filters": request.filters(),
        "message": listing_message(listing) + _deleting_note(deleting or []),
    }


def quoted_names(names: list[str], shown: int = 10) -> str:
    """'a', 'b' and 3 more: the first `shown` names of a list an answer mentions."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(f"'{name}'" for name in names[:shown]) + more


def _deleting_note(names: list[str]) -> str:
    return f" Being deleted in the background, listed until that ends: {quoted_names(names)}." if names else ""


def listing_message(listing: Listing) -> str:
    stats, request = listing.statistics, listing.request
    everything = stats["total_documents"]
    if everything == 0:
        return "The knowledge base has no documents yet. Add some with upload_to_lightrag or lightrag_insert_text."
    states = ", ".join(f"{count} {state}" for state, count in sorted(stats["by_status"].items()))
    overall = f"The knowledge base holds {everything} document(s): {states}."
    filtered = listing.total != everything
    if listing.total == 0:
        return f"No document matches the filters. {overall}"
    if not listing.page:
        return (
            f"{listing.total} document(s) match, but offset {request.offset} is past the last one; "
            f"use an offset below {listing.total}. {overall}"
        )
    first, last = request.offset + 1, request.offset + len(listing.page)
    matched = f"{listing.total} matching document(s)" if filtered else f"{listing.total} document(s)"
    text = f"Showing {first}-{last} of {matched}. {overall}"
    if last < listing.total:
        text += f" Next page: offset {last}."
    return text
