"""Our record of each document beside LightRAG's: original name, MIME type, size, upload
time, content hash, user metadata, pages and words.

LightRAG's doc-status rows keep only their own metadata keys across state changes, so the
record lives in a KV namespace of its own, created with the workspace's configured KV
storage class (JSON files by default; the same server store when one is configured — on
PostgreSQL a table of ours, see `rag_worker.storage.catalog_stores`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from config.backends import backend_of
from rag_worker.ingest.extracted import ExtractedDocument
from rag_worker.storage.catalog_stores import TABLE_STORES, PGCatalogStore

CATALOG_NAMESPACE = "mcp_documents"
TERMINAL_STATES = {"processed", "failed"}


def doc_id_for(name: str) -> str:
    """A stable document id for a document name: a new version of the same name replaces it."""
    return "doc-" + hashlib.sha256(name.encode()).hexdigest()[:32]


# LightRAG treats a document's file_path as a basename and refuses a second document with
# the same one: `a/README.md` and `b/README.md` would collide.  It gets the name with its
# folder separators replaced by a look-alike (U+2215, never in an uploaded filename).
_PATH_SEPARATOR_STAND_IN = "\u2215"


def lightrag_file_path(name: str) -> str:
    """The `file_path` LightRAG stores for a document name (unique when the name is)."""
    return name.replace("/", _PATH_SEPARATOR_STAND_IN)


def name_from_file_path(file_path: str) -> str:
    """The document name back from LightRAG's `file_path`."""
    return file_path.replace(_PATH_SEPARATOR_STAND_IN, "/")


def document_name(doc_id: str, row: dict[str, Any], record: dict[str, Any]) -> str:
    """What a document is called in answers: our record's filename, else LightRAG's file path, else its id."""
    return str(record.get("filename") or name_from_file_path(str(row.get("file_path") or "")) or doc_id)


async def status_counts(doc_status: Any) -> dict[str, int]:
    """Documents by state, every state present (storages differ: PostgreSQL omits empty ones)."""
    from lightrag.base import DocStatus  # deferred: LightRAG is imported once, off the loop (import_lightrag)

    counts = {state.value: 0 for state in DocStatus}
    for state, count in (await doc_status.get_status_counts()).items():
        counts[state_of(state)] = int(count)
    return counts


# LightRAG's error text for a failed document names storages, files and chunk ids; clients get
# what happened in words they can act on (the raw text stays in LightRAG's status row and log).
# Order matters: LightRAG prefixes a queue's errors with its name ("Embedding func: ... timeout"),
# so the embedding rules come before the generic timeout words of the LLM rule.
_RETRY = "index the document again (lightrag_insert_text / upload it again)"
_PUBLIC_ERRORS = (
    (("no space left", "errno 28", "disk quota"), f"The server's disk was full while indexing; {_RETRY} once space is freed."),
    (
        ("embedding func: worker execution timeout", "embedding func: task", "embedding func: timeout"),
        f"Computing the passages' embeddings took too long (the server was busy); {_RETRY} when it is quieter.",
    ),
    (("embedding",), f"The embedding model failed while indexing; check lightrag_health_check, then {_RETRY}."),
    (("storage", "connection refused", "could not connect to server"), None),  # see _storage_error
    # The database went away mid-operation (asyncpg's words: a connection the crash wedged, a pool
    # closed under the call, a server shutting down or starting up).
    (("another operation", "connection was closed", "pool is clos", "postmaster", "the database system is"), None),
    (
        ("llm func", "llm_model_func", "timeout", "timed out", "connection error", "apiconnectionerror", "rate limit"),
        "The LLM did not answer in time or could not be reached while extracting entities; check "
        f"lightrag_health_check (check_dependencies), then {_RETRY}.",
    ),
)
_STORAGE_ERROR = f"A storage server failed while the document was saved; check lightrag_health_check, then {_RETRY}."
_BUILTIN_TIMEOUT = (
    f"The built-in entity extractor ran out of time (the server was busy); {_RETRY} when it is quieter."
)
GENERIC_INDEXING_ERROR = "Indexing failed inside LightRAG; index the document again, and report it if it keeps failing."


def public_error(raw: Any, *, llm_configured: bool = True) -> str | None:
    """A failed document's error, as a client may see it: the real cause and a next step.

    `llm_configured` False: the "LLM" is the built-in extractor, so a timeout is named as such.
    """
    if not raw:
        return None
    text = str(raw).lower()
    for needles, message in _PUBLIC_ERRORS:
        if any(needle in text for needle in needles):
            if message is None:
                return _STORAGE_ERROR
            if not llm_configured and message.startswith("The LLM"):
                return _BUILTIN_TIMEOUT
            return message
    return GENERIC_INDEXING_ERROR


def is_storage_failure(raw: Any) -> bool:
    """A failed document's error says its storage failed or went away (not the document's fault)."""
    return bool(raw) and public_error(raw) == _STORAGE_ERROR


def state_of(status: Any) -> str:
    """LightRAG's status value ('processed', ...) from an enum or a string."""
    value = getattr(status, "value", status)
    return str(value or "unknown")


