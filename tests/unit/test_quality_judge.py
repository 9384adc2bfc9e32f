"""The junk rules scripts/bench_quality.py judges entity names by (issue 17's examples)."""

from __future__ import annotations

import pytest

pytest.importorskip("stop_words")  # the judge's lists (a development dependency of the benchmark)

from scripts.bench_quality import DocumentView, WordLists, judge_word_lists, verdict  # noqa: E402

TEXT = (
    "The siege of Vicksburg began in May. Quiet fell on the town; the quiet lasted. Grant wrote to "
    "Lincoln from Vicksburg. Use vim to edit, or start Vim from the menu: in Vim, press i."
)
GERMAN = "Die Version der Datei wird gelesen. Die Pakete werden installiert. APT liest die Datei."


@pytest.fixture(scope="module")
def lists() -> WordLists:
    return judge_word_lists()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("RA", "short"), ("R2", "short"), ("Perhaps", "stop-word"), ("Too", "stop-word"), ("und", "stop-word"),
        ("Sei X", "fragment"), ("Press G", "fragment"), ("Quiet", "common-word"), ("VICKSBUEG", "variant"),
        ("VICKSBURG", "variant"), ("VICKSB", "variant"), ("DieGruppenoperationvonGaufX", "run-together"),
        ("TsS", "odd-case"), ("Vicksburg", "ok"), ("Grant", "ok"), ("Vim", "ok"), ("Ulysses S. Grant", "ok"),
    ],
)
def test_english_names_get_the_rule_the_issue_names(name: str, expected: str, lists: WordLists) -> None:
    doc = DocumentView("doc", "en", TEXT)
    doc.names = {"Vicksburg": 9, name: 1} if name != "Vicksburg" else {"Vicksburg": 9}
    assert verdict(name, doc, lists) == expected


def test_a_german_noun_used_after_an_article_is_a_common_noun_but_an_acronym_is_not(lists: WordLists) -> None:
    doc = DocumentView("doc", "de", GERMAN)
    assert verdict("Version", doc, lists) == "common-noun"
    assert verdict("Die Pakete", doc, lists) == "fragment"
    assert verdict("APT", doc, lists) == "ok"
