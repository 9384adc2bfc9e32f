"""The server's instructions: the no-LLM note said once there, not in every result (issue 12), and
only tools the profile advertises are named (issue 26)."""

from __future__ import annotations

import re

import pytest

from config.settings import load_settings
from mcp_front.catalogue import TOOLS, Catalogue
from mcp_front.server import instructions_for

NO_LLM = load_settings({"HOME": "/nonexistent"})


def test_without_an_llm_the_instructions_say_queries_return_passages() -> None:
    assert "No LLM is configured" in instructions_for(NO_LLM, Catalogue(TOOLS))


def test_with_an_llm_the_instructions_carry_no_llm_note() -> None:
    settings = load_settings({"HOME": "/nonexistent", "LLM_BINDING": "openai", "LLM_MODEL": "gpt-4o-mini"})
    assert "No LLM" not in instructions_for(settings, Catalogue(TOOLS))


@pytest.mark.parametrize("profile", ["librechat", "default", "all", "librechat,lightrag_insert_file", "health_check"])
def test_the_instructions_name_only_tools_the_profile_advertises(profile: str) -> None:
    catalogue = Catalogue(TOOLS, profile=profile)
    advertised = {tool.name for tool in catalogue.list_tools()}
    named = set(re.findall(r"\b(?:lightrag|upload|query|health)_[a-z_]+\b", instructions_for(NO_LLM, catalogue)))
    assert named <= advertised, named - advertised


def test_pointing_at_documents_is_mentioned_only_where_a_path_tool_is_advertised() -> None:
    assert "by path" not in instructions_for(NO_LLM, Catalogue(TOOLS, profile="librechat"))
    assert "by path" in instructions_for(NO_LLM, Catalogue(TOOLS, profile="librechat,lightrag_insert_file"))
