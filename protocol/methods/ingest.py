"""Ingestion tool methods: upload a file, insert text, poll status."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

MAX_BASE64_CHARS = 100_000_000  # the byte limit itself is LIGHTRAG_MCP_MAX_FILE_MB, checked by the worker
MAX_TEXT_CHARS = 5_000_000

METADATA = {
    "type": "object",
    "description": (
        "Optional facts stored with the document and returned in listings and query sources, "
        'e.g. {"tags": ["finance"], "author": "A. Smith", "source": "intranet"}.'
    ),
    "maxProperties": 32,
    "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,64}$"},
    "additionalProperties": {
        "anyOf": [
            {"type": "string", "maxLength": 2000},
            {"type": "number", "maximum": 1e15, "minimum": -1e15},
            {"type": "boolean"},
            {"type": "array", "maxItems": 50, "items": {"type": "string", "maxLength": 200}},
        ]
    },
}

PROCESSING_OPTIONS = obj(
    {
        "chunk_size": integer("Tokens per chunk.", minimum=100, maximum=8000),
        "chunk_overlap": integer("Tokens shared by neighbouring chunks.", minimum=0, maximum=2000),
        "enable_entity_extraction": boolean(
            "Build knowledge-graph entities and relations (default true); false indexes vectors only.",
            default=True,
        ),
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
        "message": string(max_length=4000),
        "timings": open_object("Seconds spent decoding, extracting, queueing and waiting for indexing."),
    },
    closed=False,
)

UPLOAD = MethodSpec(
    "documents/upload",
    obj(
        {
            "filename": string(
                "The document's file name with its extension, e.g. report.pdf or notes.md (no folders).",
                max_length=255,
                min_length=1,
            ),
            "content": string(
                "The file's bytes, base64-encoded (a data: URL is accepted too).",
                max_length=MAX_BASE64_CHARS,
                min_length=1,
            ),
            "mimeType": string(
                "The file's MIME type, e.g. application/pdf or text/markdown; checked against the content.",
                max_length=255,
            ),
            "metadata": METADATA,
        },
        required=["filename", "content"],
    ),
    INGEST_RESULT,
)

INSERT_TEXT = MethodSpec(
    "documents/insert_text",
    obj(
        {
            "text": string("The text to index.", max_length=MAX_TEXT_CHARS, min_length=1),
            "title": string(
                "A name for the document; inserting new text under the same title replaces it.", max_length=255
            ),
            "metadata": METADATA,
            "processing_options": PROCESSING_OPTIONS,
        },
        required=["text"],
    ),
    INGEST_RESULT,
)

GLOBS = array(
    string(max_length=200, min_length=1),
    'Glob patterns in .gitignore syntax, matched against paths inside the folder, e.g. ["*.py", "docs/**/*.md"].',
    max_items=50,
)

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
            "file_path": string(
                "A file or folder on the server's disk, absolute or relative to an allowed directory.",
                max_length=4096,
                min_length=1,
            ),
            "include": GLOBS,
            "exclude": GLOBS,
            "recursive": boolean("Folders: include sub-folders (default true).", default=True),
            "use_gitignore": boolean("Folders: skip what .gitignore files exclude (default true).", default=True),
            "remove_missing": boolean(
                "Folders: delete documents of this folder whose files no longer exist (default false).",
                default=False,
            ),
            "metadata": METADATA,
            "processing_options": PROCESSING_OPTIONS,
            "file_validation": obj(
                {
                    "max_size_mb": number(
                        "Skip files larger than this (at most the server's limit).", minimum=0.001, maximum=1024
                    ),
                    "allowed_extensions": array(
                        string(max_length=20, min_length=1),
                        'Only files with these extensions, e.g. ["md", "py"].',
                        max_items=50,
                    ),
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
)

BATCH_ITEM = obj(
    {
        "item_type": string("file (a path on the server), text, or url (http/https).", enum=["file", "text", "url"]),
        "content": string("The file path, the text itself, or the URL.", max_length=1_000_000, min_length=1),
        "title": string("A name for a text item; for files and URLs, a title to record.", max_length=255),
        "metadata": METADATA,
    },
    required=["item_type", "content"],
)

BATCH_PROCESS = MethodSpec(
    "documents/batch",
    obj(
        {
            "items": array(BATCH_ITEM, "What to index.", max_items=100, min_items=1),
            "batch_options": obj(
                {
                    "max_concurrent": integer(
                        "Items read, fetched and parsed at once (default 3).", minimum=1, maximum=10, default=3
                    ),
                    "stop_on_error": boolean(
                        "Skip the remaining items after the first failure (default false).", default=False
                    ),
                }
            ),
            "processing_options": PROCESSING_OPTIONS,
        },
        required=["items"],
    ),
    JOB_RESULT,
)

GET_STATUS = MethodSpec(
    "documents/status",
    obj(
        {
            "track_id": string("A track id returned by an upload or insert.", max_length=128),
            "document_ids": array(string(max_length=128), "Document ids to look up.", max_items=100),
            "batch_id": string(
                "A batch_id from lightrag_batch_process or a folder lightrag_insert_file.", max_length=128
            ),
            "cancel": boolean("With batch_id: stop the batch (documents already queued finish).", default=False),
        }
    ),
    obj(
        {
            "documents": array(open_object(), max_items=10_000),
            "counts": open_object("Documents of the workspace by state."),
            "pipeline": open_object("The indexing pipeline: busy, current job, progress."),
            "message": string(max_length=8000),
            **{key: value for key, value in JOB_RESULT["properties"].items() if key != "message"},
        },
        closed=False,
    ),
)
