"""Entity search over a small graph: exact, fuzzy (typos), regex (bounded), names in a text.
Semantic search needs the embedding index and is covered by tests/integration/test_graph_tools.py."""

from __future__ import annotations

import pytest

from protocol import ErrorCode, RagError
from rag_worker.graph.search import (
    SearchRequest,
    compile_pattern,
    exact_search,
    fuzzy_search,
    highlight,
    names_in_text,
    regex_search,
)
from tests.unit.graph_fixtures import edge, node, people_snapshot, snapshot

MAX_CHARS = 300


def names(outcome) -> list[str]:  # type: ignore[no-untyped-def]
    return [match.name for match in outcome.matches]


def test_exact_ignores_case_unless_asked() -> None:
    graph = people_snapshot()
    assert names(exact_search(graph, SearchRequest("helena vargas", "exact"))) == ["Helena Vargas"]
    assert names(exact_search(graph, SearchRequest("helena vargas", "exact", case_sensitive=True))) == []
    assert names(exact_search(graph, SearchRequest("Helena", "exact"))) == []  # a part is not the name
    found = exact_search(graph, SearchRequest("Helena Vargas", "exact")).matches[0]
    assert found.score == 1.0 and found.highlighted == "«Helena Vargas»"


@pytest.mark.parametrize("typo", ["Helena Varga", "Hlena Vargas", "helena  VARGAS", "Heléna Vargas", "Vargas"])
def test_fuzzy_finds_a_name_despite_typos(typo: str) -> None:
    outcome = fuzzy_search(people_snapshot(), SearchRequest(typo))
    assert names(outcome)[0] == "Helena Vargas", names(outcome)
    assert "Alice Johnson" not in names(outcome)
    assert 0.7 <= outcome.matches[0].score <= 1.0 and "fuzzy name match" in outcome.matches[0].reason


def test_fuzzy_highlights_the_matching_part_and_rejects_unrelated_text() -> None:
    graph = people_snapshot()
    assert fuzzy_search(graph, SearchRequest("Vargas")).matches[0].highlighted == "Helena «Vargas»"
    assert names(fuzzy_search(graph, SearchRequest("quantum chromodynamics"))) == []
    strict = fuzzy_search(graph, SearchRequest("Helena Varga", min_score=0.99))
    assert names(strict) == []


@pytest.mark.parametrize(
    ("query", "fragment", "whole"),
    [("Grant", "RA", "Ulysses S. Grant"), ("Auflage", "Ge", "Auflagen"), ("Abraham Lincoln", "Li", "Lincoln")],
)
def test_fuzzy_does_not_reward_a_fragment_of_the_query(query: str, fragment: str, whole: str) -> None:
    """A short name found inside one of the query's words (OCR or extraction junk) is not a
    match; a name that contains the query, or is a whole word of it, still is."""
    graph = snapshot([node(fragment, "other"), node(whole, "person")], [])
    assert names(fuzzy_search(graph, SearchRequest(query))) == [whole]


def test_fuzzy_filters_by_type_and_can_search_descriptions() -> None:
    graph = people_snapshot()
    assert names(fuzzy_search(graph, SearchRequest("Helena Vargas", entity_types=frozenset({"organization"})))) == []
    by_description = fuzzy_search(graph, SearchRequest("commissioned the reactor", fields=("description",)))
    assert names(by_description) == ["Helena Vargas"] and "description" in by_description.matches[0].reason


def test_regex_matches_names_and_highlights_the_match() -> None:
    graph = people_snapshot()
    outcome = regex_search(graph, SearchRequest(r"^[A-Z]\w+ (King|Stone)$", "regex"), MAX_CHARS)
    assert sorted(names(outcome)) == ["Bob Stone", "Carol King"]
    lower = regex_search(graph, SearchRequest("labs", "regex"), MAX_CHARS)
    assert names(lower) == ["Erin Labs"] and lower.matches[0].highlighted == "Erin «Labs»"
    assert names(regex_search(graph, SearchRequest("labs", "regex", case_sensitive=True), MAX_CHARS)) == []
    described = regex_search(graph, SearchRequest(r"commission\w+", "regex", fields=("description",)), MAX_CHARS)
    assert names(described) == ["Helena Vargas"] and "«commissioned»" in described.matches[0].reason


@pytest.mark.parametrize("pattern", ["(unclosed", "a**", "[z-a]", "x{2,1}", "trailing\\"])
def test_an_invalid_pattern_is_invalid_parameter(pattern: str) -> None:
    with pytest.raises(RagError) as caught:
        compile_pattern(pattern, False, MAX_CHARS)
    assert caught.value.code is ErrorCode.INVALID_PARAMETER and "regular expression" in caught.value.message


def test_an_overlong_pattern_is_invalid_parameter() -> None:
    with pytest.raises(RagError) as caught:
        regex_search(people_snapshot(), SearchRequest("a" * (MAX_CHARS + 1), "regex"), MAX_CHARS)
    assert caught.value.code is ErrorCode.INVALID_PARAMETER and str(MAX_CHARS) in caught.value.message


def test_a_catastrophic_pattern_is_stopped_with_processing_timeout() -> None:
    long_name = "a" * 5000 + "!"
    graph = snapshot([node(long_name), node("Alice")], [edge(long_name, "Alice")])
    with pytest.raises(RagError) as caught:
        regex_search(graph, SearchRequest(r"(a+)+$", "regex"), MAX_CHARS)
    assert caught.value.code is ErrorCode.PROCESSING_TIMEOUT and "backtrack" in caught.value.message


def test_names_in_a_text_are_whole_words_longest_first() -> None:
    graph = people_snapshot()
    found = names_in_text(graph, "Did helena vargas meet Carol King at Erin Labs? Zedekiah did not.")
    assert found == ["Helena Vargas", "Carol King", "Erin Labs"]  # "Zed" inside "Zedekiah" is no mention


def test_highlight_marks_a_span() -> None:
    assert highlight("Helena Vargas", 7, 13) == "Helena «Vargas»"
    assert highlight("x", 0, 0) == "«x»"
