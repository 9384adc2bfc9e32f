"""Readable text for tool results (LibreChat shows the model only the text content).

Text is written for a model's context window (SPEC §4): each fact once, passages once with
their source on the same line, lists as compact lines, no per-call boilerplate. Tools without
their own renderer get their `message` followed by the rest of the result as compact
`key: value` lines, so fields added later still show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Renderer = Callable[[dict[str, Any]], str]

MAX_LIST_LINE = 150
ENTITY_LIMIT = 20
RELATION_LIMIT = 20
DESCRIPTION_CHARS = 240
STATED_MIN_CHARS = 12  # a string field the message quotes word for word (an id, a diagram) is not repeated
MIN_SENTENCE_CHARS = 20  # shorter pieces ("Yes.", headings) may repeat without saying a fact twice
_SENTENCE_MARKS = ".!?:"
_BREAK = "\x00"  # where `_sentences` cuts
_STATUS_WORDS = {"answered": "answered", "context_only": "retrieved context", "no_results": "no results"}


# ------------------------------------------------------------------------------ generic results
def render_json(result: dict[str, Any]) -> str:
    """The message, then every other field as compact lines (what the message already says
    word for word, e.g. a Mermaid diagram, is not repeated)."""
    return render_compact(result)


def render_compact(result: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """`message` first, then the remaining fields as `key: value` lines; `skip` names fields
    (at any depth) the tool's message already states."""
    message = result.get("message")
    message = message if isinstance(message, str) and message else ""
    rest = {
        key: value
        for key, value in result.items()
        if key != "message" and not (isinstance(value, str) and len(value) >= STATED_MIN_CHARS and value in message)
    }
    lines = [message] if message else []
    lines.extend(compact_lines(rest, skip=frozenset(skip)))
    return "\n".join(lines)


def compact_renderer(*skip: str) -> Renderer:
    """A renderer for a tool whose message already states the fields `skip` names."""

    def render(result: dict[str, Any]) -> str:
        return render_compact(result, skip)

    return render


def compact_lines(mapping: Mapping[str, Any], indent: str = "", skip: frozenset[str] = frozenset()) -> list[str]:
    """One line per field; objects of plain values inline, lists of objects one item a line."""
    lines: list[str] = []
    for key, value in mapping.items():
        if _empty(value) or key in skip:
            continue
        if isinstance(value, list) and any(isinstance(item, dict) for item in value):
            lines.append(f"{indent}{key} ({len(value)}):")
            lines.extend(f"{indent}- {_inline(item, skip)}" for item in value if not _empty(item))
        elif isinstance(value, dict) and any(_structured(v) for v in value.values()):
            lines.append(f"{indent}{key}:")
            lines.extend(compact_lines(value, indent + "  ", skip))
        else:
            lines.append(f"{indent}{key}: {_inline(value, skip)}")
    return lines


def _structured(value: Any) -> bool:
    """An object, or a list of objects: worth lines of its own rather than one inline value."""
    if isinstance(value, dict):
        return not _empty(value)
    return isinstance(value, list) and any(isinstance(item, dict) for item in value)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _inline(value: Any, skip: frozenset[str] = frozenset()) -> str:
    if isinstance(value, dict):
        counts = all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
        parts = [
            f"{key}={_inline(item, skip)}" if not isinstance(item, dict) else f"{key} ({_inline(item, skip)})"
            for key, item in value.items()
            if not _empty(item) and key not in skip and not (counts and item == 0)
        ]
        return ", ".join(parts) or "none"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(item, skip) for item in value) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split())


# ------------------------------------------------------------------------------ ingestion and status
# What an ingestion's or a status's message states for each document (rag_worker.operations.indexing
# and progress): its text does not repeat them as `key: value` lines.
DOCUMENT_STATED = ("filename", "status", "action", "words", "pages", "chunks", "entities", "relations",
                   "processing_time_s", "progress", "error")


