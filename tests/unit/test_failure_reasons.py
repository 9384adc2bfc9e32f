"""A failed document's status names the real cause and a next step that fits it (issue 12)."""

from __future__ import annotations

import pytest

from rag_worker.storage.catalog import GENERIC_INDEXING_ERROR, public_error


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        ("Embedding func: Worker execution timeout after 60s", "embeddings took too long"),
        ("Embedding func: RuntimeError in model", "embedding model failed"),
        ("LLM func: Worker execution timeout after 360s", "LLM did not answer in time"),
        ("[Errno 28] No space left on device", "disk was full"),
        ("Failed to upsert: could not connect to server", "storage server failed"),
        ("C[2/8]: doc-1-chunk-003: cannot switch to state 15; another operation (2) is in progress", "storage server failed"),
        ("connection was closed in the middle of operation: terminating connection due to unexpected postmaster exit", "storage server failed"),
        ("the database system is shutting down", "storage server failed"),
        ("KeyError: 'chunk-1234'", GENERIC_INDEXING_ERROR),
    ],
)
def test_each_failure_names_its_cause(raw: str, cause: str) -> None:
    message = public_error(raw)
    assert message is not None and cause in message


def test_an_extractor_timeout_without_an_llm_names_the_built_in_extractor() -> None:
    message = public_error("LLM func: Worker execution timeout after 360s", llm_configured=False)
    assert message is not None and "built-in entity extractor" in message and "LLM" not in message


def test_no_error_is_none() -> None:
    assert public_error(None) is None and public_error("") is None
