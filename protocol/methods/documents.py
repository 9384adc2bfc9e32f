"""Document-management methods: list and delete documents (tools), read one document (MCP resources)."""

from __future__ import annotations

from protocol.methods.ingest import DOCUMENT_ID, INGEST_TIMEOUT
from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

DOCUMENT_STATES = ["pending", "parsing", "analyzing", "processing", "processed", "failed"]
SORT_FIELDS = ["created_date", "updated_date", "title", "filename", "status", "size", "processing_time"]
MAX_LIST_LIMIT = 200
MAX_DELETE_IDS = 100

LIST_DOCUMENTS_PARAMS = obj(
    {
        "status_filter": string(enum=[*DOCUMENT_STATES, "all"]),
        "limit": integer(minimum=1, maximum=MAX_LIST_LIMIT, default=50),
        "offset": integer(maximum=10**7, default=0),
        "sort_by": string(enum=SORT_FIELDS, default="created_date"),
        "sort_order": string(enum=["asc", "desc"], default="desc"),
        "search_query": string("text in name, title, id or metadata", max_length=500),
        "date_range": obj(
            {"start_date": string(max_length=64), "end_date": string(max_length=64)},
            "upload time, ISO 8601, inclusive",
        ),
    }
)

DOCUMENT_SUMMARY = obj(
    {
        "id": string(max_length=255),
        "title": string(max_length=512),
        "filename": string(max_length=512),
        "status": string(max_length=32),
        "created_at": nullable(string(max_length=64)),
        "updated_at": nullable(string(max_length=64)),
        "processed_at": nullable(string(max_length=64)),
        "file_type": nullable(string(max_length=32)),
        "mime_type": nullable(string(max_length=255)),
        "file_size": nullable(integer(maximum=10**13)),
        "pages": nullable(integer(maximum=10**7)),
        "words": nullable(integer(maximum=10**10)),
        "chunk_count": nullable(integer(maximum=10**9)),
        "entity_count": nullable(integer(maximum=10**9)),
        "relationship_count": nullable(integer(maximum=10**9)),
        "processing_time_s": nullable(number(maximum=1e9)),
        "error_message": nullable(string(max_length=4000)),
        "metadata": open_object(),
        "track_id": nullable(string(max_length=128)),
        "content_hash": nullable(string(max_length=128)),
    },
    closed=False,
)

LIST_DOCUMENTS_RESULT = obj(
    {
        "documents": array(DOCUMENT_SUMMARY, max_items=MAX_LIST_LIMIT),
        "pagination": obj(
            {
                "total_documents": integer("Documents matching the filters.", maximum=10**9),
                "offset": integer(maximum=10**7),
                "limit": integer(maximum=MAX_LIST_LIMIT),
                "current_page": integer(maximum=10**9),
                "total_pages": integer(maximum=10**9),
                "has_next": boolean(),
                "has_previous": boolean(),
            },
            closed=False,
        ),
        "statistics": obj(
            {
                "total_documents": integer("Documents in the whole knowledge base.", maximum=10**9),
                "by_status": open_object("Documents by indexing state."),
                "by_file_type": open_object("Documents by file extension."),
                "processing_success_rate": nullable(
                    number("processed / (processed + failed); null before any document finished.", maximum=1.0)
                ),
                "total_chunks": integer(maximum=10**12),
                "total_size_bytes": integer(maximum=10**15),
            },
            "Over the whole knowledge base, regardless of filters.",
            closed=False,
        ),
        "filters": open_object("The filters that were applied."),
        "message": string(max_length=4000),
    },
    closed=False,
)

DELETE_DOCUMENTS_PARAMS = obj(
    {
        "document_ids": array(DOCUMENT_ID, min_items=1, max_items=MAX_DELETE_IDS),
        "delete_options": obj(
            {
                "cascade_delete": boolean(default=True),  # false: refuse if graph items would go
                "create_backup": boolean("JSON backup first", default=False),
                "notify_on_completion": boolean(),  # accepted for seed-002 callers, ignored
                "force_delete": boolean("also stuck documents", default=False),
            }
        ),
    },
    required=["document_ids"],
)

