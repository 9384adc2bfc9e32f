"""What a query without an LLM answer hands the calling model, fitted to LIGHTRAG_MCP_RESULT_CHARS.

Without an LLM the model answers from the retrieved context, and it reads that context again on
every later turn of the conversation: ten whole passages plus the graph's entities and relations
came to ~15,000 characters a question. The budget keeps every retrieved passage, in rank order
and with its source, but cuts each one down to the sentences that share the most words with the
question (the sentence that answers it shares the question's names and codes), marking each cut
with "…"; entities and relations get what the passages leave, most relevant first.
"""

from __future__ import annotations

import re
from typing import Any

from rag_worker.embedded.stopwords.en import WORDS as STOPWORDS

GRAPH_SHARE = 0.25  # of the budget, for entities and relations when passages came with them
MIN_PASSAGE_CHARS = 240  # a passage is never cut shorter than this (a sentence and its context)
DESCRIPTION_CHARS = 200  # an entity's or relation's description, as the model reads it
GAP = " … "
_SENTENCE_END = re.compile(r"(?<!\b[A-Z][a-z])(?<!\b[A-Z])(?<=[.!?])\s+|\n+")  # not after "Dr." or "J."
_WORD = re.compile(r"[\w][\w.-]*[\w]|\w", re.UNICODE)


def question_terms(question: str) -> dict[str, int]:
    """The question's content words (lower case) with their weight: codes and numbers weigh most."""
    terms: dict[str, int] = {}
    for word in _WORD.findall(question):
        lowered = word.lower()
        if lowered in STOPWORDS or len(lowered) < 3 and not lowered.isdigit():
            continue
        terms[lowered] = 3 if any(ch.isdigit() for ch in word) or (word.isupper() and len(word) > 1) else 1
    return terms


def fit_passage(text: str, terms: dict[str, int], limit: int) -> str:
    """`text` when it fits in `limit` characters, else its sentences that share most with the
    question (ties: the earlier), in their order, cuts marked with '…'."""
    if len(text) <= limit:
        return text
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
    ranked = sorted(range(len(sentences)), key=lambda i: (-_score(sentences[i], terms), i))
    chosen: set[int] = set()
    used = 0
    for index in ranked:
        cost = len(sentences[index]) + len(GAP)
        if used + cost > limit and chosen:
            continue
        chosen.add(index)
        used += cost
    return _joined(sentences, chosen, limit)


def _score(sentence: str, terms: dict[str, int]) -> int:
    words = {word.lower() for word in _WORD.findall(sentence)}
    return sum(weight for term, weight in terms.items() if term in words)


def _joined(sentences: list[str], chosen: set[int], limit: int) -> str:
    parts: list[str] = []
    for index, sentence in enumerate(sentences):
        if index in chosen:
            parts.append(sentence)
        elif parts[-1:] != ["…"]:
            parts.append("…")
    text = " ".join(parts)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fit_result(question: str, sources: list[dict[str, Any]], entities: list[dict[str, Any]],
               relations: list[dict[str, Any]], budget: int) -> None:
    """Fit a context-only result to `budget` characters, in place (passages, then the graph)."""
    graph = [*entities, *relations]
    graph_budget = int(budget * GRAPH_SHARE) if graph and sources else budget if graph else 0
    passage_budget = budget - graph_budget
    terms = question_terms(question)
    if sources:
        share = max(MIN_PASSAGE_CHARS, passage_budget // len(sources))
        for source in sources:
            source["content"] = fit_passage(str(source.get("content") or ""), terms, share)
        passage_budget -= sum(len(str(s["content"])) for s in sources)
    _fit_graph(entities, relations, graph_budget + max(0, passage_budget))


def _fit_graph(entities: list[dict[str, Any]], relations: list[dict[str, Any]], budget: int) -> None:
    """Keep entities and relations (LightRAG's order: most relevant first), alternating, while they fit."""
    for item in (*entities, *relations):
        description = str(item.get("description") or "")
        if len(description) > DESCRIPTION_CHARS:
            item["description"] = description[: DESCRIPTION_CHARS - 1].rstrip() + "…"
    kept_entities: list[dict[str, Any]] = []
    kept_relations: list[dict[str, Any]] = []
    used = 0
    for index in range(max(len(entities), len(relations))):
        for items, kept in ((entities, kept_entities), (relations, kept_relations)):
            if index < len(items):
                cost = sum(len(str(value)) for value in items[index].values() if value) + 8
                if used + cost <= budget:
                    kept.append(items[index])
                    used += cost
    entities[:] = kept_entities
    relations[:] = kept_relations
