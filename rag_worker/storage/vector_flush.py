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

And indexing embeds only what it must (:func:`embed_pending`): a row whose content is the
one stored under its id keeps the stored vector, identical contents are embedded once, and a
row that an overlapping commit is already embedding is waited for, not embedded twice.

LightRAG's PostgreSQL vector store (`PGVectorStorage`, the embedded engine's) buffers the same
way (`_pending_vector_docs`, embedded under its `_flush_lock` at the commit) and gets the same
treatment: the one difference, where a buffered row's content and the stored rows are read, is
a `Buffer` per storage class (`rag_worker.storage.vector_buffers`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from rag_worker.query_cache import cosines
from rag_worker.storage.chunk_vectors import checking_once
from rag_worker.storage.vector_buffers import BUFFERS, Buffer

log = logging.getLogger(__name__)

_QUESTION: ContextVar[bool] = ContextVar("lightrag_mcp_question", default=False)

#: Rows being embedded now (by object id; the row is kept alive alongside), and the future that
#: resolves when their commit has its vectors. Concurrent documents commit concurrently
#: (LightRAG's ``max_parallel_insert``) and each commit flushes every store: before this, the
#: second commit embedded the first one's rows again — 2-3x the texts of a 20-document run.
_IN_FLIGHT: dict[int, tuple[Any, asyncio.Future[None]]] = {}


@contextmanager
def reading_committed_state() -> Iterator[None]:
    """Mark the calls made inside as a question's (the context reaches every task they start);
    its chunk rankings check the kept vectors once (`chunk_vectors.checking_once`)."""
    token = _QUESTION.set(True)
    try:
        with checking_once():
            yield
    finally:
        _QUESTION.reset(token)


def embed_outside_locks(rag: Any) -> None:
    """Make each buffering vector store of `rag` embed outside its lock, and questions read committed rows."""
    for storage in (rag.chunks_vdb, rag.entities_vdb, rag.relationships_vdb):
        buffer = BUFFERS.get(type(storage).__name__)
        if buffer is None or not hasattr(storage, buffer.pending):
            continue
        storage.index_done_callback = _embedding_first(storage, buffer, storage.index_done_callback)
        storage.get_vectors_by_ids = _vectors_without_waiting(storage, buffer, storage.get_vectors_by_ids)


#: Rounds of embedding before a commit takes the lock: rows another document's merge buffers
#: while one round embeds (a relation merged again) get a round of their own, not the lock.
_COMMIT_ROUNDS = 3


def _embedding_first(storage: Any, buffer: Buffer, commit: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def index_done_callback() -> Any:
        tried: set[int] = set()  # a row a round could not embed is left to the commit, not retried
        for _ in range(_COMMIT_ROUNDS):
            rows = buffer.rows(storage).values()
            new = [id(row) for row in rows if row.vector is None and id(row) not in tried]
            if not new:
                break
            tried.update(new)
            await embed_pending(storage)
        return await commit()

    return index_done_callback


def _vectors_without_waiting(
    storage: Any, buffer: Buffer, read: Callable[[list[str]], Awaitable[dict[str, Any]]]
) -> Callable[[list[str]], Awaitable[dict[str, Any]]]:
    async def get_vectors_by_ids(ids: list[str]) -> dict[str, Any]:
        if _QUESTION.get():
            if buffer.committed is not None:
                return await buffer.committed(storage, ids)
            pending = buffer.rows(storage)
            ids = [row_id for row_id in ids if not _unembedded(pending.get(row_id))]
        else:
            await embed_pending(storage, ids)
        return await read(ids)

    return get_vectors_by_ids


async def chunk_similarities(storage: Any, ids: list[str], question: np.ndarray) -> dict[str, float]:
    """Each of `ids`' cosine similarity to `question` (a question's committed rows): by the
    store's own way where it has one (`Buffer.similarities`: kept vectors or pgvector), else from
    the vectors it returns, in one matrix product.  Rows without a vector are left out."""
    buffer = BUFFERS.get(type(storage).__name__)
    if _QUESTION.get() and buffer is not None and buffer.similarities is not None:
        return await buffer.similarities(storage, ids, question)
    return cosines(question, await storage.get_vectors_by_ids(ids) or {})


def _unembedded(row: Any) -> bool:
    return row is not None and row.vector is None


async def embed_pending(storage: Any, only: Iterable[str] | None = None) -> int:
    """Give vectors to buffered rows (all, or those of `only`) that have none yet, outside any lock.

    Returns how many texts went to the model. A row whose content is the content the store
    already holds under its id takes the stored vector; identical contents are embedded
    once; a row another commit is embedding right now is waited for, not embedded again.
    """
    buffer = BUFFERS[type(storage).__name__]
    # A snapshot taken without awaiting: upserts run on this same event loop.
    pending = buffer.rows(storage)
    rows = list(pending.values()) if only is None else [pending[i] for i in only if i in pending]
    waiting = [row for row in rows if row.vector is None]
    if not waiting:
        return 0
    others = {id(_IN_FLIGHT[id(row)][1]): _IN_FLIGHT[id(row)][1] for row in waiting if id(row) in _IN_FLIGHT}
    mine = [row for row in waiting if id(row) not in _IN_FLIGHT]
    embedded = 0
    if mine:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for row in mine:
            _IN_FLIGHT[id(row)] = (row, done)
        try:
            embedded = await _give_vectors(storage, buffer, mine)
        finally:
            for row in mine:
                _IN_FLIGHT.pop(id(row), None)
            done.set_result(None)
    if others:
        # asyncio.wait, not gather: cancelling this commit must not cancel another's work.
        await asyncio.wait(others.values())
    return embedded


async def _give_vectors(storage: Any, buffer: Buffer, rows: list[Any]) -> int:
    reused = await _reuse_stored_vectors(storage, buffer, rows)
    by_content: dict[str, list[Any]] = {}
    for row in rows:
        if row.vector is None:
            by_content.setdefault(buffer.content(row), []).append(row)
    if reused:
        log.debug("%s: %d unchanged rows keep their stored vector", storage.namespace, reused)
    if not by_content:
        return 0
    contents = list(by_content)
    size = max(1, int(getattr(storage, "_max_batch_size", 64)))
    batches = [contents[start : start + size] for start in range(0, len(contents), size)]
    vectors = np.concatenate(
        await asyncio.gather(*(storage.embedding_func(batch, context="document") for batch in batches))
    )
    if len(vectors) != len(contents):  # LightRAG's flush embeds them itself then
        log.warning("%s: %d vectors for %d texts; left to the commit", storage.namespace, len(vectors), len(contents))
        return 0
    for content, vector in zip(contents, vectors, strict=True):
        for row in by_content[content]:
            if row.vector is None:
                row.vector = vector
    return len(contents)


async def _reuse_stored_vectors(storage: Any, buffer: Buffer, rows: list[Any]) -> int:
    """Give each row whose content equals the stored row's (same id) the stored vector.

    LightRAG 1.5.7 upserts an entity's or a relation's row (content = name + description)
    every time a document merges into it, and its vector stores keep no memory of what they
    embedded: an unchanged description was embedded again at every commit. The stored
    vector is the one the same model computed for the same text (the workspace's model
    marker refuses another model). A row upserted again while the stored rows are read is a
    new buffered row: it is embedded on its own, the old one's vector is never written.
    """
    wanted = {buffer.row_id(row): row for row in rows}
    stored = await buffer.stored(storage, list(wanted))
    reused = 0
    for row_id, (content, vector) in stored.items():
        row = wanted.get(row_id)
        if row is not None and row.vector is None and content == buffer.content(row):
            row.vector = vector
            reused += 1
    return reused
