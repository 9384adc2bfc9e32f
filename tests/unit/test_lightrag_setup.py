"""The LightRAG construction options the embedded default chooses (rag_worker/storage/lightrag_setup.py)."""

from __future__ import annotations

import pytest

from rag_worker.storage.lightrag_setup import lightrag_kwargs

EMBEDDED = {"embedding_model_id": "onnx:all-MiniLM-L6-v2-int8:384"}


def test_the_embedded_default_indexes_eight_documents_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAX_PARALLEL_INSERT", raising=False)
    assert lightrag_kwargs(EMBEDDED)["max_parallel_insert"] == 8


def test_max_parallel_insert_from_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_PARALLEL_INSERT", "2")
    assert "max_parallel_insert" not in lightrag_kwargs(EMBEDDED)  # LightRAG reads the variable itself


def test_a_remote_embedding_model_keeps_lightrags_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAX_PARALLEL_INSERT", raising=False)
    kwargs = lightrag_kwargs({"embedding_model_id": "openai:text-embedding-3-small:1536"})
    assert "max_parallel_insert" not in kwargs and "chunk_token_size" not in kwargs
