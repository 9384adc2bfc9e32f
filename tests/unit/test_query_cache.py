"""What LightRAG computed for a question is not computed again (rag_worker.query_cache): the
question is embedded once per process, whichever binding embeds it, and its chunk scores are
the ones LightRAG's retrieval measured."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rag_worker.query_cache import observing_chunk_scores, remembered_vector, remembering_queries, report_chunk_scores

pytestmark = pytest.mark.anyio


class CountingModel:
    """An embedding 'model' that records every batch it is asked for."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def __call__(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.batches.append(list(texts))
        return np.array([[float(len(text)), 1.0] for text in texts], dtype=np.float32)


async def test_the_same_question_is_sent_to_the_model_once() -> None:
    model = CountingModel()
    embed = remembering_queries(model)
    first = await embed(["who funded the array?"], context="query")
    again = await embed(["who funded the array?"], context="query")
    assert model.batches == [["who funded the array?"]]
    assert np.array_equal(first, again)
    again[0, 0] = -1.0  # a caller changing its copy does not change what is remembered
    assert (await embed(["who funded the array?"], context="query"))[0, 0] == first[0, 0]


async def test_indexing_batches_and_unmarked_texts_always_reach_the_model() -> None:
    model = CountingModel()
    embed = remembering_queries(model)
    for _ in range(2):
        await embed(["a chunk", "another chunk"], context="document")
        await embed(["an entity"])
    assert len(model.batches) == 4
    assert list(embed.query_cache) == []  # type: ignore[attr-defined]


async def test_a_question_batched_with_its_keywords_is_remembered_text_by_text() -> None:
    """Mix mode embeds [question, low-level keywords, high-level keywords] in one request; the
    sources' scores then ask for the question alone."""
    model = CountingModel()
    embed = remembering_queries(model)
    batch = await embed(["who funded it?", "Kestrel", "funding"], context="query")
    alone = await embed(["who funded it?"], context="query")
    again = await embed(["who funded it?", "Kestrel", "funding"], context="query")
    assert model.batches == [["who funded it?", "Kestrel", "funding"]]
    assert np.array_equal(alone[0], batch[0]) and np.array_equal(again, batch)


async def test_only_the_most_recent_questions_are_kept() -> None:
    model = CountingModel()
    embed = remembering_queries(model, size=2)
    for question in ("q1", "q2", "q1", "q3"):  # q1 is used again, so q2 is the oldest
        await embed([question], context="query")
    assert list(embed.query_cache) == ["q1", "q3"]  # type: ignore[attr-defined]
    await embed(["q2"], context="query")
    assert model.batches == [["q1"], ["q2"], ["q3"], ["q2"]]


class NanoVectorDBStorage:
    """A chunk store named like LightRAG's local one (whose search reports cosine similarities)."""

    def __init__(self) -> None:
        self.vectors = {"doc-a-chunk-000": [1.0, 0.0], "doc-b-chunk-001": [0.0, 1.0]}

    async def query(self, query: str, top_k: int, query_embedding: Any = None) -> list[dict[str, Any]]:
        return [{"id": "doc-a-chunk-000", "distance": np.float32(0.75), "content": "a"}]

    async def get_vectors_by_ids(self, ids: list[str]) -> dict[str, list[float]]:
        return {i: self.vectors[i] for i in ids if i in self.vectors}


async def test_a_question_sees_the_similarities_and_vectors_its_retrieval_measured() -> None:
    store = NanoVectorDBStorage()
    report_chunk_scores(store)
    with observing_chunk_scores() as scores:
        found = await store.query("who?", top_k=5)
        read = await store.get_vectors_by_ids(["doc-b-chunk-001"])
    assert found[0]["distance"] == np.float32(0.75) and read == {"doc-b-chunk-001": [0.0, 1.0]}  # unchanged for LightRAG
    assert scores.similarity == {"doc-a-chunk-000": 0.75}
    assert scores.vectors == {"doc-b-chunk-001": [0.0, 1.0]}


async def test_retrieval_outside_a_question_is_not_recorded() -> None:
    store = NanoVectorDBStorage()
    report_chunk_scores(store)
    with observing_chunk_scores() as scores:
        pass
    await store.query("who?", top_k=5)
    await store.get_vectors_by_ids(["doc-a-chunk-000"])
    assert scores.similarity == {} and scores.vectors == {}


async def test_a_store_whose_distance_is_not_a_cosine_reports_only_vectors() -> None:
    class PGVectorStorage(NanoVectorDBStorage):
        pass

    store = PGVectorStorage()
    report_chunk_scores(store)
    with observing_chunk_scores() as scores:
        await store.query("who?", top_k=5)
    assert scores.similarity == {}


async def test_a_remembered_question_vector_is_read_without_asking_the_model() -> None:
    model = CountingModel()
    embed = remembering_queries(model)
    holder = SimpleNamespace(func=embed)  # what LightRAG's EmbeddingFunc looks like from here
    assert remembered_vector(holder, "who funded it?") is None
    await embed(["who funded it?", "funding"], context="query")
    vector = remembered_vector(holder, "who funded it?")
    assert vector is not None and vector.tolist() == [float(len("who funded it?")), 1.0]
    assert model.batches == [["who funded it?", "funding"]]
