"""Readable text for tool results (LibreChat shows the model only the text content).

A renderer turns a result into text that carries all of it; tools without one get their
`message` (when they have one) followed by the result as indented JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

Renderer = Callable[[dict[str, Any]], str]


def render_json(result: dict[str, Any]) -> str:
    """The message, then the rest of the result as JSON — without what the message already
    says word for word (a Mermaid diagram shown in the message is not repeated)."""
    message = result.get("message")
    if not isinstance(message, str) or not message:
        return orjson.dumps(result, option=orjson.OPT_INDENT_2).decode()
    rest = {
        key: value
        for key, value in result.items()
        if key != "message" and not (isinstance(value, str) and len(value) > 80 and value in message)
    }
    return f"{message}\n\n{orjson.dumps(rest, option=orjson.OPT_INDENT_2).decode()}"


def render_query(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if result.get("answer"):
        lines.append(str(result["answer"]))
    elif result.get("context"):
        lines.append(str(result["context"]))
    lines.extend(str(note) for note in result.get("notes") or [])
    sources = result.get("sources") or []
    if sources:
        lines.append("\nSources:")
        for index, source in enumerate(sources, 1):
            score = source.get("relevance_score")
            lines.append(
                f"[{index}] {source.get('filename')} (document {source.get('document_id')}, "
                f"chunk {source.get('chunk_id')}" + (f", relevance {score:.2f})" if score is not None else ")")
            )
    entities = result.get("entities") or []
    if entities:
        lines.append("Entities: " + ", ".join(f"{e.get('name')} ({e.get('type')})" for e in entities[:40]))
    meta = result.get("metadata") or {}
    lines.append(
        f"(mode {result.get('mode')}; status {result.get('status')}; {meta.get('chunks_used', 0)} chunks, "
        f"{meta.get('entities_used', 0)} entities, {meta.get('relations_used', 0)} relations; "
        f"{meta.get('processing_time_s', 0)} s)"
    )
    return "\n".join(lines)
