"""A context-only query result fits LIGHTRAG_MCP_RESULT_CHARS: every passage stays, cut to the
sentences that share most with the question; the graph gets what the passages leave."""

from __future__ import annotations

from rag_worker.operations.result_budget import fit_passage, fit_result, question_terms
from scripts.corpus import generated_pages

QUESTION = "Who built the HERON-1000 prototype?"
FACT = "The HERON-1000 prototype was built by Dr. Alice Johnson in Oslo."


def passage(number: int, with_fact: bool = False) -> str:
    _, pages = generated_pages(number, seed=3)
    text = pages[0][:1400]
    middle = text.index(". ", 600) + 2
    return text[:middle] + FACT + " " + text[middle:] if with_fact else text


def test_the_sentence_that_answers_the_question_survives_the_cut() -> None:
    cut = fit_passage(passage(1, with_fact=True), question_terms(QUESTION), 400)
    assert FACT in cut and len(cut) <= 400 and "…" in cut


def test_a_passage_that_fits_is_left_whole() -> None:
    text = passage(2)
    assert fit_passage(text, question_terms(QUESTION), len(text)) == text


def test_codes_and_names_weigh_more_than_common_words() -> None:
    terms = question_terms(QUESTION)
    assert terms["heron-1000"] > terms["built"] and "the" not in terms and "who" not in terms


def test_a_result_keeps_every_passage_and_fits_the_budget() -> None:
    sources = [{"content": passage(n, with_fact=n == 7)} for n in range(10)]
    entities = [{"name": f"Entity {n}", "type": "concept", "description": "A description. " * 30} for n in range(20)]
    relations = [{"source": "A", "target": f"B{n}", "keywords": "k", "description": "Why. " * 60} for n in range(20)]
    fit_result(QUESTION, sources, entities, relations, 6000)
    read = sum(len(s["content"]) for s in sources) + sum(len(str(v)) for x in entities + relations for v in x.values())
    assert len(sources) == 10 and read <= 6000, read
    assert FACT in sources[7]["content"]
    assert entities and relations  # the graph keeps its most relevant items, not none
