"""The lexical index (`rag_worker.storage.lexical_index`): what it keeps whole, what a question
searches it with, and that a question is never FTS syntax."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_worker.storage import lexical_index
from rag_worker.storage.hybrid import fused_keys
from rag_worker.storage.lexical_index import Entry, Fts5LexicalIndex, match_expression, question_terms

REPORTS = {
    "r1": "The technician fitted part PX-4471-KQ. Mail aspammer@website.com about v9.30.728; invoiced 52,318.07 euros.",
    "r2": "The technician fitted part PX-4417-KQ. Mail ops@website.com about v9.30.729; invoiced 52,318.70 euros.",
    "r3": "Die Wartung der Kläranlage in Münster übernahm die Firma Brenner. Fehlercode E40213 wurde protokolliert.",
    "r4": "Routine inspection of the cooling loops found no defects; the technician signed the work order.",
    "r5": "Routine inspection of the paint line found no defects; the technician signed the work order.",
}


@pytest.fixture
def index(tmp_path: Path) -> Fts5LexicalIndex:
    index = Fts5LexicalIndex(tmp_path / "lexical.sqlite3")
    index.add([Entry("passage", key, text) for key, text in REPORTS.items()])
    return index


def first(index: Fts5LexicalIndex, question: str) -> str | None:
    identifiers, words = index.search("passage", question, 3)
    hits = identifiers or words
    return hits[0].key if hits else None


@pytest.mark.parametrize(("question", "expected"), [
    ("Which report lists part PX-4471-KQ?", "r1"),
    ("Who wrote from aspammer@website.com?", "r1"),
    ("Which unit runs firmware v9.30.729?", "r2"),
    ("Which repair was invoiced at 52,318.07 euros?", "r1"),
    ("Which repair cost 52318.70?", "r2"),
    ("Wo wurde Fehlercode E40213 protokolliert?", "r3"),
])
def test_codes_addresses_versions_and_amounts_match_the_passage_quoting_them(
        index: Fts5LexicalIndex, question: str, expected: str) -> None:
    assert first(index, question) == expected


def test_non_english_words_match_without_diacritics_or_stemming(index: Fts5LexicalIndex) -> None:
    assert first(index, "Wer übernahm die Wartung der Klaranlage in Munster?") == "r3"


def test_identifiers_and_numbers_are_searched_apart_from_words() -> None:
    identifiers, words = question_terms("Who fitted part PX-4471-KQ with code E40213 in Münster?")
    assert identifiers == ["px4471kq", "4471", "e40213"]
    assert words == ["fitted", "part", "px", "kq", "code", "munster"]


def test_words_in_most_entries_are_not_searched(index: Fts5LexicalIndex) -> None:
    identifiers, words = index.search("passage", "technician", 5)  # in 4 of 5 entries
    assert identifiers == [] and words == []


def test_what_is_common_follows_every_write_to_the_index(index: Fts5LexicalIndex) -> None:
    """The entries a search weighs terms by are kept between writes: each write counts again."""
    assert first(index, "Brenner") == "r3"  # 1 of 5
    index.add([Entry("passage", f"b{n}", "Brenner again") for n in range(2)])
    assert first(index, "Brenner") is None  # 3 of 7: common now
    index.add([], removed=[("passage", "b0"), ("passage", "b1")])
    assert first(index, "Brenner") == "r3"
    index.add([Entry("passage", f"x{n}", "filler") for n in range(20)])
    index.add([Entry("passage", f"b{n}", "Brenner again") for n in range(2)])
    assert first(index, "Brenner") is not None  # 3 of 27
    index.clear()
    assert first(index, "Brenner") is None


def test_a_search_matches_at_most_max_matched_entries_the_rarest_terms_first(
        index: Fts5LexicalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A term under `COMMON_SHARE` but in more entries than a search may rank is left out (its
    hits would be picked nearly at random); the rarer terms fill that budget first."""
    index.add([Entry("passage", f"f{n}", "filler") for n in range(60)])
    index.add([Entry("passage", f"b{n}", "Brenner checked the valves") for n in range(8)])  # brenner: 9 of 77
    index.add([Entry("passage", f"p{n}", "the pumps ran") for n in range(4)])

    def words(question: str) -> set[str]:
        return {hit.key for hit in index.search("passage", question, 20)[1]}

    monkeypatch.setattr(lexical_index, "MAX_MATCHED", 10)
    assert words("Brenner") == {"r3", *(f"b{n}" for n in range(8))}
    assert words("Brenner pumps Kläranlage") == {"r3", "p0", "p1", "p2", "p3"}  # 1 + 4, and brenner's 9 over 10
    monkeypatch.setattr(lexical_index, "MAX_MATCHED", 5)
    assert words("Brenner") == set()  # 12 % of the entries, and over the budget


