"""A deterministic built-in "LLM" that lets LightRAG build a knowledge graph with no model.

``builtin_llm_model_func`` is passed to ``LightRAG(llm_model_func=...)`` in the
embedded default (no ``LLM_BINDING``). It recognises which LightRAG 1.5.7 prompt
it is answering by stable markers of the templates in ``lightrag/prompt.py`` and
answers in exactly the format LightRAG parses:

* entity extraction (text and JSON modes) -> rows from ``text_entities.extract``;
* the gleaning "continue" prompt -> nothing more to add;
* keyword extraction -> ``{"high_level_keywords": [...], "low_level_keywords": [...]}``;
* description summary -> a deduplicated merge of the descriptions;
* anything else (answer generation, bypass) -> an honest "no LLM configured" text.

The markers are module constants so they can be checked against LightRAG's real
templates by the tests; a LightRAG upgrade that changes a template fails those
tests instead of silently producing an empty graph.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from . import text_lexicon as lx
from .text_entities import DEFAULT_MAX_ENTITIES, DEFAULT_MAX_RECORDS, ExtractionResult, extract
from .text_query import extract_query_keywords
from .text_sentences import merge_descriptions

logger = logging.getLogger(__name__)

BUILTIN_LLM_NAME = "builtin-extractor"

# LightRAG constructor settings that suit the built-in extractor.
# * ``llm_model_name`` is part of LightRAG's LLM-cache key (get_llm_cache_identity):
#   left at its default "gpt-4o-mini", the built-in's cached extractions would be
#   replayed after a real model of that name is configured.
# * Gleaning can only answer "nothing more" here; skipping it saves a queued call
#   and the token counting LightRAG does before it.
# * Description merging: every time a document adds a fragment to an entity or a
#   relation, LightRAG re-embeds it with ALL its fragments joined by <SEP> (up to
#   ``force_llm_summary_on_merge`` fragments and ``summary_max_tokens`` tokens), so
#   a frequent entity's vector text grew past the embedding window and cost as
#   much as a chunk, once per document. With these, 60 tokens trigger our summary
#   (``_answer_summary``: deterministic, about a millisecond), which stays within
#   ``summary_length_recommended`` tokens (~200 characters), so a merged
#   description is about one sentence longer than a fresh one; so does a second
#   fragment (`adapt_lightrag`).
BUILTIN_LIGHTRAG_KWARGS: dict[str, Any] = {
    "llm_model_name": BUILTIN_LLM_NAME,
    "entity_extract_max_gleaning": 0,
    "summary_max_tokens": 60,
    "summary_length_recommended": 50,
}
#: Fragments from which a merged description gets our summary rather than LightRAG's join with
#: <SEP>.  At LightRAG's least (3), a description merged again flipped at every merge between our
#: summary ([summary, fragment, new] -> summary) and [summary, new] joined ("summary<SEP>new"): in
#: a batch of 100 documents at 5,400, 1,449 of the 1,622 relations whose text changed had a new
#: description, each embedded again and leaving a dead row in the vector index.  Set on the built
#: object: LightRAG's constructor warns below 3, where with a paid LLM every merge is a call.
BUILTIN_SUMMARY_FROM = 2
#: LightRAG's key for a cached summary (`generate_cache_key("default", "summary", hash)`, 1.5.7).
_SUMMARY_CACHE_KEYS = "default:summary:"


def adapt_lightrag(rag: Any) -> None:
    """What the built-in extractor changes on a LightRAG object once built: summaries from the
    second fragment (`BUILTIN_SUMMARY_FROM`), and none of them cached.  LightRAG caches every
    summary with its prompt, read twice and written once a summary, and never deletes one (they
    belong to no chunk): 143,738 rows at 5,500 documents, for a text that takes about a
    millisecond to compute again.  Extraction answers are still cached (a delete rebuilds from them)."""
    rag.force_llm_summary_on_merge = BUILTIN_SUMMARY_FROM
    cache = rag.llm_response_cache
    get_by_id, upsert = cache.get_by_id, cache.upsert

    async def get_by_id_but_summaries(key: str) -> Any:
        return None if key.startswith(_SUMMARY_CACHE_KEYS) else await get_by_id(key)

    async def upsert_but_summaries(data: dict[str, Any]) -> Any:
        kept = {key: value for key, value in data.items() if not key.startswith(_SUMMARY_CACHE_KEYS)}
        return await upsert(kept) if kept else None

    cache.get_by_id, cache.upsert = get_by_id_but_summaries, upsert_but_summaries

# PROMPTS["DEFAULT_TUPLE_DELIMITER"] / ["DEFAULT_COMPLETION_DELIMITER"] in 1.5.7.
TUPLE_DELIMITER = "<|#|>"
COMPLETION_DELIMITER = "<|COMPLETE|>"

# --- Prompt markers (all verified against lightrag 1.5.7 prompt.py by the tests) ---
# entity_extraction_system_prompt and entity_extraction_json_system_prompt.
EXTRACTION_SYSTEM_MARKER = (
    "You are a Knowledge Graph Specialist responsible for extracting entities and relationships"
)
# entity_extraction_user_prompt and entity_extraction_json_user_prompt.
EXTRACTION_USER_MARKER = "Extract entities and relationships from the `---Input Text---` section below."
# entity_continue_extraction_user_prompt and its JSON twin (the gleaning pass).
GLEANING_MARKER = "Based on the last extraction task, identify and extract any"
# Only the JSON-mode extraction prompts say this.
JSON_MODE_MARKER = "valid JSON object with `entities` and `relationships` arrays"
# How the user prompt fences the chunk: "---Input Text---\n```\n{input_text}\n```\n\n---Output---".
INPUT_START = "---Input Text---\n```\n"
INPUT_END = "\n```\n\n---Output---"
# PROMPTS["entity_extraction_section_context"]: the chunk's heading breadcrumb.
SECTION_CONTEXT_MARKER = "---Section Context---\nSection path of the input text"
# "---Entity Types---\n{entity_types_guidance}\n\n---Output Format Template---" (system prompt).
ENTITY_TYPES_START = "---Entity Types---\n"
ENTITY_TYPES_END = "\n\n---Output Format Template---"
# PROMPTS["keywords_extraction"]: "---Real Data---\nUser Query: {query}\n\n---Output---\nOutput:".
KEYWORDS_MARKER = "You are an expert keyword extractor"
QUERY_START = "---Real Data---\nUser Query: "
QUERY_END = "\n\n---Output---\nOutput:"
# PROMPTS["summarize_entity_descriptions"].
SUMMARY_MARKER = "synthesize a list of descriptions of a given entity or relation"
SUMMARY_LIST_START = "Description List:\n\n```\n"
SUMMARY_LIST_END = "\n```\n\n---Output---"
# PROMPTS["rag_response"] / ["naive_rag_response"]: the system prompt carries the context.
ANSWER_CONTEXT_MARKER = "---Context---"

_LIMITS_RE = re.compile(r"output at most (\d+) total (?:rows|records) and at most (\d+) entity")
_SECTION_PATH_RE = re.compile(r"^Section path of the input text[^\n]*?\): (.*)$", re.MULTILINE)
_SUMMARY_NAME_RE = re.compile(r"^(Entity|Relation) Name: (.*)$", re.MULTILINE)
_SUMMARY_LENGTH_RE = re.compile(r"must not exceed (\d+) tokens")
_TYPE_LINE_RE = re.compile(r"^\s*[-*]\s*`?([A-Za-z][\w ]{0,40}?)`?\s*:", re.MULTILINE)
# Substrings LightRAG's fix_tuple_delimiter_corruption would turn into a delimiter.
_PIPE_NEAR_MARKUP_RE = re.compile(r"(?<=[<>#|])\||\|(?=[<>#|])")

# Prompts up to this size are answered inline (a 1,200-token chunk takes a few ms);
# bigger ones (custom huge chunks, ~1.2 us per character) go to a worker thread so
# the event loop keeps answering pings meanwhile.
INLINE_PROMPT_CHARS = 40_000

# The shortest summary, whatever length the prompt asks for: one description fragment.
SUMMARY_MIN_CHARS = 160

# Hard caps whatever the prompt allows: the graph should stay readable.
_MAX_ENTITIES_CAP = 60
_MAX_RECORDS_CAP = 150

NO_LLM_NOTICE = (
    "No language model is configured for this knowledge base: it runs with the built-in "
    "deterministic extractor, so no answer was generated. Answer from the retrieved context "
    "and sources instead. Set LLM_BINDING and LLM_MODEL to get generated answers and a "
    "better knowledge graph."
)

_CATEGORY_FALLBACKS: dict[str, tuple[str, ...]] = {
    lx.PERSON: (lx.PERSON,), lx.ORGANIZATION: (lx.ORGANIZATION,), lx.LOCATION: (lx.LOCATION,),
    lx.EVENT: (lx.EVENT,), lx.CONCEPT: (lx.CONCEPT,), lx.METHOD: (lx.METHOD, lx.CONCEPT),
    lx.CONTENT: (lx.CONTENT, lx.ARTIFACT), lx.DATA: (lx.DATA, lx.CONCEPT),
    lx.ARTIFACT: (lx.ARTIFACT,), lx.DATE: (lx.DATE, "Time", lx.DATA), lx.QUANTITY: (lx.QUANTITY, "Money", lx.DATA),
    lx.OTHER: (),
}


class PromptKind(enum.StrEnum):
    """Which LightRAG prompt a call is answering."""

    EXTRACTION = "extraction"
    EXTRACTION_JSON = "extraction_json"
    GLEANING = "gleaning"
    GLEANING_JSON = "gleaning_json"
    KEYWORDS = "keywords"
    SUMMARY = "summary"
    ANSWER = "answer"


def classify_prompt(prompt: str, system_prompt: str | None = None,
                    response_format: Any = None) -> PromptKind:
    """Identify the LightRAG prompt from its markers (see the module constants)."""
    system = system_prompt or ""
    json_mode = JSON_MODE_MARKER in prompt or (
        isinstance(response_format, dict) and response_format.get("type") == "json_object"
        and EXTRACTION_SYSTEM_MARKER in system
    )
    # The gleaning prompt is checked first: its text does not embed the chunk.
    if GLEANING_MARKER in prompt[:400]:
        return PromptKind.GLEANING_JSON if json_mode else PromptKind.GLEANING
    if EXTRACTION_USER_MARKER in prompt[:400] and INPUT_START in prompt:
        return PromptKind.EXTRACTION_JSON if json_mode else PromptKind.EXTRACTION
    if KEYWORDS_MARKER in prompt[:400] and QUERY_START in prompt:
        return PromptKind.KEYWORDS
    if SUMMARY_MARKER in prompt[:600] and SUMMARY_LIST_START in prompt:
        return PromptKind.SUMMARY
    return PromptKind.ANSWER


def _between(text: str, start: str, end: str) -> str | None:
    """Text between the first ``start`` and the last ``end`` (the rest if ``end`` is missing)."""
    begin = text.find(start)
    if begin < 0:
        return None
    begin += len(start)
    stop = text.rfind(end)
    return text[begin:stop] if stop >= begin else text[begin:]


def _field(text: str) -> str:
    """One-line field text that LightRAG's record parser cannot split or misread."""
    text = " ".join(str(text).split())
    text = text.replace(TUPLE_DELIMITER, " ").replace(COMPLETION_DELIMITER, " ")
    text = _PIPE_NEAR_MARKUP_RE.sub("¦", text)
    return text.replace("<#>", "<# >").strip()


