"""The tool catalogue drives listing, validation, aliases and the README table."""

from __future__ import annotations

import json

import pytest

from mcp_front.catalogue import TOOLS, Catalogue, tools_markdown
from protocol import ErrorCode, RagError
from tests.conftest import PROJECT_ROOT


def test_default_profile_lists_canonical_tools_without_aliases_or_debug() -> None:
    names = [tool.name for tool in Catalogue(TOOLS).list_tools()]
    assert "lightrag_health_check" in names
    assert "health_check" not in names and "lightrag_debug" not in names


def test_the_default_profile_advertises_one_tool_per_job() -> None:
    names = [tool.name for tool in Catalogue(TOOLS).list_tools()]
    assert names == [
        "upload_to_lightrag",
        "lightrag_insert_text",
        "lightrag_get_status",
        "lightrag_query",
        "lightrag_insert_file",
        "lightrag_batch_process",
        "lightrag_list_documents",
        "lightrag_read_document",
        "lightrag_list_knowledge_bases",
        "lightrag_delete_documents",
        "lightrag_get_graph",
        "lightrag_search_entities",
        "lightrag_get_entity_relationships",
        "lightrag_update_entity",
        "lightrag_clear_cache",
        "lightrag_get_system_stats",
        "lightrag_health_check",
    ]


SEED_NAMES = [
    *("upload_to_lightrag", "query_lightrag", "health_check"),  # seed 000
    *("lightrag_search_code", "lightrag_index_codebase", "lightrag_get_entity"),  # seed 003
    *("lightrag_visualize_subgraph", "lightrag_get_indexing_status"),
]


@pytest.mark.parametrize("profile", ["default", "librechat", "lightrag_query", "all"])
def test_every_seed_name_stays_callable_whatever_is_advertised(profile: str) -> None:
    catalogue = Catalogue(TOOLS, profile=profile)
    assert all(catalogue.lookup(name) is not None for name in SEED_NAMES)


def test_the_librechat_profile_is_the_seed_trio_plus_status_list_delete_and_read() -> None:
    names = [tool.name for tool in Catalogue(TOOLS, profile="librechat").list_tools()]
    assert names == [
        "upload_to_lightrag",
        "query_lightrag",
        "health_check",
        "lightrag_get_status",
        "lightrag_list_documents",
        "lightrag_delete_documents",
        "lightrag_read_document",  # LibreChat reads no resources: whole documents come through a tool
    ]


def test_alias_defaults_apply_only_to_their_alias_and_explicit_arguments_win() -> None:
    catalogue = Catalogue(TOOLS)
    graph = catalogue.lookup("lightrag_get_graph")
    assert graph is not None
    assert catalogue.arguments_for(graph, "lightrag_get_graph", {}) == {}
    visual = catalogue.arguments_for(graph, "lightrag_visualize_subgraph", {"entity": "X"})
    assert visual["output_format"] == "mermaid" and visual["entity"] == "X"
    explicit = catalogue.arguments_for(graph, "lightrag_visualize_subgraph", {"output_format": "json"})
    assert explicit["output_format"] == "json"


def test_aliases_route_to_the_canonical_tool() -> None:
    catalogue = Catalogue(TOOLS)
    assert catalogue.lookup("health_check") is catalogue.lookup("lightrag_health_check")
    assert catalogue.lookup("lightrag_debug") is None


def test_listed_tools_carry_schemas_and_annotations() -> None:
    for tool in Catalogue(TOOLS, profile="all").list_tools():
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema.get("additionalProperties") is False
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.annotations is not None and tool.annotations.title
        assert tool.annotations.read_only_hint is not None


def test_a_comma_list_profile_and_an_unknown_name() -> None:
    assert [t.name for t in Catalogue(TOOLS, profile="health_check").list_tools()] == ["health_check"]
    with pytest.raises(ValueError, match="unknown tools: nope"):
        Catalogue(TOOLS, profile="lightrag_health_check,nope")


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"include_detailed": "yes"}, "include_detailed: must be of type boolean"),
        ({"colour": "red"}, "unknown field(s) colour"),
    ],
)
def test_schema_violations_name_the_field(arguments: dict, fragment: str) -> None:
    catalogue = Catalogue(TOOLS)
    with pytest.raises(RagError) as caught:
        catalogue.validate(catalogue.lookup("lightrag_health_check"), arguments)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID_PARAMETER
    assert fragment in caught.value.message


def test_huge_values_are_not_echoed_back() -> None:
    catalogue = Catalogue(TOOLS, debug=True)
    tool = catalogue.lookup("lightrag_debug")
    with pytest.raises(RagError) as caught:
        catalogue.validate(tool, {"action": "sleep" * 100_000})  # type: ignore[arg-type]
    assert len(caught.value.message) < 1000