def test_a_search_returns_its_best_entries_by_bm25_names_weighing_twice(tmp_path: Path) -> None:
    """Of 40 entries naming the valve once to five times, in the name or the text, the 6 a search
    keeps are BM25's best over all 40, best first (ties by entry order)."""
    index = Fts5LexicalIndex(tmp_path / "lexical.sqlite3")
    index.add([Entry("entity", f"e{n}", "valve " * (n % 5 + 1) + "filler " * (n % 7), name="Valve" if n % 3 == 0 else f"part {n}")
               for n in range(40)])
    index.add([Entry("entity", f"other{n}", "pumps only", name=f"pump {n}") for n in range(200)])  # valve: in 1 of 6
    ranked = index._db.execute(
        "SELECT e.key FROM fts_entity JOIN entries e ON e.id = fts_entity.rowid WHERE fts_entity MATCH '\"valve\"' "
        "ORDER BY bm25(fts_entity, 2.0, 1.0), fts_entity.rowid").fetchall()
    assert [hit.key for hit in index.search("entity", "Which valve?", 6)[1]] == [key for (key,) in ranked[:6]]


@pytest.mark.parametrize("question", [
    'part "PX-4471-KQ" OR NEAR(a b) AND NOT x*', "col:value ^start", '""" unbalanced (', "-- ; DROP TABLE entries",
    "{name body}: technician", "",
])
def test_fts_syntax_in_a_question_is_harmless(index: Fts5LexicalIndex, question: str) -> None:
    index.search("passage", question, 3)  # no sqlite3.OperationalError
    assert index.count() == len(REPORTS)


def test_the_match_expression_quotes_every_term() -> None:
    assert match_expression(['a"b', "c"]) == '"a""b" OR "c"'


def found(index: Fts5LexicalIndex, question: str) -> set[str]:
    identifiers, words = index.search("passage", question, 5)
    return {hit.key for hit in identifiers + words}


def test_removed_entries_are_no_longer_found(index: Fts5LexicalIndex) -> None:
    index.add([], removed=[("passage", "r1")])
    assert "r1" not in found(index, "Which report lists part PX-4471-KQ from aspammer@website.com?")
    assert index.count() == len(REPORTS) - 1


def test_an_entry_added_again_replaces_the_old_text(index: Fts5LexicalIndex) -> None:
    index.add([Entry("passage", "r1", "Part ZZ-1000-AA was fitted.")])
    assert "r1" not in found(index, "aspammer@website.com") and first(index, "part ZZ-1000-AA") == "r1"
    assert index.count() == len(REPORTS)


def test_the_relations_of_a_deleted_entity_are_removed(tmp_path: Path) -> None:
    index = Fts5LexicalIndex(tmp_path / "lexical.sqlite3")
    index.add([Entry("relation", "rel-1", "fitted PX-4471-KQ", name="Anna PX-4471-KQ", src="Anna", tgt="PX-4471-KQ"),
               Entry("relation", "rel-2", "signed E40213", name="Bob E40213", src="Bob", tgt="E40213")])
    index.remove_relations_of("PX-4471-KQ")
    assert [h.key for h in index.search("relation", "E40213 or PX-4471-KQ", 5)[0]] == ["rel-2"]


def test_fusion_ranks_an_identifier_hit_above_the_top_vector_result() -> None:
    assert fused_keys(["v1", "v2", "v3"], ["x"], [])[:2] == ["x", "v1"]


def test_fusion_ranks_what_both_sides_found_first() -> None:
    assert fused_keys(["v1", "v2", "v3"], [], ["w", "v3"])[0] == "v3"
