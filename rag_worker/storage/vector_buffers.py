"""Where LightRAG 1.5.7's buffering vector stores keep their buffered rows and their stored ones
(used by `rag_worker.storage.vector_flush`, one mechanism for every such store).

Both stores buffer an upsert as a row object with a ``vector`` attribute (None until embedded)
that their commit embeds under the store's lock; they differ in the attribute holding the
buffer, in where the row keeps its text, and in how the stored rows are read:
- `NanoVectorDBStorage` (the JSON files): ``_pending_upserts`` {id: row}, ``row.record``; the
  stored rows are the client's in-memory data list and float32 matrix;
- `PGVectorStorage` (the embedded engine, or a PostgreSQL server): ``_pending_vector_docs``
  {id: row}, ``row.item``; the stored rows are read with one query per commit, on LightRAG's
  own table and workspace column, as its ``get_vectors_by_ids`` reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_worker.storage.chunk_vectors import as_float32, similarities

log = logging.getLogger(__name__)

#: id -> (stored content, stored vector)
Stored = dict[str, tuple[str, np.ndarray]]


@dataclass(frozen=True)
class Buffer:
    """How one vector storage class buffers upserts and reads what it stored."""

    pending: str  # the storage's attribute holding {id: buffered row}
    fields: str  # the buffered row's attribute holding LightRAG's item (``__id__``, ``content``)
    stored: Callable[[Any, list[str]], Awaitable[Stored]]
    #: A question's read of committed vectors as float32 arrays; None: the storage's own read.
    committed: Callable[[Any, list[str]], Awaitable[dict[str, np.ndarray]]] | None = None
    #: A question's cosine similarities of committed rows to its vector, the store's own way
    #: (`chunk_vectors`: kept vectors, or pgvector in the server); None: from the vectors read.
    similarities: Callable[[Any, list[str], np.ndarray], Awaitable[dict[str, float]]] | None = None

    def rows(self, storage: Any) -> dict[str, Any]:
        rows: dict[str, Any] = getattr(storage, self.pending)
        return rows

    def content(self, row: Any) -> str:
        return str(getattr(row, self.fields)["content"])

    def row_id(self, row: Any) -> str:
        return str(getattr(row, self.fields)["__id__"])


async def _nano_stored(storage: Any, ids: list[str]) -> Stored:
    """NanoVectorDB's rows of `ids`, read from its data list and the float32 matrix aligned with
    it.  Synchronous inside: no other coroutine touches the client meanwhile."""
    held = getattr(storage._client, "_NanoVectorDB__storage", None)
    if not held or not held["data"]:
        return {}
    wanted = set(ids)
    return {
        row["__id__"]: (row.get("content"), np.array(held["matrix"][position], dtype=np.float32))
        for position, row in enumerate(held["data"])
        if row.get("__id__") in wanted
    }


async def _pg_rows(storage: Any, ids: list[str], columns: str) -> list[Any]:
    """LightRAG's rows of `ids` in its own table and workspace, in one query."""
    sql = f"SELECT {columns} FROM {storage.table_name} WHERE workspace=$1 AND id = ANY($2)"
    return list(await storage.db.query(sql, [storage.workspace, ids], multirows=True) or [])


async def _pg_stored(storage: Any, ids: list[str]) -> Stored:
    """PostgreSQL's rows of `ids`.  A failed read only means embedding them again (the commit
    that follows reports the server's trouble itself)."""
    try:
        rows = await _pg_rows(storage, ids, "id, content, content_vector")
    except Exception as error:  # noqa: BLE001 - any failure falls back to embedding
        log.warning("%s: stored vectors not read (%s); embedding the rows", storage.namespace, type(error).__name__)
        return {}
    return {
        row["id"]: (row["content"], as_float32(row["content_vector"]))
        for row in rows
        if row.get("content_vector") is not None and row.get("content") is not None
    }


async def _pg_committed(storage: Any, ids: list[str]) -> dict[str, np.ndarray]:
    """A question's chunk vectors, as the float32 arrays pgvector's codec gives.  LightRAG's own
    read turns each into a list of Python floats, which its chunk picking then turns back into an
    array once per cosine: at 1,000 documents a graph-mode question read ~2,000 vectors of the
    chunks its entities name, and that conversion was most of its CPU.  Questions read the
    committed state (buffered rows are not theirs), which is what this query sees."""
    if not ids:
        return {}
    rows = await _pg_rows(storage, ids, "id, content_vector")
    return {row["id"]: as_float32(row["content_vector"]) for row in rows if row.get("content_vector") is not None}


#: By storage class name (LightRAG 1.5.7, pinned).
BUFFERS: dict[str, Buffer] = {
    "NanoVectorDBStorage": Buffer("_pending_upserts", "record", _nano_stored),
    "PGVectorStorage": Buffer("_pending_vector_docs", "item", _pg_stored, _pg_committed, similarities),
}
