"""Ingestion tool methods: upload a file, insert text, poll status."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

MAX_BASE64_CHARS = 100_000_000  # the byte limit itself is LIGHTRAG_MCP_MAX_FILE_MB, checked by the worker
MAX_TEXT_CHARS = 5_000_000

METADATA = {
    "type": "object",
    "description": (
        "Optional facts stored with the document and returned in listings and query sources, "
        "e.g. {\"tags\": [\"finance\"], \"author\": \"A. Smith\", \"source\": \"intranet\"}."
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
            "processing_options": obj(
                {
                    "chunk_size": integer("Tokens per chunk.", minimum=100, maximum=8000),
                    "chunk_overlap": integer("Tokens shared by neighbouring chunks.", minimum=0, maximum=2000),
                    "enable_entity_extraction": boolean(
                        "Build knowledge-graph entities and relations (default true); false indexes vectors only.",
                        default=True,
                    ),
                }
            ),
        },
        required=["text"],
    ),
    INGEST_RESULT,
)

GET_STATUS = MethodSpec(
    "documents/status",
    obj(
        {
            "track_id": string("A track id returned by an upload or insert.", max_length=128),
            "document_ids": array(string(max_length=128), "Document ids to look up.", max_items=100),
        }
    ),
    obj(
        {
            "documents": array(open_object(), max_items=10_000),
            "counts": open_object("Documents of the workspace by state."),
            "pipeline": open_object("The indexing pipeline: busy, current job, progress."),
            "message": string(max_length=4000),
        },
        closed=False,
    ),
)

# Schemas: filled by the path/batch work package (issue 5, items 2-3).
INSERT_FILE = MethodSpec("documents/insert_file", obj({}), open_object())
BATCH_PROCESS = MethodSpec("documents/batch", obj({}), open_object())
