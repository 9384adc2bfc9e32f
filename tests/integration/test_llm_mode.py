"""The LLM-backed path through both processes, against a local OpenAI-compatible server:
LightRAG's own extraction, keywords, answers and streaming run for real."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeLLMServer
from tests.integration.harness import error_of, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
KEY = "sk-test-SECRET-4242"


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=KEY, embedding_dim=64) as server:
        yield server


def llm_env(fake: FakeLLMServer) -> dict[str, str]:
    return {
        "LLM_BINDING": "openai",
        "LLM_MODEL": "fake-chat",
        "LLM_BINDING_HOST": fake.openai_base_url,
        "LLM_BINDING_API_KEY": KEY,
        "EMBEDDING_BINDING": "openai",
        "EMBEDDING_MODEL": "fake-embed",
        "EMBEDDING_DIM": "64",
        "EMBEDDING_BINDING_HOST": fake.openai_base_url,
        "EMBEDDING_BINDING_API_KEY": KEY,
    }


def upload_args(name: str, text: str) -> dict[str, str]:
    return {"filename": name, "content": base64.b64encode(text.encode()).decode(), "mimeType": "text/markdown"}


async def test_answers_come_from_the_llm_with_sources(home: Path, fake: FakeLLMServer) -> None:
    async with running_server(home, **llm_env(fake)) as client:
        result = await client.call("upload_to_lightrag", upload_args("falcon.md", "# Falcon\n\nThe FALCON-88 satellite was launched by Nadia Osei from Accra."))
        assert result.structured_content["status"] == "processed", result.content
        assert result.structured_content["entities"] > 0
        assert fake.requests_for(prompt_kind="extraction"), "LightRAG's extraction went through the LLM"
        answer = await client.call("lightrag_query", {"query": "Who launched the FALCON-88 satellite?", "mode": "hybrid"})
        data = answer.structured_content
        assert data["status"] == "answered" and "FAKE-LLM ANSWER" in data["answer"] and "Nadia Osei" in data["answer"]
        assert data["sources"][0]["filename"] == "falcon.md"
        assert fake.requests_for(prompt_kind="keywords")
        health = await client.health(include_detailed=True)
        assert KEY not in str(health) and KEY not in answer.content[0].text


async def test_a_question_costs_the_requests_it_costs_lightrag_in_every_mode(home: Path, fake: FakeLLMServer) -> None:
    """The sources' relevance scores reuse what LightRAG's retrieval measured: per query, one
    embedding request (the question, with the keywords in graph modes), and the LLM asked for
    keywords (graph modes) and for the answer, as LightRAG alone asks (remote calls cost a round trip)."""
    async with running_server(home, **llm_env(fake)) as client:
        await client.call("upload_to_lightrag", upload_args("falcon.md", "# Falcon\n\nThe FALCON-88 satellite was launched by Nadia Osei from Accra."))
        for mode in ("naive", "local", "global", "hybrid", "mix"):
            question = f"Which satellite did Nadia Osei launch ({mode})?"
            fake.reset()
            answer = await client.call("lightrag_query", {"query": question, "mode": mode})
            assert answer.structured_content["sources"], (mode, answer.content)
            embedded = [request.body.get("input") for request in fake.requests_for(endpoint="embeddings")]
            assert len(embedded) == 1 and question in str(embedded[0]), (mode, embedded)
            chat = [request.prompt_kind for request in fake.requests_for(endpoint="chat")]
            assert sorted(map(str, chat)) == (["answer"] if mode == "naive" else ["answer", "keywords"]), (mode, chat)


async def test_streamed_answers_arrive_as_progress_and_whole_at_the_end(home: Path, fake: FakeLLMServer) -> None:
    pieces: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message:
            pieces.append(message)

    async with running_server(home, **llm_env(fake)) as client:
        await client.call("upload_to_lightrag", upload_args("falcon.md", "# Falcon\n\nThe FALCON-88 satellite was launched by Nadia Osei from Accra."))
        result = await client.call(
            "lightrag_stream_query", {"query": "Who launched the FALCON-88 satellite?"}, progress_callback=on_progress
        )
        answer = result.structured_content["answer"]
        assert len(pieces) >= 2 and "".join(pieces) == answer and "Nadia Osei" in answer


async def test_new_documents_are_never_answered_from_a_stale_cache(home: Path, fake: FakeLLMServer) -> None:
    async with running_server(home, **llm_env(fake)) as client:
        await client.call("upload_to_lightrag", upload_args("a.md", "# Heron\n\nThe HERON-3 drone is painted blue."))
        question = {"query": "What colour is the HERON-3 drone?", "mode": "mix"}
        first = await client.call("lightrag_query", question)
        assert "blue" in first.structured_content["answer"]
        await client.call("upload_to_lightrag", upload_args("a.md", "# Heron\n\nThe HERON-3 drone is painted orange."))
        second = await client.call("lightrag_query", question)
        assert "orange" in second.structured_content["answer"] and "blue" not in second.structured_content["answer"]


async def test_bypass_goes_straight_to_the_llm(home: Path, fake: FakeLLMServer) -> None:
    async with running_server(home, **llm_env(fake)) as client:
        result = await client.call("lightrag_query", {"query": "Say hello to the team", "mode": "bypass"})
        assert not result.is_error and result.structured_content["answer"]


async def test_an_unreachable_llm_fails_indexing_with_a_reason(home: Path, fake: FakeLLMServer) -> None:
    async with running_server(home, **llm_env(fake)) as client:
        await client.wait_ready()
        fake.down()
        result = await client.call("upload_to_lightrag", upload_args("owl.md", "# Owl\n\nThe OWL-5 sensor measures humidity in Lima."))
        data = result.structured_content
        assert data["status"] == "failed" and "LLM" in data["error"] and "chunk" not in data["error"], data
        fake.up()
        again = await client.call("upload_to_lightrag", upload_args("owl.md", "# Owl\n\nThe OWL-5 sensor measures humidity in Lima."))
        assert again.structured_content["status"] == "processed", again.content
        query = await client.call("lightrag_query", {"query": "What does the OWL-5 sensor measure?"})
        assert not query.is_error


def test_bad_llm_configuration_stops_the_front_with_one_line(home: Path) -> None:
    import subprocess

    from tests.conftest import PYTHON, client_env

    done = subprocess.run(
        [PYTHON, "-m", "mcp_front"],
        env=client_env(home, LLM_BINDING="gemini", LLM_MODEL="x"),
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL, cwd=home,
    )
    assert done.returncode == 2 and b"LLM_BINDING" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert error_of is not None


async def test_with_the_llm_down_naive_queries_still_return_the_passages(home: Path, fake: FakeLLMServer) -> None:
    local_embeddings = {k: v for k, v in llm_env(fake).items() if not k.startswith("EMBEDDING")}
    async with running_server(home, **local_embeddings, LLM_TIMEOUT="1") as client:
        result = await client.call("upload_to_lightrag", upload_args("owl.md", "# Owl\n\nThe OWL-5 sensor measures humidity in Lima."))
        assert result.structured_content["status"] == "processed"
        fake.down()
        naive = await client.call("lightrag_query", {"query": "What does the OWL-5 sensor measure?", "mode": "naive"})
        assert not naive.is_error and naive.structured_content["status"] == "context_only"
        assert naive.structured_content["sources"][0]["filename"] == "owl.md"
        assert any("LLM did not answer" in note for note in naive.structured_content["notes"])
        local = error_of(await client.call("lightrag_query", {"query": "What does the OWL-5 sensor measure?", "mode": "local"}))
        assert local["error_code"] == "PROCESSING_FAILED" and "naive" in local["suggested_action"]
