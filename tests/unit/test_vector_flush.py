"""Indexing's embeddings run outside the vector store's lock; questions read committed rows
(rag_worker/storage/vector_flush.py), against a real LightRAG NanoVectorDBStorage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_worker.storage.vector_flush import embed_outside_locks, reading_committed_state

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountingEmbedder:
    """A deterministic 8-dimensional embedding that records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str | None]] = []

    async def __call__(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append((len(texts), kwargs.get("context")))
        return np.array([[len(t) % 7 + 1.0, *([1.0] * 7)] for t in texts], dtype=np.float32)


@pytest.fixture
async def rag(tmp_path: Path) -> Any:
    """A LightRAG instance on the local storages with the counting embedder."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc

    from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer

    async def no_llm(*args: Any, **kwargs: Any) -> str:
        return ""

    embedder = CountingEmbedder()
    instance = LightRAG(
        working_dir=str(tmp_path),
        workspace="t",
        embedding_func=EmbeddingFunc(embedding_dim=8, func=embedder, supports_asymmetric=True),
        llm_model_func=no_llm,
        tokenizer=make_offline_tokenizer(),
    )
    await instance.initialize_storages()
    embed_outside_locks(instance)
    instance.test_embedder = embedder
    yield instance
    await instance.finalize_storages()


async def test_a_commit_embeds_buffered_rows_before_it_takes_the_lock(rag: Any) -> None:
    store = rag.chunks_vdb
    await store.upsert({f"chunk-{i}": {"content": f"text {i}", "full_doc_id": "d"} for i in range(5)})
    flush_under_lock = store._flush_pending_locked
    vectors_ready: list[bool] = []

    async def recording_flush() -> None:  # LightRAG calls this with the lock held
        vectors_ready.extend(row.vector is not None for row in store._pending_upserts.values())
        await flush_under_lock()

    store._flush_pending_locked = recording_flush
    await store.index_done_callback()
    assert vectors_ready == [True] * 5  # nothing left for LightRAG to embed under the lock
    assert rag.test_embedder.calls == [(5, "document")]  # one batch, each row embedded once
    assert set(await store.get_vectors_by_ids(["chunk-0", "chunk-4"])) == {"chunk-0", "chunk-4"}


async def test_a_question_never_embeds_rows_still_being_indexed(rag: Any) -> None:
    store = rag.chunks_vdb
    await store.upsert({"chunk-old": {"content": "committed text", "full_doc_id": "a"}})
    await store.index_done_callback()
    await store.upsert({"chunk-new": {"content": "still indexing", "full_doc_id": "b"}})
    calls = len(rag.test_embedder.calls)
    with reading_committed_state():
        vectors = await store.get_vectors_by_ids(["chunk-old", "chunk-new"])
    assert set(vectors) == {"chunk-old"} and len(rag.test_embedder.calls) == calls
    assert set(await store.get_vectors_by_ids(["chunk-new"])) == {"chunk-new"}  # indexing itself still gets it
