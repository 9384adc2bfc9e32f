"""Questions never wait for indexing's embeddings: they read the committed state.

LightRAG 1.5.7's local vector store (`NanoVectorDBStorage`) buffers upserts and embeds them
*inside* its storage lock, at its commit (`index_done_callback`) and lazily when someone asks
for a buffered row's vector (`get_vectors_by_ids`). A question needs that lock to read the
store, and asks for chunk vectors (LightRAG's VECTOR chunk picking, our relevance scores) of
chunks the graph already names while their document is still indexing. So while a 200-page
PDF's 600 chunks were embedded, every question of that workspace waited — 33 s to over 60 s
measured — behind embedding work that was not its own.

Two changes, both on the storage instances of one LightRAG object:
- indexing computes buffered vectors *before* taking the lock (commit and lazy reads alike)
  and attaches them to the buffered rows; LightRAG then finds nothing left to embed and
  holds the lock only to write. A row upserted again meanwhile is a new buffered row with no
  vector, which LightRAG embeds as before, so what is written stays what was last upserted;
- a question (inside :func:`reading_committed_state`) never embeds another document's
  buffered rows: a chunk whose document is still being indexed has no vector for it yet.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: The storages that embed under their lock (LightRAG 1.5.7, pinned).
_LOCAL_VECTOR_STORAGES = frozenset({"NanoVectorDBStorage"})
_QUESTION: ContextVar[bool] = ContextVar("lightrag_mcp_question", default=False)


@contextmanager
def reading_committed_state() -> Iterator[None]:
    """Mark the calls made inside as a question's (the context reaches every task they start)."""
    token = _QUESTION.set(True)
    try:
        yield
    finally:
        _QUESTION.reset(token)


def embed_outside_locks(rag: Any) -> None:
    """Make each local vector store of `rag` embed outside its lock, and questions read committed rows."""
    for storage in (rag.chunks_vdb, rag.entities_vdb, rag.relationships_vdb):
        if type(storage).__name__ not in _LOCAL_VECTOR_STORAGES or not hasattr(storage, "_pending_upserts"):
            continue
        storage.index_done_callback = _embedding_first(storage, storage.index_done_callback)
        storage.get_vectors_by_ids = _vectors_without_waiting(storage, storage.get_vectors_by_ids)


def _embedding_first(storage: Any, commit: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def index_done_callback() -> Any:
        await embed_pending(storage)
        return await commit()

    return index_done_callback


def _vectors_without_waiting(
    storage: Any, read: Callable[[list[str]], Awaitable[dict[str, Any]]]
) -> Callable[[list[str]], Awaitable[dict[str, Any]]]:
    async def get_vectors_by_ids(ids: list[str]) -> dict[str, Any]:
        if _QUESTION.get():
            ids = [row_id for row_id in ids if not _unembedded(storage, row_id)]
        else:
            await embed_pending(storage, ids)
        return await read(ids)

    return get_vectors_by_ids


def _unembedded(storage: Any, row_id: str) -> bool:
    row = storage._pending_upserts.get(row_id)
    return row is not None and row.vector is None


async def embed_pending(storage: Any, only: Iterable[str] | None = None) -> int:
    """Embed buffered rows (all, or those of `only`) that have no vector yet, outside any lock."""
    # A snapshot taken without awaiting: upserts run on this same event loop.
    pending = storage._pending_upserts
    rows = list(pending.values()) if only is None else [pending[i] for i in only if i in pending]
    waiting = [row for row in rows if row.vector is None]
    if not waiting:
        return 0
    size = max(1, int(getattr(storage, "_max_batch_size", 64)))
    contents = [row.record["content"] for row in waiting]
    batches = [contents[start : start + size] for start in range(0, len(contents), size)]
    vectors = np.concatenate(
        await asyncio.gather(*(storage.embedding_func(batch, context="document") for batch in batches))
    )
    if len(vectors) != len(waiting):  # LightRAG's flush embeds them itself then
        log.warning("%s: %d vectors for %d rows; left to the commit", storage.namespace, len(vectors), len(waiting))
        return 0
    for row, vector in zip(waiting, vectors, strict=True):
        if row.vector is None:
            row.vector = vector
    return len(waiting)