@functools.lru_cache(maxsize=16)
def _type_table(guidance: str) -> dict[str, str]:
    """Allowed entity types of the prompt's ``---Entity Types---`` section, by folded name."""
    return {m.group(1).strip().replace(" ", "").replace("_", "").lower(): m.group(1).strip()
            for m in _TYPE_LINE_RE.finditer(guidance)}


def _type_mapper(system_prompt: str | None) -> Callable[[str], str]:
    """Map our categories onto the types the prompt allows (custom guidance included)."""
    guidance = _between(system_prompt or "", ENTITY_TYPES_START, ENTITY_TYPES_END) or ""
    table = _type_table(guidance[:4000])
    if not table:
        return lambda category: category

    def mapped(category: str) -> str:
        for candidate in _CATEGORY_FALLBACKS.get(category, (category,)):
            found = table.get(candidate.lower())
            if found:
                return found
        return table.get("other", lx.OTHER)

    return mapped


def _limits(prompt: str) -> tuple[int, int]:
    match = _LIMITS_RE.search(prompt[:4000])
    records, entities = (int(match.group(1)), int(match.group(2))) if match else (
        DEFAULT_MAX_RECORDS, DEFAULT_MAX_ENTITIES)
    return min(records, _MAX_RECORDS_CAP), min(entities, _MAX_ENTITIES_CAP)