def known_count(value: Any) -> int | None:
    """A count LightRAG may not know yet: None then (its PostgreSQL doc status stores -1 until a
    document is chunked, and keeps it when indexing fails before that)."""
    return value if isinstance(value, int) and value >= 0 else None


#: A document's record keeps at most this many extraction warnings, each cut to this length.
MAX_RECORDED_WARNINGS = 20
MAX_RECORDED_WARNING = 1000


@dataclass
class SourceDocument:
    """A document ready to index: its text and everything we record about it."""

    name: str
    text: str
    mime_type: str
    size_bytes: int
    pages: int = 1
    title: str | None = None
    metadata: dict[str, Any] | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    extract_entities: bool = True
    word_count: int | None = None  # known from extraction; counted on demand otherwise
    origin: str = "upload"  # upload, text, path or url: where the document came from
    source_sha256: str | None = None  # of the original bytes (path/url): unchanged files skip extraction
    ocr_pages: list[int] = field(default_factory=list)  # pages read by OCR (scans, images)
    empty_pages: list[int] = field(default_factory=list)  # pages that gave no text at all
    #: What did not read cleanly (OCR unsure or turned, text layers replaced, files skipped in an archive).
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_extracted(cls, name: str, extracted: ExtractedDocument, **recorded: Any) -> SourceDocument:
        """A document from extracted text: its pages, title, words and OCR report, plus `recorded`."""
        recorded.setdefault("title", extracted.title)
        return cls(
            name=name,
            text=extracted.text,
            pages=extracted.pages,
            word_count=extracted.words,
            ocr_pages=list(extracted.ocr_pages),
            empty_pages=list(extracted.empty_pages),
            warnings=[warning[:MAX_RECORDED_WARNING] for warning in extracted.warnings[:MAX_RECORDED_WARNINGS]],
            **recorded,
        )

    @property
    def words(self) -> int:
        return self.word_count if self.word_count is not None else len(self.text.split())


class DocumentCatalog:
    """Per-workspace records keyed by document id.

    A new record waits in memory (`put`) until its document's batch is handed to LightRAG,
    then reaches the store with the others of the batch (`commit`: one save, not one per
    upload); until then the intake queue's file holds it (`rag_worker.storage.intake`)."""

    def __init__(self, rag: Any) -> None:
        self._kv: Any
        self._pending: dict[str, dict[str, Any]] = {}
        table_store = TABLE_STORES.get(backend_of(rag.kv_storage).catalog_store)
        if table_store is not None:  # a KV storage whose tables are fixed: ours is a table of its own
            self._kv = table_store(rag.workspace, rag.vector_storage)
        else:
            self._kv = rag.key_string_value_json_storage_cls(
                namespace=CATALOG_NAMESPACE, workspace=rag.workspace, embedding_func=rag.embedding_func
            )

    async def initialize(self) -> None:
        await self._kv.initialize()

    async def finalize(self) -> None:
        await self._kv.finalize()

    async def get(self, doc_id: str) -> dict[str, Any] | None:
        if doc_id in self._pending:
            return dict(self._pending[doc_id])
        record = await self._kv.get_by_id(doc_id)
        return dict(record) if record else None

    @property
    def table_store(self) -> PGCatalogStore | None:
        """Our table on PostgreSQL, where the records are kept there (else None: a KV namespace)."""
        return self._kv if isinstance(self._kv, PGCatalogStore) else None

    def pending_ids(self) -> list[str]:
        """Documents whose records wait in memory (not stored yet)."""
        return list(self._pending)

    async def get_many(self, doc_ids: list[str]) -> dict[str, dict[str, Any]]:
        stored = [doc_id for doc_id in doc_ids if doc_id not in self._pending]
        rows = await self._kv.get_by_ids(stored) if stored else []
        found = {doc_id: dict(row) for doc_id, row in zip(stored, rows, strict=False) if row}
        found.update((doc_id, dict(self._pending[doc_id])) for doc_id in doc_ids if doc_id in self._pending)
        return found

    def put(self, doc_id: str, record: dict[str, Any]) -> None:
        """Record a document now (reads see it at once); it is stored by `commit`."""
        self._pending[doc_id] = dict(record)

    async def commit(self, doc_ids: list[str]) -> None:
        """Store the waiting records of `doc_ids` and save them, in one write."""
        batch = {doc_id: self._pending[doc_id] for doc_id in doc_ids if doc_id in self._pending}
        if batch:
            await self._kv.upsert({doc_id: dict(record) for doc_id, record in batch.items()})
        for doc_id, record in batch.items():
            if self._pending.get(doc_id) is record:  # not put again (a new version) meanwhile
                del self._pending[doc_id]
        await self._kv.index_done_callback()

    def forget_pending(self, doc_id: str) -> None:
        """Drop the record waiting to be stored (a queued version that is dropped); a stored one stays."""
        self._pending.pop(doc_id, None)

    async def delete(self, doc_id: str) -> None:
        self._pending.pop(doc_id, None)
        await self._kv.delete([doc_id])
        await self._kv.index_done_callback()
