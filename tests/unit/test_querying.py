"""How tool arguments become LightRAG's QueryParam (history trimming, context-only mode)."""

from __future__ import annotations

from typing import Any

from protocol import methods as m
from rag_worker.operations import querying


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
    assert param.enable_rerank is False  # explicit: LightRAG's env default would warn on every query