def _extract_from_prompt(prompt: str, system_prompt: str | None) -> ExtractionResult:
    text = _between(prompt, INPUT_START, INPUT_END) or ""
    head = prompt[: max(0, prompt.find(INPUT_START))]
    section = ""
    if SECTION_CONTEXT_MARKER in head:
        match = _SECTION_PATH_RE.search(head)
        section = match.group(1).strip() if match else ""
    max_records, max_entities = _limits(head)
    result = extract(text, section_path=section, max_entities=max_entities, max_records=max_records)
    mapper = _type_mapper(system_prompt)
    result.entities = [type(e)(e.name, mapper(e.category), e.description) for e in result.entities]
    return result


def format_text_records(result: ExtractionResult) -> str:
    """Render a result as LightRAG's delimited rows followed by the completion marker."""
    d = TUPLE_DELIMITER
    rows = [f"entity{d}{_field(e.name)}{d}{_field(e.category)}{d}{_field(e.description)}"
            for e in result.entities]
    rows += [f"relation{d}{_field(r.source)}{d}{_field(r.target)}{d}{_field(r.keywords)}"
             f"{d}{_field(r.description)}" for r in result.relations]
    rows.append(COMPLETION_DELIMITER)
    return "\n".join(rows)


def format_json_records(result: ExtractionResult) -> str:
    """Render a result as the JSON object of LightRAG's JSON extraction mode."""
    return json.dumps({
        "entities": [{"name": _field(e.name), "type": _field(e.category),
                      "description": _field(e.description)} for e in result.entities],
        "relationships": [{"source": _field(r.source), "target": _field(r.target),
                           "keywords": _field(r.keywords), "description": _field(r.description)}
                          for r in result.relations],
    }, ensure_ascii=False)


