"""What LightRAG computed for a question is not computed again.

* **The question's vector.**  LightRAG embeds the question for its vector search; without a
  memory of recent question vectors, the sources' relevance scores (`operations.querying`)
  would cost a second embedding request — a second network round trip on a remote embedding
  API.  Texts LightRAG marks ``context="query"`` are remembered one by one (in mix mode it
  embeds the question with its keywords in one batch), a batch whose texts are all remembered
  is answered from memory, and `remembered_vector` reads the memory without embedding
  anything (the `EmbeddingFunc` must say `supports_asymmetric=True`, or LightRAG drops
  `context`).  Indexing batches pass straight through.  The memory is per process;
  `lightrag_clear_cache` sizes and clears it through the function's `query_cache` attribute.
* **The chunks' similarity to it.**  While a question runs inside `observing_chunk_scores`,
  its chunk store reports what LightRAG's retrieval measured there: the similarity its vector
  search returned for each chunk, and the chunk vectors LightRAG read to pick the passages of
  an entity or relation (its VECTOR chunk picking).  The sources' scores come from those
  instead of a second read of the store (NanoVectorDB scans its whole list for every read).
"""

from __future__ import annotations

import numbers
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

QUERY_CACHE_SIZE = 256

#: Vector stores whose search reports a chunk's `distance` as its cosine similarity to the
#: question (LightRAG 1.5.7: NanoVectorDB's normalized dot product).  Other stores' figures
#: differ (PostgreSQL reports none, MongoDB rescales it): their chunks are scored from vectors.
_SIMILARITY_STORES = frozenset({"NanoVectorDBStorage"})

EmbedFunc = Callable[..., Awaitable[Any]]


def remembering_queries(embed: EmbedFunc, size: int = QUERY_CACHE_SIZE) -> EmbedFunc:
    """`embed`, answering a question it embedded recently from memory (at most `size` kept)."""
    recent: OrderedDict[str, np.ndarray] = OrderedDict()

    async def embed_remembering(texts: list[str], **kwargs: Any) -> Any:
        if kwargs.get("context") != "query" or not texts:
            return await embed(texts, **kwargs)
        if all(text in recent for text in texts):
            for text in texts:
                recent.move_to_end(text)
            return np.stack([recent[text] for text in texts]).copy()
        vectors = np.asarray(await embed(texts, **kwargs))
        for text, vector in zip(texts, vectors, strict=True):
            recent[text] = vector
            recent.move_to_end(text)
        while len(recent) > size:
            recent.popitem(last=False)
        return vectors

    embed_remembering.query_cache = recent  # type: ignore[attr-defined]  # sized and cleared by lightrag_clear_cache
    return embed_remembering


def remembered_vector(embedding_func: Any, text: str) -> np.ndarray | None:
    """The vector remembered for the question `text` (None when it was not embedded recently);
    never sends a request.  `embedding_func` is LightRAG's `EmbeddingFunc` around a remembering one."""
    recent = getattr(getattr(embedding_func, "func", None), "query_cache", None)
    vector = recent.get(text) if recent is not None else None
    return None if vector is None else np.asarray(vector, dtype=np.float32)


def cosines(question: Any, vectors: dict[str, Any]) -> dict[str, float]:
    """Each vector's cosine similarity to `question` (the figure NanoVectorDB's search reports),
    in one matrix product; a zero or non-finite one gives 0.0, as `lightrag.utils.cosine_similarity`."""
    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.asarray([vectors[key] for key in ids], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(question)) or 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        values = matrix @ np.asarray(question, dtype=np.float32) / np.where(norms > 0, norms, 1.0)
    return {str(key): float(value) if np.isfinite(value) else 0.0 for key, value in zip(ids, values, strict=True)}


@dataclass
class ChunkScores:
    """What LightRAG's retrieval measured on the chunk store for one question."""

    similarity: dict[str, float] = field(default_factory=dict)  # chunk id → cosine similarity (vector search)
    vectors: dict[str, Any] = field(default_factory=dict)  # chunk id → the vector LightRAG read


_OBSERVED: ContextVar[ChunkScores | None] = ContextVar("lightrag_mcp_chunk_scores", default=None)


@contextmanager
def observing_chunk_scores() -> Iterator[ChunkScores]:
    """Collect, for the calls made inside (and the tasks they start), what the chunk store reports."""
    scores = ChunkScores()
    token = _OBSERVED.set(scores)
    try:
        yield scores
    finally:
        _OBSERVED.reset(token)


def note_similarities(similarity: dict[str, float]) -> None:
    """Record chunk similarities a store's search measured itself (`chunk_vectors.nearest`) for
    the question observing them."""
    scores = _OBSERVED.get()
    if scores is not None:
        scores.similarity.update(similarity)


def report_chunk_scores(chunks_vdb: Any) -> None:
    """Make `chunks_vdb` report its search similarities and the vectors it returns to the
    question observing them (`observing_chunk_scores`); other callers see no difference."""
    search, read = chunks_vdb.query, chunks_vdb.get_vectors_by_ids
    similarities = type(chunks_vdb).__name__ in _SIMILARITY_STORES

    async def query(*args: Any, **kwargs: Any) -> Any:
        results = await search(*args, **kwargs)
        scores = _OBSERVED.get()
        if scores is not None and similarities:
            for row in results or ():
                if row.get("id") is not None and isinstance(row.get("distance"), numbers.Real):  # numpy's too
                    scores.similarity[str(row["id"])] = float(row["distance"])
        return results

    async def get_vectors_by_ids(ids: list[str]) -> Any:
        vectors = await read(ids)
        scores = _OBSERVED.get()
        if scores is not None and vectors:
            scores.vectors.update(vectors)
        return vectors

    chunks_vdb.query = query
    chunks_vdb.get_vectors_by_ids = get_vectors_by_ids
