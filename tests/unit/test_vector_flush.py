"""Indexing's embeddings run outside the vector store's lock; questions read committed rows
(rag_worker/storage/vector_flush.py), against a real LightRAG NanoVectorDBStorage."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
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
        self.texts: list[str] = []
        self.gate: asyncio.Event | None = None  # when set, calls wait for it

    async def __call__(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append((len(texts), kwargs.get("context")))
        self.texts.extend(texts)
        if self.gate is not None:
            await self.gate.wait()
        return np.array([[len(t) % 7 + 1.0, *([1.0] * 7)] for t in texts], dtype=np.float32)


@contextlib.asynccontextmanager
async def counting_lightrag(working_dir: Path, workspace: str, embedder: Any = None, **options: Any) -> AsyncIterator[Any]:
    """A real LightRAG with the counting embedder (or `embedder`, 8 dimensions; as `.test_embedder`)
    and no LLM; `options` go to LightRAG (storages) except `model_name`, the embedding's."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc

    from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer

    async def no_llm(*args: Any, **kwargs: Any) -> str:
        return ""

    embedder = embedder or CountingEmbedder()
    named = {"model_name": options.pop("model_name")} if "model_name" in options else {}
    instance = LightRAG(
        working_dir=str(working_dir),
        workspace=workspace,
        embedding_func=EmbeddingFunc(embedding_dim=8, func=embedder, supports_asymmetric=True, **named),
        llm_model_func=no_llm,
        tokenizer=make_offline_tokenizer(),
        **options,
    )
    await instance.initialize_storages()
    embed_outside_locks(instance)
    instance.test_embedder = embedder
    try:
        yield instance
    finally:
        await instance.finalize_storages()


@pytest.fixture
async def rag(tmp_path: Path) -> AsyncIterator[Any]:
    """A LightRAG instance on the local storages with the counting embedder."""
    async with counting_lightrag(tmp_path, "t") as instance:
        yield instance


def vectors_ready_under_the_lock(store: Any) -> list[bool]:
    """Whether each buffered row had its vector when LightRAG took the lock to flush (filled later)."""
    flush_under_lock = store._flush_pending_locked
    vectors_ready: list[bool] = []

    async def recording_flush() -> None:  # LightRAG calls this with the lock held
        vectors_ready.extend(row.vector is not None for row in store._pending_upserts.values())
        await flush_under_lock()

    store._flush_pending_locked = recording_flush
    return vectors_ready


async def test_a_commit_embeds_buffered_rows_before_it_takes_the_lock(rag: Any) -> None:
    store = rag.chunks_vdb
    await store.upsert({f"chunk-{i}": {"content": f"text {i}", "full_doc_id": "d"} for i in range(5)})
    vectors_ready = vectors_ready_under_the_lock(store)
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


def _unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


async def test_a_row_whose_content_is_unchanged_keeps_its_stored_vector(rag: Any) -> None:
    store = rag.entities_vdb
    await store.upsert({"ent-a": {"content": "Alice\nan engineer"}, "ent-b": {"content": "Bob\na pilot"}})
    await store.index_done_callback()
    stored = await store.get_vectors_by_ids(["ent-a"])
    rag.test_embedder.texts.clear()
    # A later document merges into both: Alice's description is unchanged, Bob's grows.
    await store.upsert({"ent-a": {"content": "Alice\nan engineer"}, "ent-b": {"content": "Bob\na pilot<SEP>a sailor"}})
    await store.index_done_callback()
    assert rag.test_embedder.texts == ["Bob\na pilot<SEP>a sailor"]
    again = (await store.get_vectors_by_ids(["ent-a"]))["ent-a"]
    np.testing.assert_allclose(_unit(again), _unit(stored["ent-a"]), atol=1e-3)  # stored as float16
    assert (await store.get_by_id("ent-b"))["content"] == "Bob\na pilot<SEP>a sailor"


async def test_identical_contents_in_one_commit_are_embedded_once(rag: Any) -> None:
    store = rag.relationships_vdb
    await store.upsert({f"rel-{i}": {"content": "same words"} for i in range(3)})
    await store.index_done_callback()
    assert rag.test_embedder.texts == ["same words"]
    assert set(await store.get_vectors_by_ids(["rel-0", "rel-1", "rel-2"])) == {"rel-0", "rel-1", "rel-2"}


async def test_overlapping_commits_embed_a_row_once(rag: Any) -> None:
    """Two documents commit at once (LightRAG's max_parallel_insert): the second waits for the
    first one's vectors instead of embedding the same rows again."""
    store = rag.chunks_vdb
    await store.upsert({f"chunk-{i}": {"content": f"text {i}", "full_doc_id": "d"} for i in range(4)})
    rag.test_embedder.gate = asyncio.Event()
    first = asyncio.create_task(store.index_done_callback())
    await asyncio.sleep(0)  # the first commit is now embedding, held at the gate
    second = asyncio.create_task(store.index_done_callback())
    await asyncio.sleep(0)
    rag.test_embedder.gate.set()
    await asyncio.gather(first, second)
    assert sorted(rag.test_embedder.texts) == [f"text {i}" for i in range(4)]
    assert len(await store.get_vectors_by_ids([f"chunk-{i}" for i in range(4)])) == 4


async def test_rows_buffered_while_a_commit_embeds_are_embedded_before_the_lock(rag: Any) -> None:
    store = rag.relationships_vdb
    await store.upsert({"rel-a": {"content": "first version"}})
    vectors_ready = vectors_ready_under_the_lock(store)
    rag.test_embedder.gate = asyncio.Event()
    commit = asyncio.create_task(store.index_done_callback())
    await asyncio.sleep(0)  # the commit is embedding "first version", held at the gate
    await store.upsert({"rel-a": {"content": "second version"}, "rel-b": {"content": "another"}})
    rag.test_embedder.gate.set()
    await commit
    assert vectors_ready == [True, True]
    assert (await store.get_by_id("rel-a"))["content"] == "second version"