def _answer_keywords(prompt: str) -> str:
    query = _between(prompt, QUERY_START, QUERY_END) or ""
    high, low = extract_query_keywords(query)
    return json.dumps({"high_level_keywords": high, "low_level_keywords": low}, ensure_ascii=False)


def _answer_summary(prompt: str) -> str:
    block = _between(prompt, SUMMARY_LIST_START, SUMMARY_LIST_END) or ""
    descriptions: list[str] = []
    for line in block.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
            text = value.get("Description", "") if isinstance(value, dict) else str(value)
        except (json.JSONDecodeError, AttributeError):
            text = line  # a hand-made list: keep the raw line
        if str(text).strip():
            descriptions.append(str(text))
    length = _SUMMARY_LENGTH_RE.search(prompt)
    # ~4 characters a token; never below one description fragment.
    max_chars = min(2400, max(SUMMARY_MIN_CHARS, int(length.group(1)) * 4)) if length else 1600
    merged = merge_descriptions(descriptions, max_chars=max_chars)
    if not merged:
        name = _SUMMARY_NAME_RE.search(prompt)
        merged = f"{name.group(2).strip()} is mentioned in the documents." if name else "No description."
    return merged


def _answer_fallback(system_prompt: str | None) -> str:
    system = system_prompt or ""
    if ANSWER_CONTEXT_MARKER not in system:
        return ("No language model is configured, so this request (which needs one, e.g. the "
                "bypass query mode) cannot be answered. Use a retrieval mode such as mix, hybrid "
                "or naive to get context and sources, or set LLM_BINDING and LLM_MODEL.")
    excerpts: list[str] = []
    for line in system.splitlines():
        if len(excerpts) >= 3:
            break
        if line.startswith('{"reference_id"'):
            try:
                chunk = json.loads(line)
            except json.JSONDecodeError:
                continue
            content = " ".join(str(chunk.get("content", "")).split())
            if content:
                short = content if len(content) <= 240 else content[:239].rstrip() + "…"
                excerpts.append(f"[{chunk.get('reference_id', '?')}] {short}")
    if not excerpts:
        return NO_LLM_NOTICE
    return NO_LLM_NOTICE + "\n\nMost relevant retrieved excerpts:\n" + "\n".join(excerpts)


