"""The embedded engine's vector store (LightRAG's `PGVectorStorage`) embeds only what it must, as
the files' one does (rag_worker/storage/vector_flush.py): an unchanged row keeps its stored
vector, identical contents are embedded once, an overlapping commit waits for the rows another
is embedding, and all of it before the store's lock.  Real LightRAG on the real embedded engine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from rag_worker.storage.embedded_engine import ENGINE_DIR, EmbeddedEngine, stop_engine
from rag_worker.storage.vector_flush import reading_committed_state
from tests.unit.test_vector_flush import counting_lightrag

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def engine_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One engine for the module (its start is the slow part); each test has its own workspace."""
    working_dir = tmp_path_factory.mktemp("engine")
    anyio.run(EmbeddedEngine(working_dir).ensure_running)  # exports POSTGRES_* for LightRAG's client
    yield working_dir
    stop_engine(working_dir / ENGINE_DIR)


@pytest.fixture
async def rag(engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A LightRAG instance whose vectors live in the engine, with the counting embedder."""
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    workspace = f"t_{uuid.uuid4().hex[:8]}"
    async with counting_lightrag(tmp_path, workspace, vector_storage="PGVectorStorage", model_name="count8") as instance:
        yield instance


def vectors_ready_under_the_lock(store: Any) -> list[bool]:
    """Whether each buffered row had its vector when LightRAG began its flush (filled later)."""
    flush = store._flush_pending_vector_ops
    vectors_ready: list[bool] = []

    async def recording_flush() -> None:
        vectors_ready.extend(row.vector is not None for row in store._pending_vector_docs.values())
        await flush()

    store._flush_pending_vector_ops = recording_flush
    return vectors_ready


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


async def test_an_unchanged_entity_merged_again_is_not_embedded_again_in_the_engine(rag: Any) -> None:
    store = rag.entities_vdb
    await store.upsert({
        "ent-a": {"content": "Alice\nan engineer", "entity_name": "Alice", "source_id": "c1"},
        "ent-b": {"content": "Bob\na pilot", "entity_name": "Bob", "source_id": "c1"},
    })
    await store.index_done_callback()
    stored = await store.get_vectors_by_ids(["ent-a"])
    rag.test_embedder.texts.clear()
    # A later document merges into both: Alice's description is unchanged, Bob's grows.
    await store.upsert({
        "ent-a": {"content": "Alice\nan engineer", "entity_name": "Alice", "source_id": "c1<SEP>c2"},
        "ent-b": {"content": "Bob\na pilot<SEP>a sailor", "entity_name": "Bob", "source_id": "c1<SEP>c2"},
    })
    vectors_ready = vectors_ready_under_the_lock(store)
    await store.index_done_callback()
    assert rag.test_embedder.texts == ["Bob\na pilot<SEP>a sailor"]  # the changed one, and only it
    assert vectors_ready == [True, True]  # nothing left to embed under LightRAG's lock
    again = (await store.get_vectors_by_ids(["ent-a"]))["ent-a"]
    np.testing.assert_allclose(_unit(again), _unit(stored["ent-a"]), atol=1e-6)
    assert (await store.get_by_id("ent-b"))["content"] == "Bob\na pilot<SEP>a sailor"


async def test_a_changed_entity_is_embedded_again_and_its_new_vector_stored(rag: Any) -> None:
    store = rag.entities_vdb
    await store.upsert({"ent-c": {"content": "Carol\na chemist", "entity_name": "Carol", "source_id": "c1"}})
    await store.index_done_callback()
    before = (await store.get_vectors_by_ids(["ent-c"]))["ent-c"]
    rag.test_embedder.texts.clear()
    await store.upsert({"ent-c": {"content": "Carol\na chemist<SEP>a poet", "entity_name": "Carol", "source_id": "c2"}})
    await store.index_done_callback()
    assert rag.test_embedder.texts == ["Carol\na chemist<SEP>a poet"]
    after = (await store.get_vectors_by_ids(["ent-c"]))["ent-c"]
    assert not np.allclose(_unit(after), _unit(before))  # the counting model gives this text another vector


async def test_identical_contents_in_one_engine_commit_are_embedded_once(rag: Any) -> None:
    store = rag.relationships_vdb
    await store.upsert({f"rel-{i}": {"content": "same words", "src_id": "A", "tgt_id": f"B{i}", "source_id": "c1"} for i in range(3)})
    await store.index_done_callback()
    assert rag.test_embedder.texts == ["same words"]
    assert set(await store.get_vectors_by_ids(["rel-0", "rel-1", "rel-2"])) == {"rel-0", "rel-1", "rel-2"}


async def test_overlapping_engine_commits_embed_a_row_once(rag: Any) -> None:
    """Two documents commit at once: the second waits for the first one's vectors."""
    store = rag.entities_vdb
    await store.upsert({f"ent-{i}": {"content": f"text {i}", "entity_name": f"E{i}", "source_id": "c1"} for i in range(4)})
    rag.test_embedder.gate = asyncio.Event()
    first = asyncio.create_task(store.index_done_callback())
    await asyncio.sleep(0.2)  # the first commit has read the stored rows and is held at the gate
    second = asyncio.create_task(store.index_done_callback())
    await asyncio.sleep(0.2)
    rag.test_embedder.gate.set()
    await asyncio.gather(first, second)
    assert sorted(rag.test_embedder.texts) == [f"text {i}" for i in range(4)]
    assert len(await store.get_vectors_by_ids([f"ent-{i}" for i in range(4)])) == 4


async def test_a_question_on_the_engine_never_embeds_rows_still_being_indexed(rag: Any) -> None:
    store = rag.entities_vdb
    await store.upsert({"ent-old": {"content": "committed", "entity_name": "Old", "source_id": "c1"}})
    await store.index_done_callback()
    await store.upsert({"ent-new": {"content": "still indexing", "entity_name": "New", "source_id": "c2"}})
    texts = len(rag.test_embedder.texts)
    with reading_committed_state():
        vectors = await store.get_vectors_by_ids(["ent-old", "ent-new"])
    assert set(vectors) == {"ent-old"} and len(rag.test_embedder.texts) == texts


async def test_a_question_reads_the_engines_chunk_vectors_as_float32_arrays_equal_to_lightrags(rag: Any) -> None:
    store = rag.chunks_vdb
    await store.upsert({f"chunk-{n}": {"content": f"chunk text {n}", "full_doc_id": "d", "tokens": 3, "chunk_order_index": n, "file_path": "f"} for n in range(3)})
    await store.index_done_callback()
    own = await store.get_vectors_by_ids(["chunk-0", "chunk-1", "chunk-2", "missing"])  # LightRAG's read: lists
    with reading_committed_state():
        fast = await store.get_vectors_by_ids(["chunk-0", "chunk-1", "chunk-2", "missing"])
    assert set(fast) == set(own) == {"chunk-0", "chunk-1", "chunk-2"}
    assert all(isinstance(vector, np.ndarray) and vector.dtype == np.float32 for vector in fast.values())
    assert all(np.allclose(fast[key], np.asarray(own[key], dtype=np.float32)) for key in own)


async def test_a_questions_chunk_similarities_are_computed_by_the_engine_as_lightrag_computes_them(rag: Any) -> None:
    """pgvector's cosine in the server (`chunk_vectors.similarities` where LightRAG's doc status
    is not in the database: no kept vectors) against LightRAG's own per-vector one: equal, a row
    still being indexed and an unknown id left out, a zero vector 0.0, nothing for ids of which
    none is stored."""
    from lightrag.utils import cosine_similarity

    from rag_worker.storage.vector_flush import chunk_similarities

    store = rag.chunks_vdb
    rows = {f"chunk-{n}": {"content": f"chunk text {n} " * n, "full_doc_id": "d", "tokens": 3, "chunk_order_index": n,
                           "file_path": "f"} for n in range(6)}
    await store.upsert(rows)
    await store.index_done_callback()
    await store.upsert({"chunk-new": {**rows["chunk-1"], "content": "still indexing"}})
    stored = await store.get_vectors_by_ids(list(rows))
    question = np.asarray(stored["chunk-2"], dtype=np.float32) + 0.1
    with reading_committed_state():
        similarity = await chunk_similarities(store, [*rows, "chunk-new", "missing"], question)
        assert await chunk_similarities(store, ["chunk-0"], np.zeros(8, dtype=np.float32)) == {"chunk-0": 0.0}
        assert await chunk_similarities(store, ["missing", "chunk-new"], question) == {}
    assert set(similarity) == set(rows)
    expected = {key: cosine_similarity(question, np.asarray(vector, dtype=np.float32)) for key, vector in stored.items()}
    assert all(abs(similarity[key] - expected[key]) < 1e-5 for key in rows), (similarity, expected)
