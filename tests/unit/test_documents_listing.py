"""Filtering, sorting, paging and statistics of lightrag_list_documents, on plain rows
(the listing's CPU part; the integration test runs it through the server)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from protocol import ErrorCode, RagError
from protocol.methods.documents import LIST_DOCUMENTS
from rag_worker.operations.listing import (
    ListRequest,
    build_views,
    listing_result,
    parse_instant,
    parse_list_request,
    select_views,
)


def row(status: str, created: str, updated: str | None = None, *, path: str, chunks: int = 1, **extra: Any) -> dict:
    return {
        "status": status,
        "created_at": created,
        "updated_at": updated or created,
        "file_path": path,
        "chunks_count": chunks,
        **extra,
    }


ROWS = {
    "doc-a": row("processed", "2025-01-10T10:00:00+00:00", "2025-01-10T10:00:05+00:00", path="alpha.md", chunks=3),
    "doc-b": row("failed", "2025-01-20T09:00:00+00:00", "2025-01-20T09:00:01+00:00", path="Beta.pdf", error_msg="NanoVectorDBStorage[ws_chunks] index flush failed: [Errno 28] No space left on device"),
    "doc-c": row("pending", "2025-02-01T00:00:00+00:00", path="gamma.txt", chunks=0),
    "doc-d": row("processed", "2025-01-31T23:59:59+00:00", "2025-02-01T00:00:30+00:00", path="delta", chunks=2),
}
RECORDS = {
    "doc-a": {
        "filename": "alpha.md",
        "title": "Alpha Notes",
        "mime_type": "text/markdown",
        "size_bytes": 300,
        "metadata": {"tags": ["Finance", "q1"], "author": "Ann"},
    },
    "doc-b": {
        "filename": "Beta.pdf",
        "mime_type": "application/pdf",
        "size_bytes": 9000,
        "metadata": {"source": "intranet"},
    },
    "doc-c": {"filename": "gamma.txt", "mime_type": "text/plain", "size_bytes": 50},
}  # doc-d has no record of ours (inserted some other way): LightRAG's row is enough


def parsed(args: dict[str, Any]) -> ListRequest:
    """The listing request for arguments as the worker gets them (schema defaults filled in)."""
    return parse_list_request(LIST_DOCUMENTS.with_defaults(args))


def ids(**args: Any) -> list[str]:
    return [view["id"] for view in select_views(build_views(ROWS, RECORDS), parsed(args)).page]


def test_default_order_is_newest_upload_first() -> None:
    assert ids() == ["doc-c", "doc-d", "doc-b", "doc-a"]
    assert ids(sort_order="asc") == ["doc-a", "doc-b", "doc-d", "doc-c"]


@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        ("title", ["doc-a", "doc-b", "doc-d", "doc-c"]),  # Alpha Notes, Beta.pdf, delta, gamma.txt (case-insensitive)
        ("filename", ["doc-a", "doc-b", "doc-d", "doc-c"]),
        ("status", ["doc-c", "doc-a", "doc-d", "doc-b"]),  # pending, processed, processed, failed (pipeline order)
        ("size", ["doc-c", "doc-a", "doc-b", "doc-d"]),  # doc-d's size is unknown: last
        ("processing_time", ["doc-b", "doc-a", "doc-d", "doc-c"]),  # 1 s, 5 s, 31 s, pending has none: last
        ("updated_date", ["doc-a", "doc-b", "doc-c", "doc-d"]),
    ],
)
def test_each_sort_key_ascending(sort_by: str, expected: list[str]) -> None:
    assert ids(sort_by=sort_by, sort_order="asc") == expected


def test_unknown_values_stay_last_when_sorting_descending() -> None:
    assert ids(sort_by="processing_time", sort_order="desc") == ["doc-d", "doc-a", "doc-b", "doc-c"]


def test_status_filter() -> None:
    assert ids(status_filter="processed", sort_order="asc") == ["doc-a", "doc-d"]
    assert ids(status_filter="analyzing") == []
    assert ids(status_filter="all") == ids()


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("finance", ["doc-a"]),
        ("ALPHA NOTES", ["doc-a"]),
        ("INTRANET", ["doc-b"]),
        ("beta", ["doc-b"]),
        ("doc-d", ["doc-d"]),
        ("nothing-like-this", []),
    ],
)
def test_search_covers_names_titles_ids_and_metadata_values(needle: str, expected: list[str]) -> None:
    assert ids(search_query=needle) == expected


def test_a_date_alone_as_end_includes_that_whole_day() -> None:
    january = {"start_date": "2025-01-01", "end_date": "2025-01-31"}
    assert ids(date_range=january, sort_order="asc") == ["doc-a", "doc-b", "doc-d"]
    assert ids(date_range={"start_date": "2025-02-01T00:00:00Z"}) == ["doc-c"]
    assert ids(date_range={"end_date": "2025-01-10T10:00:00Z"}) == ["doc-a"]  # an exact end is inclusive


def test_dates_without_offset_are_utc_and_offsets_are_honoured() -> None:
    assert parse_instant("2025-01-10T10:00:00", "x", end=False) == datetime(2025, 1, 10, 10, tzinfo=UTC)
    assert parse_instant("2025-01-10T12:00:00+02:00", "x", end=False) == datetime(2025, 1, 10, 10, tzinfo=UTC)
    assert parse_instant("", "x", end=False) is None


@pytest.mark.parametrize(
    ("date_range", "field"),
    [
        ({"start_date": "yesterday"}, "date_range.start_date"),
        ({"end_date": "2025-13-01"}, "date_range.end_date"),
        ({"start_date": "2025-02-01", "end_date": "2025-01-01"}, "date_range.start_date"),
    ],
)
def test_a_bad_date_is_invalid_parameter_naming_the_field(date_range: dict[str, str], field: str) -> None:
    with pytest.raises(RagError) as error:
        parsed({"date_range": date_range})
    assert error.value.code == ErrorCode.INVALID_PARAMETER and field in error.value.message


def test_pagination_and_statistics_of_the_whole_workspace() -> None:
    listing = select_views(build_views(ROWS, RECORDS), parsed({"limit": 3, "offset": 3, "status_filter": None}))
    result = listing_result(listing)
    assert [view["id"] for view in result["documents"]] == ["doc-a"]
    assert result["pagination"] == {
        "total_documents": 4,
        "offset": 3,
        "limit": 3,
        "current_page": 2,
        "total_pages": 2,
        "has_next": False,
        "has_previous": True,
    }
    stats = result["statistics"]
    assert stats["by_status"] == {"processed": 2, "failed": 1, "pending": 1}
    assert stats["by_file_type"] == {"md": 1, "pdf": 1, "txt": 1, "unknown": 1}
    assert stats["processing_success_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert (stats["total_documents"], stats["total_chunks"]) == (4, 6)
    jsonschema.validate(result, LIST_DOCUMENTS.result_schema)


def test_a_document_summary_joins_our_record_with_lightrags_row() -> None:
    [alpha] = select_views(build_views(ROWS, RECORDS), parsed({"search_query": "alpha"})).page
    assert alpha["title"] == "Alpha Notes" and alpha["filename"] == "alpha.md"
    assert (alpha["file_type"], alpha["mime_type"], alpha["file_size"]) == ("md", "text/markdown", 300)
    assert alpha["processed_at"] == "2025-01-10T10:00:05+00:00" and alpha["processing_time_s"] == 5.0
    assert alpha["metadata"]["tags"] == ["Finance", "q1"] and alpha["chunk_count"] == 3
    [beta] = select_views(build_views(ROWS, RECORDS), parsed({"status_filter": "failed"})).page
    assert beta["error_message"].startswith("The server's disk was full") and beta["processed_at"] is None
    assert "NanoVectorDBStorage" not in beta["error_message"]  # LightRAG's internal text stays internal


def test_a_chunk_count_lightrag_does_not_know_is_null_not_minus_one() -> None:
    """LightRAG's PostgreSQL doc status stores -1 chunks until a document is chunked (and keeps it
    when indexing fails before): the listing says null, which its schema accepts."""
    rows = {"doc-e": row("failed", "2025-03-01T00:00:00+00:00", path="early.md", chunks=-1, error_msg="connection refused")}
    result = listing_result(select_views(build_views(rows, {}), parsed({})))
    assert result["documents"][0]["chunk_count"] is None
    assert result["statistics"]["total_chunks"] == 0
    jsonschema.validate(result, LIST_DOCUMENTS.result_schema)


def test_filters_that_match_nothing_and_an_empty_workspace_have_their_own_messages() -> None:
    nothing = listing_result(select_views(build_views(ROWS, RECORDS), parsed({"search_query": "zzz"})))
    assert "No document matches" in nothing["message"] and nothing["statistics"]["total_documents"] == 4
    past_end = listing_result(select_views(build_views(ROWS, RECORDS), parsed({"offset": 10})))
    assert "past the last" in past_end["message"]
    empty = listing_result(select_views(build_views({}, {}), parsed({})))
    assert "no documents yet" in empty["message"] and empty["pagination"]["total_pages"] == 0
    assert empty["statistics"]["processing_success_rate"] is None
