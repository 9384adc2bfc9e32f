"""Ingestion tool methods: upload a file, insert text, poll status."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

MAX_BASE64_CHARS = 100_000_000  # the byte limit itself is LIGHTRAG_MCP_MAX_FILE_MB, checked by the worker
MAX_TEXT_CHARS = 5_000_000
INGEST_TIMEOUT = 600.0  # seconds the front waits for an ingestion (or a large export or delete)
# Every argument naming a document takes its id or its name (the worker's `Workspace.find_document`).
DOCUMENT_ID = string("id or file name", max_length=255, min_length=1)



#: What an upload may be, in the words of its tool description: each of the worker's formats
#: names one of these as its `family` (rag_worker.ingest.formats; a test checks both ways).
UPLOAD_FAMILIES = (
    "PDF or scan", "image", "Office/OpenDocument", "EPUB", "RTF", "HTML", "Markdown", "text", "code",
    "e-mail", "ZIP",
)


def upload_formats_text() -> str:
    """'PDF or scan, image, …, code': the families an upload may be, for the tool description."""
    return ", ".join(UPLOAD_FAMILIES)


METADATA = {
    "type": "object",
    "maxProperties": 32,
    # Key characters are checked by the worker (rag_worker.ingest.metadata), with an error naming the key.
    "propertyNames": {"maxLength": 64},
    # One schema with a list of types, not anyOf: LibreChat's JSON Schema → Zod conversion loses the
    # type of an anyOf under additionalProperties (and the list costs fewer characters per turn).
    "additionalProperties": {
        "type": ["string", "number", "boolean", "array"],
        "maxLength": 2000,
        "maximum": 10**15,
        "minimum": -(10**15),
        "maxItems": 50,
        "items": {"type": "string", "maxLength": 200},
    },
}

PROCESSING_OPTIONS = obj(
    {
        "chunk_size": integer(minimum=100, maximum=8000),
        "chunk_overlap": integer(minimum=0, maximum=2000),
        "enable_entity_extraction": boolean(default=True),
    }
)

DOCUMENT_STATE = string(enum=["pending", "parsing", "analyzing", "processing", "processed", "failed"])

INGEST_RESULT = obj(
    {
        "document_id": string(max_length=128),
        "filename": string(max_length=512),
        "action": string(enum=["indexed", "already_indexed", "replaced"]),
        "status": DOCUMENT_STATE,
        "track_id": string(max_length=128),
        "words": integer(maximum=10**9),
        "pages": integer(maximum=10**6),
        "chunks": nullable(integer(maximum=10**9)),
        "entities": nullable(integer(maximum=10**9)),
        "relations": nullable(integer(maximum=10**9)),
        "processing_time_s": number(maximum=1e7),
        "size_bytes": integer(maximum=10**12),
        "mime_type": string(max_length=255),
        "content_hash": string(max_length=128),
        "metadata": open_object(),
        "error": nullable(string(max_length=4000)),
        "progress": open_object("While indexing: chunks_done, chunks_total, percent, stage."),
        "ocr_pages": array(integer(maximum=10**6), "Pages read by OCR.", max_items=100_000),
        "empty_pages": array(integer(maximum=10**6), "Pages that gave no text.", max_items=100_000),
        "warnings": array(
            string(max_length=1000),
            "What did not read cleanly: pages OCR was unsure of or found turned, text layers that were not text, "
            "files inside an archive or e-mail that were skipped.",
            max_items=20,
        ),
        "message": string(max_length=4000),
        "timings": open_object("Seconds spent decoding, extracting, queueing and waiting for indexing."),
    },
    closed=False,
)

UPLOAD = MethodSpec(
    "documents/upload",
    obj(
        {
            "filename": string("e.g. report.pdf", max_length=255, min_length=1),
            "content": string("base64 bytes", max_length=MAX_BASE64_CHARS, min_length=1),
            "mimeType": string(max_length=255),
            "metadata": METADATA,
        },
        required=["filename", "content"],
    ),
    INGEST_RESULT,
    mutates=True,
    timeout=INGEST_TIMEOUT,
)

INSERT_TEXT = MethodSpec(
    "documents/insert_text",
    obj(
        {
            "text": string(max_length=MAX_TEXT_CHARS, min_length=1),
            "title": string("new text under a title replaces it", max_length=255),
            "metadata": METADATA,
            "processing_options": PROCESSING_OPTIONS,
        },
        required=["text"],
    ),
    INGEST_RESULT,
    mutates=True,
    timeout=INGEST_TIMEOUT,
)

GLOBS = array(string(max_length=200), 'gitignore globs, e.g. ["*.py"]', max_items=50)

JOB_RESULT = obj(
    {
        "batch_id": string("Follow or cancel the run with lightrag_get_status.", max_length=128),
        "kind": string(enum=["batch", "folder"]),
        "status": string(enum=["queued", "processing", "completed", "failed", "cancelled"]),
        "total_items": integer(maximum=10**7),
        "progress": open_object("completed, failed, skipped, remaining, percentage."),
        "results": array(open_object(), "Per-item results (failed items first when truncated).", max_items=10_000),
        "results_truncated": boolean(),
        "summary": open_object("Folder runs: added, replaced, unchanged, failed, removed, skipped files."),
        "created_at": string(max_length=64),
        "updated_at": string(max_length=64),
        "message": string(max_length=8000),
    },
    closed=False,
)

INSERT_FILE = MethodSpec(
    "documents/insert_file",
    obj(
        {
            "file_path": string("a bare name finds a LibreChat attachment", max_length=4096, min_length=1),
            "include": GLOBS,
            "exclude": {key: value for key, value in GLOBS.items() if key != "description"},
            "recursive": boolean(default=True),
            "use_gitignore": boolean(default=True),
            "remove_missing": boolean("delete vanished files' documents", default=False),
            "metadata": METADATA,
            "processing_options": PROCESSING_OPTIONS,
            "file_validation": obj(
                {
                    "max_size_mb": number(minimum=0.001, maximum=1024),
                    "allowed_extensions": array(string(max_length=20), 'e.g. ["md", "py"]', max_items=50),
                }
            ),
        },
        required=["file_path"],
    ),
    # A file answers like an upload; a folder like a batch.
    obj(
        {
            **INGEST_RESULT["properties"],
            **JOB_RESULT["properties"],
            "status": string(enum=sorted({*DOCUMENT_STATE["enum"], *JOB_RESULT["properties"]["status"]["enum"]})),
        },
        closed=False,
    ),
    mutates=True,
    timeout=INGEST_TIMEOUT,
)

BATCH_ITEM = obj(
    {
        "item_type": string(enum=["file", "text", "url"]),
        "content": string("path, text or URL", max_length=1_000_000, min_length=1),
        "title": string(max_length=255),
        "metadata": METADATA,
    },
    required=["item_type", "content"],
)

BATCH_PROCESS = MethodSpec(
    "documents/batch",
    obj(
        {
            "items": array(BATCH_ITEM, max_items=100, min_items=1),
            "batch_options": obj(
                {
                    "max_concurrent": integer(minimum=1, maximum=10, default=3),
                    "stop_on_error": boolean(default=False),
                }
            ),
            "processing_options": PROCESSING_OPTIONS,
        },
        required=["items"],
    ),
    JOB_RESULT,
    mutates=True,
    timeout=INGEST_TIMEOUT,
)

GET_STATUS = MethodSpec(
    "documents/status",
    obj(
        {
            "track_id": string(max_length=128),
            "document_ids": array(DOCUMENT_ID, max_items=100),
            "batch_id": string(max_length=128),
            "cancel": boolean("stop the batch_id", default=False),
        }
    ),
    obj(
        {
            "documents": array(open_object(), max_items=10_000),
            "counts": open_object("Documents of the workspace by state."),
            "pipeline": open_object("The indexing pipeline: busy, current job, progress."),
            "message": string(max_length=8000),
            **{key: value for key, value in JOB_RESULT["properties"].items() if key != "message"},
            # A batch's state, or the one document's state when the call names one document.
            "status": string(enum=sorted({*DOCUMENT_STATE["enum"], *JOB_RESULT["properties"]["status"]["enum"]})),
        },
        closed=False,
    ),
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (UPLOAD, INSERT_TEXT, GET_STATUS, INSERT_FILE, BATCH_PROCESS)
__all__ = ["UPLOAD", "INSERT_TEXT", "GET_STATUS", "INSERT_FILE", "BATCH_PROCESS", "INGEST_TIMEOUT", "UPLOAD_FAMILIES", "upload_formats_text"]