def render_ingest(result: dict[str, Any]) -> str:
    """An ingestion: the message (what happened, the counts, how to follow up), then the other facts once."""
    return render_compact(result, DOCUMENT_STATED)


def render_status(result: dict[str, Any]) -> str:
    """A status: the message says each document's state and the knowledge base's counts; a batch's
    own view (its message and items) is rendered as is, without the workspace counts repeated."""
    if result.get("batch_id"):
        return render_compact(result, ("counts", "pipeline"))
    return render_compact(result, (*DOCUMENT_STATED, "counts", "pipeline", "track_id"))


def render_document_text(result: dict[str, Any]) -> str:
    """A page of a document: where it is in the document, the outline (first page), then the text as is."""
    lines = [str(result.get("message") or "")]
    if result.get("outline"):
        lines.append("Outline: " + "; ".join(str(heading) for heading in result["outline"]))
    return "\n".join(line for line in lines if line) + "\n\n" + str(result.get("text") or "")


# ------------------------------------------------------------------------------ documents
def render_documents(result: dict[str, Any]) -> str:
    """The listing: the header (totals and paging) once, then one short line per document."""
    lines = [str(result.get("message") or "")]
    by_type = (result.get("statistics") or {}).get("by_file_type") or {}
    if len(by_type) > 1:
        lines.append("By type: " + _inline(by_type))
    lines.extend(document_line(doc) for doc in result.get("documents") or [])
    return "\n".join(line for line in lines if line)


def document_line(doc: Mapping[str, Any]) -> str:
    """`doc-… report.pdf processed · 12 p · 3,400 words · 14 chunks · 2025-11-20`, at most 150 characters."""
    name = str(doc.get("filename") or doc.get("title") or "")
    facts = [f"{doc.get('id')} {name} {doc.get('status')}"]
    if doc.get("error_message"):  # before the optional facts: a long line is cut at the end
        facts.append(f"error: {_bounded(str(doc['error_message']), 60)}")
    for key, unit in (("pages", "p"), ("words", "words"), ("chunk_count", "chunks"), ("entity_count", "entities")):
        if doc.get(key):
            facts.append(f"{doc[key]:,} {unit}")
    if doc.get("created_at"):
        facts.append(str(doc["created_at"])[:10])
    title = doc.get("title")
    if title and title != name:
        facts.append(f'"{title}"')
    if doc.get("metadata"):
        facts.append(_inline(doc["metadata"]))
    return _bounded(" · ".join(facts), MAX_LIST_LINE)


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------ queries
def render_query(result: dict[str, Any]) -> str:
    """Answer or passages (each with its source on its line), then entities and relations
    once, then one short line of metadata; no sentence is written twice."""
    seen: set[str] = set()
    lines: list[str] = []
    if result.get("answer"):
        lines.append(str(result["answer"]))
        _remember(str(result["answer"]), seen)
    lines.extend(str(note) for note in result.get("notes") or [])
    sources = result.get("sources") or []
    if sources and result.get("answer"):
        lines.append("Sources: " + "; ".join(f"[{i}] {source_label(s)}" for i, s in enumerate(sources, 1)))
    elif sources:
        lines.extend(passage_line(index, source, seen) for index, source in enumerate(sources, 1))
    lines.extend(_graph_lines(result, seen))
    lines.append(_query_meta(result))
    return "\n".join(lines)


def source_label(source: Mapping[str, Any]) -> str:
    """`report.pdf p.3 (doc-…, chunk 2, 0.82)`: where a passage comes from, in one line."""
    positions = source.get("positions") or {}
    page = positions.get("page") if isinstance(positions, dict) else None
    where = [str(source["document_id"])] if source.get("document_id") else []
    chunk = positions.get("chunk_index") if isinstance(positions, dict) else None
    if chunk is not None:
        where.append(f"chunk {chunk}")
    if source.get("relevance_score") is not None:
        where.append(f"{source['relevance_score']:.2f}")
    name = str(source.get("filename") or "")
    name += f" p.{page}" if page else ""
    return f"{name} ({', '.join(where)})".strip() if where else name


