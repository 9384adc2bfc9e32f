"""The no-LLM note is said once, in the server's instructions, not in every result (issue 12)."""

from __future__ import annotations

from config.settings import load_settings
from mcp_front.server import instructions_for


def test_without_an_llm_the_instructions_say_queries_return_passages() -> None:
    assert "No LLM is configured" in instructions_for(load_settings({"HOME": "/nonexistent"}))


def test_with_an_llm_the_instructions_carry_no_llm_note() -> None:
    settings = load_settings({"HOME": "/nonexistent", "LLM_BINDING": "openai", "LLM_MODEL": "gpt-4o-mini"})
    assert "No LLM" not in instructions_for(settings)
