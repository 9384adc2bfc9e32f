"""A question is embedded once per process, whichever binding embeds it (rag_worker.query_cache)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rag_worker.query_cache import remembering_queries

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