def passage_line(index: int, source: Mapping[str, Any], seen: set[str]) -> str:
    """`[1] report.pdf (doc-…, 0.82): the passage`, sentences already shown replaced by '…'."""
    return f"[{index}] {source_label(source)}: {_new_sentences(str(source.get('content') or ''), seen) or '…'}"


def _graph_lines(result: Mapping[str, Any], seen: set[str]) -> list[str]:
    """Entities and relations once: those the passages already explain share one line, the
    others get a line with what only they say."""
    entities = [
        (f"{entity.get('name')} ({entity.get('type')})", _described(entity.get("description"), seen))
        for entity in (result.get("entities") or [])[:ENTITY_LIMIT]
    ]
    relations = []
    for relation in (result.get("relationships") or [])[:RELATION_LIMIT]:
        keywords = _bounded(str(relation.get("keywords") or ""), 60)
        name = f"{relation.get('source')} → {relation.get('target')}" + (f" ({keywords})" if keywords else "")
        relations.append((name, _described(relation.get("description"), seen)))
    return _named_lines("Entities", entities) + _named_lines("Relations", relations)


def _named_lines(title: str, items: list[tuple[str, str]]) -> list[str]:
    plain = [name for name, described in items if not described]
    lines = [f"{title}: " + "; ".join(plain)] if plain else []
    lines.extend(f"- {name}{described}" for name, described in items if described)
    if lines and not plain:
        lines.insert(0, f"{title}:")
    return lines


def _described(description: Any, seen: set[str]) -> str:
    """`: what this description says that was not shown yet`, or "" when it adds no sentence."""
    text = _new_sentences(str(description or "").replace("<SEP>", " "), seen)
    # Labels ("Section \"Budget\":") and short pieces ("Document title.") say no fact of their own.
    if not any(len(piece) >= MIN_SENTENCE_CHARS and not piece.endswith(":") for piece in _sentences(text)):
        return ""
    return f": {_bounded(text, DESCRIPTION_CHARS)}"


def _query_meta(result: Mapping[str, Any]) -> str:
    meta = result.get("metadata") or {}
    status = _STATUS_WORDS.get(str(result.get("status")), str(result.get("status")))
    return (
        f"({result.get('mode')} · {status} · {meta.get('chunks_used', 0)} passages, "
        f"{meta.get('entities_used', 0)} entities, {meta.get('relations_used', 0)} relations · "
        f"{meta.get('processing_time_s', 0)} s)"
    )


def _sentences(text: str) -> list[str]:
    """Sentences (and headings, list items, "Label:" prefixes) of a text, whitespace collapsed.

    A piece ends at a line break or at [.!?:] before a space; string methods, not a regex
    split per line: every query result's passages go through here."""
    flat = _BREAK.join(" ".join(line.split()) for line in text.splitlines())
    for mark in _SENTENCE_MARKS:
        flat = flat.replace(mark + " ", mark + _BREAK)
    return [piece for piece in flat.split(_BREAK) if piece]


def _remember(text: str, seen: set[str]) -> None:
    seen.update(sentence for sentence in _sentences(text) if len(sentence) >= MIN_SENTENCE_CHARS)


def _new_sentences(text: str, seen: set[str]) -> str:
    """The text without the sentences already shown (each shown one is marked by '…')."""
    kept: list[str] = []
    for sentence in _sentences(text):
        if len(sentence) >= MIN_SENTENCE_CHARS and sentence in seen:
            if kept[-1:] != ["…"]:
                kept.append("…")
            continue
        kept.append(sentence)
        if len(sentence) >= MIN_SENTENCE_CHARS:
            seen.add(sentence)
    return "" if kept == ["…"] else " ".join(kept)
