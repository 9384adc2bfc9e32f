"""Whole documents for a model that cannot read MCP resources (LibreChat): a document's text by
name, a page at a time, with its outline; and "summarise / outline / what is this about" asked of
the knowledge base, answered with the document's opening and outline instead of passages that
merely resemble the word "summary".
"""

from __future__ import annotations

import re
from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.operations.listing import workspace_views
from rag_worker.storage.catalog import document_name, state_of
from rag_worker.storage.workspace import Workspace

OUTLINE_ITEMS = 30
OUTLINE_ITEM_CHARS = 80
OUTLINE_SHARE = 0.2  # of a whole-document answer's budget, for the outline
MIN_NAME_CHARS = 4  # a file name's stem shorter than this is not taken as named by a question
# Requests about a document as a whole, not a fact inside it.
WHOLE_DOCUMENT = re.compile(
    r"\b(summar(y|ies|ise|ize|ising|izing)|outline|overview|tl;?dr|gist|table of contents|main points|key points"
    r"|what('s| is| are)? (this|it|that|the (document|file|pdf|report|paper))( \w+)? about)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(
    r"^(#{1,6}\s+\S.*"  # Markdown
    r"|\d{1,2}(\.\d{1,2}){0,3}\.?\s+[A-Z][^.!?]*"  # numbered: "2.1 Scope and Terms"
    r"|[A-Z][A-Z0-9 ,&'-]{3,60})$"  # ALL CAPS
)


def whole_document_request(question: str) -> bool:
    """Does the question ask about a document as a whole (summary, outline, what it is about)?"""
    return WHOLE_DOCUMENT.search(question) is not None


async def document_text(ws: Workspace, doc_id: str) -> str:
    """The text LightRAG stored for a document (or the text waiting in our intake queue)."""
    queued = ws.intake.get(doc_id)
    stored = {"content": queued.text} if queued else await ws.rag.full_docs.get_by_id(doc_id) or {}
    return str(stored.get("content") or "")


def outline(text: str) -> list[str]:
    """The document's headings in order (Markdown, numbered or ALL CAPS lines), bounded."""
    found: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if len(line) <= OUTLINE_ITEM_CHARS and _HEADING.match(line) and line not in found:
            found.append(line.lstrip("#").strip() if line.startswith("#") else line)
            if len(found) == OUTLINE_ITEMS:
                break
    return found


def page(text: str, offset: int, limit: int) -> tuple[str, int | None]:
    """`limit` characters of `text` from `offset`, ending at a paragraph, sentence or word break
    when one is near; and where the next page starts (None at the end)."""
    end = offset + limit
    if end >= len(text):
        return text[offset:], None
    window = text[offset:end]
    for mark in ("\n\n", ". ", "\n", " "):
        cut = window.rfind(mark)
        if cut >= limit // 2:
            end = offset + cut + len(mark)
            break
    return text[offset:end], end


async def named_document(ctx: RequestContext, ws: Workspace, question: str) -> tuple[str, dict[str, Any]] | None:
    """The document a whole-document question is about: the one whose file name (or its stem, or
    its title) the question names, else the only one; None otherwise. Failed documents do not
    count; a document still indexing does (its text is there, and a row that just finished may
    still read as queued for a moment)."""
    views = [view for view in (await workspace_views(ctx, ws)).values() if view["status"] != "failed"]
    asked = question.lower()
    named = [view for view in views if any(len(label) >= MIN_NAME_CHARS and label.lower() in asked for label in _labels(view))]
    chosen = named[:1] or (views if len(views) == 1 else [])
    if not chosen:
        return None
    doc_id = chosen[0]["id"]
    return doc_id, await ws.catalog.get(doc_id) or {}


def _labels(view: dict[str, Any]) -> list[str]:
    base = view["filename"].rsplit("/", 1)[-1]
    return [base, base.rsplit(".", 1)[0], view["title"]]


async def newest_document(ctx: RequestContext, ws: Workspace) -> str | None:
    """The id of the document added last (LibreChat's "the file I just uploaded"), if any."""
    views = await workspace_views(ctx, ws)
    return max(views, key=lambda doc_id: str(views[doc_id]["created_at"] or ""), default=None)


async def text_page(ws: Workspace, doc_id: str, offset: int, limit: int) -> dict[str, Any]:
    """One page of a document's text, where the next starts, and (on the first page) its outline."""
    record = await ws.catalog.get(doc_id) or {}
    row = await ws.status_row(doc_id) or {}
    text = await document_text(ws, doc_id)
    if offset > len(text):
        raise RagError(ErrorCode.INVALID_PARAMETER, f"offset {offset:,} is past the end of the document "
                       f"({len(text):,} characters).", suggested_action="Start at offset 0.")
    piece, next_offset = page(text, offset, limit)
    name = document_name(doc_id, row, record)
    status = state_of(row.get("status"))
    where = f"characters {offset:,}–{offset + len(piece):,} of {len(text):,}"
    then = f"next page: offset {next_offset}" if next_offset is not None else "the end of the document"
    return {"document_id": doc_id, "filename": name, "status": status, "offset": offset, "next_offset": next_offset,
            "total_chars": len(text), "outline": outline(text) if offset == 0 else [], "text": piece,
            "message": f"'{name}' ({doc_id}, {status}): {where}; {then}."}


async def whole_document_result(ctx: RequestContext, ws: Workspace, question: str, budget: int) -> dict[str, Any] | None:
    """A query result holding a document's opening and outline, or None when no one document is meant."""
    found = await named_document(ctx, ws, question)
    if found is None:
        return None
    doc_id, record = found
    name = str(record.get("filename") or doc_id)
    text = await document_text(ws, doc_id)
    headings = outline(text)
    outline_text = "; ".join(headings)[: int(budget * OUTLINE_SHARE)]
    opening, next_offset = page(text, 0, budget - len(outline_text))
    read_on = (f" Read on with lightrag_read_document {{\"document\": \"{name}\", \"offset\": {next_offset}}}."
               if next_offset is not None else " That is the whole document.")
    notes = [f"'{name}' as a whole: its opening ({len(opening):,} of {len(text):,} characters)"
             f"{' and outline' if headings else ''}, for a summary or an overview.{read_on}"]
    if outline_text:
        notes.append(f"Outline: {outline_text}")
    source = {"document_id": doc_id, "filename": name, "chunk_id": "", "content": opening,
              "relevance_score": None, "positions": {"offset": 0}}
    return {"status": "context_only", "answer": None, "sources": [source], "entities": [], "relationships": [],
            "notes": notes}
