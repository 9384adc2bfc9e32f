"""How LightRAG reaches the embedding model: a query lane and low-priority indexing threads.

LightRAG calls one ``EmbeddingFunc`` for both a question's text and indexing batches;
:class:`EmbeddingLanes` keeps the two apart so a question never queues behind indexing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_worker.query_cache import remembering_queries

from .models import EMBEDDING_DIM, MAX_TOKEN_SIZE, MODEL_NAME, OnnxSentenceEmbedder

if TYPE_CHECKING:
    import anyio
    from lightrag.utils import EmbeddingFunc

#: How much lower indexing's inference threads run than a question's (Linux nice value).
INDEXING_NICENESS = 10
#: Seconds the indexing lane stays idle before the heap memory its work freed goes back to the OS.
RELEASE_AFTER_IDLE_S = 2.0


def _lower_priority() -> None:
    """Run the calling thread (an indexing inference thread) at a lower CPU priority."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed: only slower to yield
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INDEXING_NICENESS)


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL("libc.so.6")


def release_freed_memory() -> None:
    """Give the heap memory freed since the last call back to the OS (glibc only; else nothing).

    glibc keeps freed memory for reuse: after indexing 10 documents the worker held ~170 MB
    it no longer used (571 MB resident, 401 MB once trimmed). Trimming costs ~40 ms for that
    much and page faults when it is needed again, so it runs once indexing pauses.
    """
    with contextlib.suppress(OSError, AttributeError):
        _libc().malloc_trim(0)


@dataclass
class _Activity:
    running: int = 0  # indexing requests in progress
    started: int = 0  # indexing requests ever started


@dataclass(frozen=True)
class EmbeddingLanes:
    """Two ways into the one model, so a question never waits behind indexing — nor shares its CPU.

    Indexing inferences run on ``parallel`` dedicated threads at a lower CPU priority (each
    inference single-threaded: inferences in parallel use the cores better than intra-op threads,
    and a question's thread is never one of them). A question's text (LightRAG passes
    ``context="query"``) takes the ``query`` lane at normal priority and runs beside them.
    Before, a question waited behind every queued batch (33-60 s measured), then, with its own
    lane, still ran 2.5-3.6x slower while indexing's two-thread inferences held both cores.
    """

    indexing: ThreadPoolExecutor
    query: anyio.CapacityLimiter
    activity: _Activity = field(default_factory=_Activity)

    @classmethod
    def create(cls, parallel: int) -> EmbeddingLanes:
        """`parallel` indexing inferences at once; one question at a time (call inside the event loop)."""
        import anyio

        pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="embed-indexing",
                                  initializer=_lower_priority)
        return cls(indexing=pool, query=anyio.CapacityLimiter(1))

    async def embed_for_indexing(self, embedder: OnnxSentenceEmbedder, texts: list[str]) -> np.ndarray:
        """Embed an indexing request on the indexing threads, one task per inference.

        Per inference, not per request: a commit sends one request per vector store, of very
        different sizes, and a request handled whole kept one core idle while the other
        worked through its inferences (a quarter of the indexing time in a 20-document run).
        """
        loop = asyncio.get_running_loop()
        self.activity.running += 1
        self.activity.started += 1
        try:
            plan = await loop.run_in_executor(self.indexing, embedder.plan, texts)
            vectors = await asyncio.gather(*(loop.run_in_executor(self.indexing, embedder.infer, batch)
                                             for batch in plan.batches))
            return plan.assemble(list(vectors))
        finally:
            self.activity.running -= 1
            if not self.activity.running:
                loop.call_later(RELEASE_AFTER_IDLE_S, self._release_if_idle, self.activity.started)

    def _release_if_idle(self, started: int) -> None:
        # Still idle, and no request came and went meanwhile: indexing has paused.
        if not self.activity.running and self.activity.started == started:
            with contextlib.suppress(RuntimeError):  # the pool is shut down
                self.indexing.submit(release_freed_memory)


def make_embedding_func(embedder: OnnxSentenceEmbedder, lanes: EmbeddingLanes) -> EmbeddingFunc:
    """Wrap *embedder* as LightRAG's ``EmbeddingFunc`` (384 dims, max_token_size 240).

    Each call runs in a worker thread and holds one token of its lane (see
    :class:`EmbeddingLanes`). A question is embedded once (`rag_worker.query_cache`).
    """
    import anyio.to_thread
    from lightrag.utils import EmbeddingFunc

    async def embed(texts: list[str], **kwargs: Any) -> np.ndarray:
        # The model is symmetric: "context" only chooses the lane.
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        if kwargs.get("context") == "query":
            return await anyio.to_thread.run_sync(embedder.embed, list(texts), limiter=lanes.query)
        return await lanes.embed_for_indexing(embedder, list(texts))

    # A plain closure: deepcopy (LightRAG's asdict) treats functions as atomic.
    return EmbeddingFunc(
        embedding_dim=EMBEDDING_DIM, func=remembering_queries(embed), max_token_size=MAX_TOKEN_SIZE, model_name=MODEL_NAME,
        supports_asymmetric=True,  # else LightRAG drops `context`, which picks the lane
    )