def answer_prompt(prompt: str, system_prompt: str | None = None, **kwargs: Any) -> str:
    """Answer one LightRAG prompt synchronously (the work behind ``builtin_llm_model_func``)."""
    prompt = prompt if isinstance(prompt, str) else str(prompt or "")
    kind = classify_prompt(prompt, system_prompt, kwargs.get("response_format"))
    if kind is PromptKind.EXTRACTION:
        return format_text_records(_extract_from_prompt(prompt, system_prompt))
    if kind is PromptKind.EXTRACTION_JSON:
        return format_json_records(_extract_from_prompt(prompt, system_prompt))
    if kind is PromptKind.GLEANING:
        # Extraction is deterministic: a second pass would find nothing new.
        return COMPLETION_DELIMITER
    if kind is PromptKind.GLEANING_JSON:
        return json.dumps({"entities": [], "relationships": []})
    if kind is PromptKind.KEYWORDS:
        return _answer_keywords(prompt)
    if kind is PromptKind.SUMMARY:
        return _answer_summary(prompt)
    return _answer_fallback(system_prompt)


async def builtin_llm_model_func(
    prompt: str,
    system_prompt: str | None = None,
    history_messages: list[dict[str, Any]] | None = None,
    **kwargs: Any,
) -> str:
    """LightRAG ``llm_model_func`` backed by the deterministic extractor.

    Accepts and ignores LightRAG's extra keyword arguments (``hashing_kv``,
    ``stream``, ``enable_cot``, ``history_messages``, ...); only
    ``response_format`` matters (JSON extraction mode). A normal chunk takes a few
    milliseconds of regex work, so it runs inline; prompts over
    ``INLINE_PROMPT_CHARS`` run in a worker thread. It never raises for odd input.
    """
    started = time.perf_counter()
    response_format = kwargs.get("response_format")
    text = prompt if isinstance(prompt, str) else str(prompt or "")
    if len(text) + len(system_prompt or "") > INLINE_PROMPT_CHARS:
        answer = await asyncio.to_thread(answer_prompt, text, system_prompt, response_format=response_format)
    else:
        answer = answer_prompt(text, system_prompt, response_format=response_format)
    if logger.isEnabledFor(logging.DEBUG):
        kind = classify_prompt(text, system_prompt, response_format)
        logger.debug("builtin extractor answered a %s prompt in %.1f ms (%d chars)",
                     kind.value, (time.perf_counter() - started) * 1000, len(answer))
    return answer
