"""How tool arguments become LightRAG's QueryParam (history trimming, context-only mode), and
how retrieved chunks become sources: named by document, scored by what LightRAG measured."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from protocol import methods as m
from rag_worker.operations import querying
from rag_worker.query_cache import ChunkScores, remembering_queries


def query_param(args: dict[str, Any], *, stream: bool, with_llm: bool) -> Any:
    """LightRAG's QueryParam for arguments as the worker gets them (schema defaults filled in)."""
    return querying.query_param(m.QUERY.with_defaults(args), stream=stream, with_llm=with_llm)


def history(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]


def test_history_turns_keeps_the_last_pairs() -> None:
    param = query_param({"query": "q", "conversation_history": history(10), "history_turns": 2}, stream=False, with_llm=True)
    assert [m["content"] for m in param.conversation_history] == ["m6", "m7", "m8", "m9"]


def test_zero_history_turns_sends_no_history() -> None:
    param = query_param({"query": "q", "conversation_history": history(4), "history_turns": 0}, stream=False, with_llm=True)
    assert param.conversation_history == []


def test_defaults_and_every_parameter_reach_lightrag() -> None:
    param = query_param(
        {"query": "q", "mode": "local", "top_k": 7, "chunk_top_k": 3, "max_tokens": 5000, "enable_rerank": True, "response_type": "Bullet Points"},
        stream=True,
        with_llm=True,
    )
    assert (param.mode, param.top_k, param.chunk_top_k, param.max_total_tokens) == ("local", 7, 3, 5000)
    assert param.enable_rerank is True and param.response_type == "Bullet Points"
    assert param.stream is True and param.only_need_context is False


def test_without_an_llm_only_context_is_retrieved_and_nothing_streams() -> None:
    param = query_param({"query": "q"}, stream=True, with_llm=False)
    assert param.only_need_context is True and param.stream is False and param.mode == "mix"
    assert param.enable_rerank is True  # the built-in exact-name reranker (storage/exact_match)


# ------------------------------------------------------------------------------ sources
DOC_A, DOC_B = "doc-aaaa", "doc-bbbb"


class Store:
    """A stand-in for the stores `_sources` reads, recording every read."""

    def __init__(self, rows: dict[str, Any]) -> None:
        self.rows = rows
        self.reads: list[list[str]] = []

    async def get_by_ids(self, ids: list[str]) -> list[Any]:
        self.reads.append(list(ids))
        return [self.rows.get(i) for i in ids]

    async def get_vectors_by_ids(self, ids: list[str]) -> dict[str, Any]:
        self.reads.append(list(ids))
        return {i: self.rows[i] for i in ids if i in self.rows}

    async def get_many(self, ids: list[str]) -> dict[str, Any]:
        return {i: self.rows[i] for i in ids if i in self.rows}