DELETE_FAILURE = obj(
    {
        "document_id": string(max_length=255),
        "error_code": string(max_length=64),
        "error_message": string(max_length=4000),
        "retryable": boolean(),
        "suggested_action": string(max_length=1000),
    },
    closed=False,
)

CASCADE_COUNTS = obj(
    {
        "chunks_deleted": integer(maximum=10**9),
        "entities_deleted": integer(maximum=10**9),
        "entities_rebuilt": integer(maximum=10**9),
        "relationships_deleted": integer(maximum=10**9),
        "relationships_rebuilt": integer(maximum=10**9),
    },
    closed=False,
)

DELETE_DOCUMENTS_RESULT = obj(
    {
        "deleted_documents": array(string(max_length=255), max_items=MAX_DELETE_IDS),
        "failed_deletions": array(DELETE_FAILURE, max_items=MAX_DELETE_IDS),
        "deleting_documents": array(
            string("Still being deleted when the call answered; the delete goes on.", max_length=255),
            max_items=MAX_DELETE_IDS,
        ),
        "cascade_deletions": CASCADE_COUNTS,
        "documents": array(
            open_object("One deleted document: id, filename, its cascade counts, sample entity names."),
            max_items=MAX_DELETE_IDS,
        ),
        "backup_info": nullable(
            obj(
                {
                    "backup_id": string(max_length=128),
                    "backup_location": string("Relative to the knowledge base's data folder.", max_length=512),
                    "backup_size": integer("Bytes.", maximum=10**13),
                },
                closed=False,
            )
        ),
        "processing_time": number("Seconds.", maximum=1e7),
        "message": string(max_length=8000),
    },
    closed=False,
)

READ_DOCUMENT_PARAMS = obj({"document_id": DOCUMENT_ID}, required=["document_id"])

READ_DOCUMENT_RESULT = obj(
    {
        "document": DOCUMENT_SUMMARY,
        "text": string("The document's full text as LightRAG stored it.", max_length=2**31),
        "text_chars": integer("Characters of the whole stored text.", maximum=2**31),
        "truncated": boolean("The text was cut to fit the worker pipe (LIGHTRAG_MCP_MAX_FRAME_MB)."),
    },
    closed=False,
)

# A document's text a page at a time, for clients without resources (LibreChat); a page is
# LIGHTRAG_MCP_RESULT_CHARS long, the size of a query's result.
DOCUMENT_TEXT_PARAMS = obj(
    {
        "document": string("name or id; omitted: the newest", max_length=255, min_length=1),
        "offset": integer("a page's next_offset", maximum=2**31, default=0),
    }
)

DOCUMENT_TEXT_RESULT = obj(
    {
        "document_id": string(max_length=128),
        "filename": string(max_length=512),
        "status": string(max_length=32),
        "offset": integer(maximum=2**31),
        "next_offset": nullable(integer("Where the next page starts; null at the end.", maximum=2**31)),
        "total_chars": integer(maximum=2**31),
        "outline": array(string(max_length=200), max_items=100),
        "text": string(max_length=1_000_000),
        "message": string(max_length=2000),
    },
    closed=False,
)

LIST_DOCUMENTS = MethodSpec("documents/list", LIST_DOCUMENTS_PARAMS, LIST_DOCUMENTS_RESULT)
DOCUMENT_TEXT = MethodSpec("documents/text", DOCUMENT_TEXT_PARAMS, DOCUMENT_TEXT_RESULT)
# No tool: the front serves it as `resources/read` of `lightrag://documents/{doc_id}` (mcp_front.resources).
READ_DOCUMENT = MethodSpec("documents/read", READ_DOCUMENT_PARAMS, READ_DOCUMENT_RESULT)
DELETE_DOCUMENTS = MethodSpec(
    "documents/delete", DELETE_DOCUMENTS_PARAMS, DELETE_DOCUMENTS_RESULT, mutates=True, timeout=INGEST_TIMEOUT
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (LIST_DOCUMENTS, DELETE_DOCUMENTS, READ_DOCUMENT, DOCUMENT_TEXT)
__all__ = ["LIST_DOCUMENTS", "DELETE_DOCUMENTS", "READ_DOCUMENT", "DOCUMENT_TEXT"]
