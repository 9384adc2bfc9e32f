"""Entity descriptions: one short fragment of the text that mentions the entity.

A code declaration is described by its signature, a heading by its section's first
sentence, anything else by the sentence that defines or first mentions it, cut to a
window around the mention (``window_around``, also used for relation descriptions).
"""

from __future__ import annotations

from .text_document import Candidate, DocumentBuilder
from .text_sentences import bounded

MAX_ENTITY_DESC_CHARS = 160
MAX_CODE_DESC_CHARS = 200  # a declaration keeps its signature
MAX_RELATION_DESC_CHARS = 150


def mention_index(builder: DocumentBuilder) -> tuple[dict[str, list[int]], dict[int, int]]:
    """Prose unit indices per entity key, and the first prose unit of each section.

    Built once per chunk so describing every entity stays linear in the text.
    """
    by_key: dict[str, list[int]] = {}
    first_in_section: dict[int, int] = {}
    for index, unit in enumerate(builder.units):
        if unit.kind != "prose":
            continue
        first_in_section.setdefault(unit.section, index)
        for key in dict.fromkeys(key for _, key in unit.mentions):
            by_key.setdefault(key, []).append(index)
    return by_key, first_in_section


def window_around(text: str, start: int, end: int, limit: int) -> str:
    """At most ``limit`` characters of ``text`` around ``text[start:end]``, cut at words."""
    text = text.strip()
    if len(text) <= limit:
        return text
    limit = max(limit, 8)
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    # Some words before the mention, the rest after it.
    lo = max(0, min(start - limit // 4, len(text) - limit))
    if lo:
        space = text.find(" ", lo)
        lo = space + 1 if 0 <= space < start else lo
    hi = lo + limit - (2 if lo else 1)
    piece = text[lo:hi]
    if hi < len(text):
        space = piece.rfind(" ")
        piece = piece[:space] if space > max(end - lo, limit // 2) else piece
        piece = piece.rstrip(" ,;:") + "…"
    return ("…" + piece) if lo else piece


def mention_offset(unit_text: str, mentions: list[tuple[int, str]], key: str, name: str) -> tuple[int, int]:
    """Span of the entity's mention in the unit (recorded, else found by name, else (0, 0))."""
    for offset, mention_key in mentions:
        if mention_key == key:
            return offset, offset + len(name)
    found = unit_text.casefold().find(name.casefold())
    return (found, found + len(name)) if found >= 0 else (0, 0)


def describe(cand: Candidate, builder: DocumentBuilder, by_key: dict[str, list[int]],
              first_in_section: dict[int, int]) -> str:
    """One short fragment: the declaration, or the sentence that first mentions the entity.

    A heading is described by the first sentence of its section, a term that stands
    alone on its line (a title, a definition list's term) by the line that follows.
    """
    if cand.decl and not cand.level:
        return bounded(cand.decl, MAX_CODE_DESC_CHARS)  # code declaration: signature and docstring
    if cand.level:
        heading_index = next((i for i, u in enumerate(builder.units)
                              if u.kind == "heading" and u.mentions and u.mentions[0][1] == cand.key), -1)
        lead = builder.units[first_in_section[heading_index]].text if heading_index in first_in_section else ""
        if "section path:" in cand.decl or not lead:
            return bounded(cand.decl, MAX_ENTITY_DESC_CHARS)
        prefix = "Document title. " if cand.level == 1 else "Section heading. "
        return prefix + bounded(lead, MAX_ENTITY_DESC_CHARS - len(prefix))
    mentions = by_key.get(cand.key, [])
    if not mentions:
        return f"{cand.name} is mentioned in the document."

    def defining(index: int) -> tuple[int, int]:
        # Best: the name alone on its line with its definition on the next one
        # ("barChart" / "Creates a two-dimensional bar chart."); then a sentence
        # about it (it is the subject); then the first mention.
        unit = builder.units[index]
        if len(unit.text) <= max(40, len(cand.name) + 12) and unit.text.startswith(cand.name):
            following = builder.units[index + 1] if index + 1 < len(builder.units) else None
            alone = following is not None and following.kind == "prose" and following.section == unit.section
            return (0 if alone else 3, index)
        start, _ = mention_offset(unit.text, unit.mentions, cand.key, cand.name)
        return (1 if start <= 4 else 2, index)

    index = min(mentions[:4], key=defining)
    unit = builder.units[index]
    start, end = mention_offset(unit.text, unit.mentions, cand.key, cand.name)
    text = unit.text
    if defining(index)[0] == 0:
        text = f"{text.rstrip('.:')}: {builder.units[index + 1].text}"
    description = window_around(text, start, end, MAX_ENTITY_DESC_CHARS)
    if not description or description.casefold().strip(" .:") == cand.name.casefold():
        description = f"{cand.name} is mentioned in the document."
    return description