class Model:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def __call__(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.batches.append(list(texts))
        return np.array([[1.0, 0.0] for _ in texts], dtype=np.float32)


def workspace(model: Model, vectors: dict[str, Any] | None = None, chunk_rows: dict[str, Any] | None = None) -> Any:
    catalog = Store({DOC_A: {"filename": "a.pdf", "metadata": {"team": "x"}}, DOC_B: {"filename": "b.md", "metadata": {}}})
    rag = SimpleNamespace(text_chunks=Store(chunk_rows or {}), chunks_vdb=Store(vectors or {}))
    return SimpleNamespace(rag=rag, catalog=catalog, components={"embedding_func": SimpleNamespace(func=remembering_queries(model))})


def chunk(chunk_id: str, file_path: str = "a.pdf") -> dict[str, Any]:
    return {"chunk_id": chunk_id, "content": f"text of {chunk_id}", "file_path": file_path, "reference_id": "1"}


async def asked(ws: Any, question: str) -> None:
    """LightRAG embedding the question for its retrieval (the only embedding a query makes)."""
    await ws.components["embedding_func"].func([question], context="query")


@pytest.mark.anyio
async def test_sources_name_each_document_and_position_from_the_chunk_id_alone() -> None:
    ws = workspace(Model())
    seen = ChunkScores(similarity={f"{DOC_A}-chunk-002": 0.8, f"{DOC_B}-chunk-010": 0.5})
    sources = await querying._sources(ws, "q", [chunk(f"{DOC_A}-chunk-002"), chunk(f"{DOC_B}-chunk-010", "b.md")], 0.0, seen)
    assert [(s["document_id"], s["filename"], s["positions"]) for s in sources] == [
        (DOC_A, "a.pdf", {"chunk_index": 2}),
        (DOC_B, "b.md", {"chunk_index": 10}),
    ]
    assert sources[0]["metadata"] == {"team": "x"} and "metadata" not in sources[1]  # empty: left out
    assert ws.rag.text_chunks.reads == [] and ws.rag.chunks_vdb.reads == []


@pytest.mark.anyio
async def test_scores_are_the_ones_lightrags_retrieval_measured_and_nothing_is_embedded_again() -> None:
    model = Model()
    ws = workspace(model)
    await asked(ws, "who?")
    seen = ChunkScores(similarity={f"{DOC_A}-chunk-000": 0.91}, vectors={f"{DOC_A}-chunk-001": [0.6, 0.8]})
    sources = await querying._sources(ws, "who?", [chunk(f"{DOC_A}-chunk-000"), chunk(f"{DOC_A}-chunk-001")], 0.0, seen)
    assert [s["relevance_score"] for s in sources] == [0.91, 0.6]
    assert model.batches == [["who?"]] and ws.rag.chunks_vdb.reads == []


@pytest.mark.anyio
async def test_a_chunk_lightrag_did_not_score_is_scored_from_its_stored_vector() -> None:
    """KG_CHUNK_PICK_METHOD=WEIGHT picks an entity's chunks without reading their vectors."""
    model = Model()
    ws = workspace(model, vectors={f"{DOC_A}-chunk-003": [0.0, 2.0]})
    await asked(ws, "who?")
    sources = await querying._sources(ws, "who?", [chunk(f"{DOC_A}-chunk-003")], 0.0, ChunkScores())
    assert sources[0]["relevance_score"] == 0.0
    assert ws.rag.chunks_vdb.reads == [[f"{DOC_A}-chunk-003"]] and model.batches == [["who?"]]


@pytest.mark.anyio
async def test_a_question_no_longer_remembered_leaves_unscored_chunks_without_a_score_rather_than_embedding() -> None:
    model = Model()
    ws = workspace(model, vectors={f"{DOC_A}-chunk-003": [0.0, 2.0]})
    sources = await querying._sources(ws, "who?", [chunk(f"{DOC_A}-chunk-003")], 0.5, ChunkScores())
    assert sources[0]["relevance_score"] is None  # kept: an unknown score is not a low one
    assert model.batches == []


@pytest.mark.anyio
async def test_passages_scoring_below_the_threshold_are_dropped() -> None:
    ws = workspace(Model())
    seen = ChunkScores(similarity={f"{DOC_A}-chunk-000": 0.2, f"{DOC_A}-chunk-001": 0.7})
    sources = await querying._sources(ws, "q", [chunk(f"{DOC_A}-chunk-000"), chunk(f"{DOC_A}-chunk-001")], 0.5, seen)
    assert [s["chunk_id"] for s in sources] == [f"{DOC_A}-chunk-001"]


@pytest.mark.anyio
async def test_a_chunk_id_outside_lightrags_naming_is_looked_up() -> None:
    """LightRAG hashes a chunk's id when two chunks of a document would share one."""
    ws = workspace(Model(), chunk_rows={"chunk-9f8e": {"full_doc_id": DOC_B, "chunk_order_index": 4}})
    sources = await querying._sources(ws, "q", [chunk("chunk-9f8e", "b.md")], 0.0, ChunkScores())
    assert (sources[0]["document_id"], sources[0]["filename"], sources[0]["positions"]) == (DOC_B, "b.md", {"chunk_index": 4})
    assert ws.rag.text_chunks.reads == [["chunk-9f8e"]]
