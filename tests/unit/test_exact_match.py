"""Exact names in retrieval (`rag_worker.storage.exact_match`): the passages that contain what a
question names verbatim come first, whatever the embedding model makes of the name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_worker.storage.exact_match import MAX_NAMED_CHUNKS, add_named_chunks, exact_term_rerank, named_in

pytestmark = pytest.mark.anyio

QUESTION = "Who built the HERON-1000 prototype?"


def test_names_match_whole_words_in_any_case_across_line_breaks() -> None:
    assert named_in(["HERON-1000"], "The heron-1000 prototype") == 1
    assert named_in(["HERON-100"], "The HERON-1000 prototype") == 0
    assert named_in(["Kestrel Array", "Halvorsen Foundation"], "the Kestrel\nArray and the Halvorsen Foundation") == 2


def case_blind(names: list[str], text: str) -> int:
    """The plain definition: each name as a whole word, case-blind, in the text with its blanks
    made single spaces."""
    flat = " ".join(text.split())
    return sum(1 for name in names if re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", flat, re.IGNORECASE))


#: Letters whose case folding `str.lower` does not share with the case-blind pattern (long s, the
#: Kelvin sign, dotted and dotless i), digits, hyphens, and blanks of every kind (a file separator
#: is one to `str.split`).
LETTERS = st.sampled_from(list("aAsSkKiIſKİı-1é_.") + [" ", "  ", "\n", "\t", "\r\n", "\x1c", "\u00a0"])


@settings(max_examples=1000)
@given(st.lists(st.lists(LETTERS, min_size=1, max_size=5).map("".join), min_size=1, max_size=3),
       st.lists(LETTERS, max_size=30).map("".join))
@example(["sk"], "ſK")  # folds onto "sk" only case-blind
@example(["İ"], "i")
@example(["a b"], "x a\x1c\n b.")
@example(["a  b", " a"], "a  b a")
def test_names_are_counted_as_the_case_blind_definition_counts_them(names: list[str], text: str) -> None:
    assert named_in(names, text) == case_blind(names, text)


async def test_rerank_puts_the_passage_naming_the_question_first_and_keeps_the_rest_in_order() -> None:
    documents = ["The HERON-1010 prototype was built by Ann.", "Unrelated text.",
                 "The HERON-1000 prototype was built by Bob.", "More unrelated text."]
    ranked = await exact_term_rerank(QUESTION, documents, top_n=3)
    assert [r["index"] for r in ranked] == [2, 0, 1]
    assert ranked[0]["relevance_score"] == 1.0 and all(0 < r["relevance_score"] <= 1 for r in ranked)


async def test_rerank_of_a_question_without_names_changes_nothing() -> None:
    ranked = await exact_term_rerank("what happened next?", ["b", "a", "c"])
    assert [r["index"] for r in ranked] == [0, 1, 2]


@dataclass
class FakeStore:
    rows: dict[str, Any] = field(default_factory=dict)
    fail: bool = False

    reads: int = 0

    async def get_by_ids(self, keys: list[str]) -> list[Any]:
        self.reads += 1
        if self.fail:
            raise OSError("storage down")
        return [self.rows.get(k) for k in keys]


@dataclass
class FakeVectors:
    results: list[dict[str, Any]]
    vectors: dict[str, list[float]]

    async def query(self, query: str, top_k: int, query_embedding: Any = None) -> list[dict[str, Any]]:
        return self.results[:top_k]

    async def get_vectors_by_ids(self, ids: list[str]) -> dict[str, list[float]]:
        return {i: self.vectors[i] for i in ids if i in self.vectors}


@dataclass
class FakeRag:
    chunks_vdb: FakeVectors
    entity_chunks: FakeStore
    text_chunks: FakeStore


def fake_rag(entity_rows: dict[str, Any], *, fail: bool = False) -> FakeRag:
    dense = [{"id": f"c{i}", "content": f"The HERON-10{i}0 prototype was built by someone.", "distance": 0.5}
             for i in range(1, 6)]
    chunks = {"fact": {"content": "The HERON-1000 prototype was built by Bob.", "file_path": "r.pdf",
                       "full_doc_id": "doc-1"}}
    return FakeRag(FakeVectors(dense, {"fact": [1.0, 0.0]}), FakeStore(entity_rows, fail), FakeStore(chunks))


async def test_vector_search_leads_with_the_passages_of_a_named_entity() -> None:
    rag = fake_rag({"HERON-1000": {"chunk_ids": ["fact"], "count": 1}})
    add_named_chunks(rag)
    rows = await rag.chunks_vdb.query(QUESTION, top_k=3, query_embedding=np.array([0.6, 0.8]))
    assert [r["id"] for r in rows] == ["fact", "c1", "c2"]  # still top_k rows
    assert rows[0]["file_path"] == "r.pdf" and rows[0]["distance"] == pytest.approx(0.6)


async def test_the_passages_of_every_named_entity_are_looked_up_in_one_read() -> None:
    rag = fake_rag({"HERON-1000": {"chunk_ids": ["fact"], "count": 1}, "Bob Marsh": {"chunk_ids": ["bob"], "count": 1}})
    rag.text_chunks.rows["bob"] = {"content": "Bob Marsh signed the report.", "full_doc_id": "doc-2"}
    add_named_chunks(rag)
    rows = await rag.chunks_vdb.query("Did Bob Marsh build the HERON-1000 prototype?", top_k=4)
    assert [r["id"] for r in rows] == ["bob", "fact", "c1", "c2"] and rag.entity_chunks.reads == 1


async def test_a_common_name_pulls_no_passages_in() -> None:
    rag = fake_rag({"HERON-1000": {"chunk_ids": [f"x{i}" for i in range(MAX_NAMED_CHUNKS + 1)]}})
    add_named_chunks(rag)
    assert [r["id"] for r in await rag.chunks_vdb.query(QUESTION, top_k=3)] == ["c1", "c2", "c3"]


async def test_a_failed_lookup_leaves_the_vector_results_alone() -> None:
    rag = fake_rag({}, fail=True)
    add_named_chunks(rag)
    assert [r["id"] for r in await rag.chunks_vdb.query(QUESTION, top_k=2)] == ["c1", "c2"]