def test_readme_tool_table_is_generated_from_the_catalogue() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert tools_markdown(TOOLS) in readme, "regenerate with: python -m mcp_front --tools-markdown"


def librechat_function_size(profile: str) -> int:
    """Characters of the advertised tool definitions as LibreChat sends them on every turn."""
    tools = Catalogue(TOOLS, profile=profile).list_tools()
    functions = [{"name": t.name, "description": t.description or "", "parameters": t.input_schema} for t in tools]
    return len(json.dumps(functions, separators=(",", ":")))


@pytest.mark.parametrize(("profile", "budget"), [("default", 16_000), ("librechat", 6_000)])
def test_each_profile_fits_its_tool_definition_budget(profile: str, budget: int) -> None:
    assert librechat_function_size(profile) <= budget


def coerced(name: str, arguments: dict) -> dict:
    catalogue = Catalogue(TOOLS)
    tool = catalogue.lookup(name)
    assert tool is not None
    prepared = catalogue.arguments_for(tool, name, arguments)
    catalogue.validate(tool, prepared)
    return prepared


def test_numeric_strings_become_integers_and_numbers() -> None:
    assert coerced("lightrag_query", {"query": "q", "top_k": "2", "cosine_threshold": "0.5"}) == {
        "query": "q",
        "top_k": 2,
        "cosine_threshold": 0.5,
    }


def test_boolean_strings_become_booleans() -> None:
    assert coerced("query_lightrag", {"query": "q", "include_sources": "false", "max_results": "2"}) == {
        "query": "q",
        "include_sources": False,
        "max_results": 2,
    }


def test_strings_inside_nested_objects_and_arrays_are_coerced() -> None:
    arguments = {
        "items": [{"item_type": "text", "content": "7", "metadata": {"year": "2024"}}],
        "batch_options": {"max_concurrent": "2", "stop_on_error": "TRUE"},
    }
    prepared = coerced("lightrag_batch_process", arguments)
    assert prepared["batch_options"] == {"max_concurrent": 2, "stop_on_error": True}
    assert prepared["items"][0]["content"] == "7"  # a string field stays a string
    assert prepared["items"][0]["metadata"] == {"year": "2024"}  # metadata takes strings: left alone


def test_string_fields_keep_numeric_text() -> None:
    assert coerced("lightrag_query", {"query": "2"}) == {"query": "2"}


def test_a_fraction_for_an_integer_field_is_still_refused() -> None:
    with pytest.raises(RagError) as caught:
        coerced("query_lightrag", {"query": "q", "max_results": "2.5"})
    assert "max_results: must be of type integer" in caught.value.message


def test_a_non_numeric_string_gets_the_schema_error() -> None:
    with pytest.raises(RagError) as caught:
        coerced("query_lightrag", {"query": "q", "max_results": "two"})
    assert caught.value.code is ErrorCode.INVALID_PARAMETER
    assert "max_results: must be of type integer" in caught.value.message


def test_coerced_values_are_still_bounded() -> None:
    with pytest.raises(RagError) as caught:
        coerced("query_lightrag", {"query": "q", "max_results": "5000"})
    assert "max_results: must satisfy maximum 50" in caught.value.message


def test_a_tool_list_may_add_tools_to_a_profile() -> None:
    names = [tool.name for tool in Catalogue(TOOLS, profile="librechat,lightrag_insert_file").list_tools()]
    assert names[-1] == "lightrag_insert_file" and "query_lightrag" in names and len(names) == len(set(names))


def test_null_for_an_optional_argument_means_not_given() -> None:
    prepared = coerced("lightrag_query", {"query": "q", "mode": None, "top_k": None, "conversation_history": None})
    assert prepared == {"query": "q"}


def test_null_inside_an_optional_object_means_not_given() -> None:
    prepared = coerced("lightrag_delete_documents", {"document_ids": ["a.md"], "delete_options": {"force_delete": None}})
    assert prepared == {"document_ids": ["a.md"], "delete_options": {}}


def test_null_for_a_required_argument_is_still_refused_naming_it() -> None:
    with pytest.raises(RagError) as caught:
        coerced("query_lightrag", {"query": None})
    assert "query" in caught.value.message and caught.value.code is ErrorCode.INVALID_PARAMETER


@pytest.mark.parametrize("name", ["lightrag_list_knowledge_bases", "health_check", "lightrag_get_status"])
def test_an_empty_input_on_a_tool_called_without_arguments_is_ignored(name: str) -> None:
    assert coerced(name, {"input": ""}) == {}


def test_a_non_empty_stray_input_is_still_an_unknown_field() -> None:
    with pytest.raises(RagError) as caught:
        coerced("health_check", {"input": "status please"})
    assert "unknown field(s) input" in caught.value.message
