"""The built-in extractor's graph is one a reader accepts (issue 17): no function words, fragments,
sentence-initial capitals, German common nouns or misspelt variants as names; types from dependable
cues; relation keywords that say how two names relate. scripts/bench_quality.py measures the same
on real texts; these tests pin each rule on a sentence."""

from __future__ import annotations

import pytest

from rag_worker.embedded.stopwords import detect_language
from rag_worker.embedded.text_entities import ExtractionResult, extract


def names(result: ExtractionResult) -> set[str]:
    return {entity.name for entity in result.entities}


def types(result: ExtractionResult) -> dict[str, str]:
    return {entity.name: entity.category for entity in result.entities}


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The file lists which versions of the packages are installed and when they change.", "en"),
        ("Die Datei legt fest, welche Versionen der Pakete installiert werden und wann.", "de"),
        ("Le fichier indique quelles versions des paquets sont installées et quand elles changent.", "fr"),
        ("El archivo indica qué versiones de los paquetes se instalan y cuándo cambian.", "es"),
        ("1.4 2.5 | x = y", "en"),
    ],
)
def test_the_language_of_a_chunk_is_told_by_its_function_words(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_function_words_of_every_language_are_never_names() -> None:
    text = ("Die Datei und die Version werden von APT benutzt. Les Paquets sont là. "
            "Los Archivos están aquí. Perhaps Too much.")
    assert names(extract(text)) == {"APT"}


def test_german_common_nouns_are_not_names_but_acronyms_and_cued_names_are() -> None:
    text = ("Die Gruppe der Pakete wird von der APT-Konfigurationsdatei bestimmt. Eine Mahnung zur Vorsicht: "
            "Das Schlüsselwort ist wichtig. Die Siemens AG hat ihren Sitz in Berlin.")
    found = types(extract(text))
    assert set(found) == {"APT", "Siemens AG", "Berlin"}
    assert found["Siemens AG"] == "Organization" and found["Berlin"] == "Location"


def test_names_of_two_characters_or_fewer_are_dropped() -> None:
    assert names(extract("The vectors R2 and R3 span Rn, as Ge showed for the group G.")) == set()


def test_words_run_together_by_a_pdf_are_not_a_name() -> None:
    assert "DieGruppenoperationvonGaufX" not in names(extract("Sei DieGruppenoperationvonGaufX gegeben. Gut."))


def test_a_capital_that_only_opens_a_sentence_line_or_list_item_is_no_name() -> None:
    text = ("Quiet streets surround the harbour. NOTE: Pressing the key moves the cursor.\n\n"
            "2. Press the key again. ---> Roses are red.\n\nSubstation and Harbor")
    assert names(extract(text)) == set()


def test_a_name_confirmed_inside_the_chunk_is_kept_at_a_sentence_start() -> None:
    text = "Pemberton held the town. The garrison under Pemberton surrendered."
    assert names(extract(text)) == {"Pemberton"}


def test_shouted_headlines_and_ocr_misspellings_merge_into_the_name() -> None:
    text = ("THE SIEGE OF VICKSBURG\n\nGrant marched on Vicksburg in May. The guns of Vicksburg fired at "
            "dawn. Pemberton held VICKSBUEG for weeks. The river at VICKSB was high.")
    found = names(extract(text))
    assert "Vicksburg" in found
    assert not {"VICKSBURG", "VICKSBUEG", "Vicksbueg", "VICKSB", "Vicksb"} & found


def test_types_come_from_titles_initials_places_suffixes_dates_amounts_and_keys() -> None:
    found: dict[str, str] = {}
    for text in ("General Ulysses S. Grant reached Vicksburg, Mississippi on July 4, 1863.",
                 "The Kestrel Array received $4.2 million from the Nordic Energy Agency.",
                 "Press CTRL-D in the Vim editor."):
        found |= types(extract(text))
    assert found["Ulysses S. Grant"] == "Person"
    assert found["Vicksburg"] == "Location" and found["Mississippi"] == "Location"
    assert found["July 4, 1863"] == "Date"
    assert found["$4.2 million"] == "Quantity"
    assert found["Nordic Energy Agency"] == "Organization"
    assert found["CTRL-D"] == "Artifact" and found["Vim"] == "Artifact"


def test_an_acronym_takes_the_type_of_the_name_it_abbreviates() -> None:
    text = "In 2001, the Python Software Foundation (PSF) was formed. Zope Corporation was a member of the PSF."
    assert types(extract(text))["PSF"] == "Organization"


def test_relation_keywords_are_the_words_that_link_the_names_without_stop_words() -> None:
    result = extract("The Kestrel Array received funding from the Nordic Energy Agency in 2023. "
                     "Alice Johnson of Acme Corporation opened the office.")
    keywords = {(r.source, r.target): r.keywords for r in result.relations}
    assert keywords[("Kestrel Array", "Nordic Energy Agency")] == "received, funding"
    assert keywords[("Alice Johnson", "Acme Corporation")] == "member"
    german = extract("Die Firma Siemens AG ist ein Kunde und Partner der Deutsche Bahn AG in Berlin.")
    for relation in german.relations:
        assert not {"und", "ist", "ein", "der"} & set(relation.keywords.split(", ")), relation
        assert "co-occurrence" not in relation.keywords


def test_a_relation_is_described_by_the_sentence_that_links_the_names() -> None:
    result = extract("The Kestrel Array received funding from the Nordic Energy Agency in 2023.")
    (relation,) = [r for r in result.relations if {r.source, r.target} == {"Kestrel Array", "Nordic Energy Agency"}]
    assert "received funding from the Nordic Energy Agency" in relation.description
