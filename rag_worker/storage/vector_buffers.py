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
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
    #: A question's cosine similarities of committed rows to its vector, computed where they are
    #: stored; None: computed here from the vectors read.
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


def _float32(vector: Any) -> np.ndarray:
    # pgvector's codec (LightRAG registers it on every connection) gives a `Vector`.
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


async def _pg_stored(storage: Any, ids: list[str]) -> Stored:
    """PostgreSQL's rows of `ids`.  A failed read only means embedding them again (the commit
    that follows reports the server's trouble itself)."""
    try:
        rows = await _pg_rows(storage, ids, "id, content, content_vector")
    except Exception as error:  # noqa: BLE001 - any failure falls back to embedding
        log.warning("%s: stored vectors not read (%s); embedding the rows", storage.namespace, type(error).__name__)
        return {}
    return {
        row["id"]: (row["content"], _float32(row["content_vector"]))
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
    return {row["id"]: _float32(row["content_vector"]) for row in rows if row.get("content_vector") is not None}


async def _pg_similarities(storage: Any, ids: list[str], question: np.ndarray) -> dict[str, float]:
    """The cosine similarity of `question` to each committed row of `ids`, by pgvector in the
    server: an id and a number per row cross the socket instead of 384 floats, and no array is
    built here (at 5,000 documents a question's entities name thousands of chunks).  A zero or
    non-finite vector gives 0.0, as `lightrag.utils.cosine_similarity` does."""
    if not ids:
        return {}
    # Two arrays in one row, not a row per id: 7,146 ids took 12.5 ms of the client's CPU as
    # rows, 4.6 ms as arrays.
    sql = (
        f"SELECT array_agg(id) AS ids, array_agg(1 - (content_vector <=> $3)) AS similarities "
        f"FROM {storage.table_name} WHERE workspace=$1 AND id = ANY($2) AND content_vector IS NOT NULL"
    )
    row = await storage.db.query(sql, [storage.workspace, ids, np.asarray(question, dtype=np.float32)])
    if not row or row.get("ids") is None:  # no row matched: array_agg of nothing is NULL
        return {}
    return dict(zip(row["ids"], map(_finite, row["similarities"]), strict=True))


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


#: By storage class name (LightRAG 1.5.7, pinned).
BUFFERS: dict[str, Buffer] = {
    "NanoVectorDBStorage": Buffer("_pending_upserts", "record", _nano_stored),
    "PGVectorStorage": Buffer("_pending_vector_docs", "item", _pg_stored, _pg_committed, _pg_similarities),
}
