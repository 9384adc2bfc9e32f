"""The answer written from passages merged across knowledge bases (SPEC §3 "Search by default"):
LightRAG's own answer prompt around the merged passages, each document named with its knowledge base."""

from __future__ import annotations

import json
from typing import Any

from protocol import methods as m
from rag_worker.operations.merged_answer import answer_prompt


def asked(mode: str) -> dict[str, Any]:
    return m.ANSWER.with_defaults(
        {
            "query": "How many days of leave?",
            "mode": mode,
            "sources": [
                {"filename": "notes.md", "content": "I took 4 days of leave.", "knowledge_base": "default"},
                {"filename": "leave.md", "content": "Employees get 31 days of leave.", "knowledge_base": "handbook"},
                {"filename": "leave.md", "content": "Leave is booked in March.", "knowledge_base": "handbook"},
            ],
            "entities": [{"name": "Quistcorp", "type": "organization", "description": "The employer."}],
        }
    )


def chunk_lines(prompt: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in prompt.splitlines() if line.startswith('{"reference_id"')]


def test_every_passage_is_in_the_prompt_with_a_reference_naming_its_knowledge_base() -> None:
    prompt = answer_prompt(asked("mix"))
    assert [(c["reference_id"], c["content"][:9]) for c in chunk_lines(prompt)] == [
        ("1", "I took 4 "),
        ("2", "Employees"),
        ("2", "Leave is "),
    ]
    assert "[1] default: notes.md\n[2] handbook: leave.md" in prompt


def test_graph_modes_use_lightrags_answer_prompt_with_the_graph_items_and_naive_its_passage_prompt() -> None:
    from lightrag.prompt import PROMPTS

    graph, naive = answer_prompt(asked("mix")), answer_prompt(asked("naive"))
    assert graph.startswith(PROMPTS["rag_response"][:200]) and '"name": "Quistcorp"' in graph
    assert naive.startswith(PROMPTS["naive_rag_response"][:200]) and "Quistcorp" not in naive
    assert "{context_data}" not in graph and "{content_data}" not in naive
