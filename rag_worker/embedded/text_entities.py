"""Deterministic entity and relation extraction from Markdown, prose and code.

This is the "model" behind the built-in extractor: regexes and small word lists,
no randomness, stable ordering. It finds

* Markdown headings (the H1 as the document title, deeper levels as sections),
* capitalised multi-word names (people, organisations, places, events, ...),
  acronyms and CamelCase product names,
* code identifiers: declarations in code blocks or raw source, backticked names,
  ``snake_case`` / ``camelCase`` / ``dotted.calls()`` and file names in prose,

and relates them by sentence co-occurrence, section membership (heading →
entities under it, heading → subheading) and code structure (class → method,
function → function it calls). Descriptions are the sentences that mention an
entity, so the entity and relation vectors carry the document's meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import text_lexicon as lx
from .text_document import Candidate, DocumentBuilder, parse_document
from .text_scan import bounded
from .text_scan import extract_query_keywords as extract_query_keywords
from .text_scan import merge_descriptions as merge_descriptions

MAX_ENTITY_DESC_CHARS = 420
MAX_RELATION_DESC_CHARS = 360
MAX_HEADING_LINKS = 15  # entities linked to one heading, so it cannot become a giant hub
DEFAULT_MAX_ENTITIES = 40
DEFAULT_MAX_RECORDS = 100

_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity row: name, one of the ``text_lexicon`` categories, description."""

    name: str
    category: str
    description: str


@dataclass(frozen=True)
class ExtractedRelation:
    """An undirected relation row between two extracted entity names."""

    source: str
    target: str
    keywords: str
    description: str


@dataclass
class ExtractionResult:
    """Entities (in first-mention order) and relations (most significant first)."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)


@dataclass
class _Rel:
    a: str
    b: str
    kind: str  # "cooccurrence", "section", "subsection", "defines", "calls"
    first: int
    count: int = 0
    words: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)


def _resolve(builder: DocumentBuilder) -> None:
    """Map short aliases onto full names and drop unconfirmed sentence starters."""
    multi: dict[str, list[str]] = {}
    for cand in builder.cands.values():
        if " " in cand.name and cand.category in (lx.PERSON, lx.ORGANIZATION):
            parts = cand.name.casefold().split()
            for token in dict.fromkeys((parts[0], parts[-1])):
                multi.setdefault(token, []).append(cand.key)
    alias: dict[str, str] = {}
    for cand in builder.cands.values():
        targets = multi.get(cand.key, [])
        if " " not in cand.name and cand.group >= 2 and len(targets) == 1:
            alias[cand.key] = targets[0]
    for cand in builder.cands.values():
        if cand.tentative and cand.key not in alias:
            alias[cand.key] = ""  # drop
    if not alias:
        return
    for unit in builder.units:
        remapped: list[tuple[int, str]] = []
        for offset, key in unit.mentions:
            target = alias.get(key, key)
            if target:
                remapped.append((offset, target))
                if target != key:
                    builder.cands[target].count += 1
        unit.mentions = remapped
    for key in alias:
        builder.cands.pop(key, None)


def _select(builder: DocumentBuilder, max_entities: int) -> list[Candidate]:
    """Keep the ``max_entities`` most useful candidates, returned in first-mention order."""

    def rank(c: Candidate) -> tuple[int, int, int]:
        group = c.group if c.group < 2 else (2 if c.strength >= 1 or " " in c.name else 3)
        return (group, -c.count, c.first)

    chosen = sorted(builder.cands.values(), key=rank)[:max(0, max_entities)]
    return sorted(chosen, key=lambda c: c.first)


def _mention_index(builder: DocumentBuilder) -> tuple[dict[str, list[int]], dict[int, int]]:
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


def _describe(cand: Candidate, builder: DocumentBuilder, by_key: dict[str, list[int]],
              first_in_section: dict[int, int]) -> str:
    """The declaration (if any) plus the first sentences that mention the entity."""
    parts: list[str] = [cand.decl] if cand.decl else []
    if cand.level:
        # A heading is best described by the first sentence of its section.
        heading_units = [i for i, u in enumerate(builder.units)
                         if u.kind == "heading" and u.mentions and u.mentions[0][1] == cand.key]
        for heading_index in heading_units[:1]:
            if heading_index in first_in_section:
                parts.append(builder.units[first_in_section[heading_index]].text)
    seen = {p.casefold() for p in parts}
    for index in by_key.get(cand.key, []):
        if sum(len(p) for p in parts) >= MAX_ENTITY_DESC_CHARS or len(parts) >= 3:
            break
        text = builder.units[index].text
        if text.casefold() not in seen:
            parts.append(text)
            seen.add(text.casefold())
    description = bounded(" ".join(parts), MAX_ENTITY_DESC_CHARS)
    if not description or description.casefold() == cand.name.casefold():
        description = f"{cand.name} is mentioned in the document."
    return description


def _salient(words_text: str, exclude: set[str]) -> list[str]:
    found: list[str] = []
    for word in _WORD_RE.findall(words_text):
        low = word.lower().strip("'’-")
        if len(low) >= 3 and low not in lx.STOPWORDS and low not in exclude and low not in found:
            found.append(low)
    return found


def _relations(builder: DocumentBuilder, selected: dict[str, Candidate]) -> list[_Rel]:
    """Co-occurrence, section, subsection and code relations, most frequent first."""
    rels: dict[tuple[str, str], _Rel] = {}
    order = 0

    def touch(a: str, b: str, kind: str) -> _Rel | None:
        # Undirected pair key; the stored direction is the first touch's, except
        # that code structure (class -> method, caller -> callee) always wins.
        nonlocal order
        if a == b or a not in selected or b not in selected:
            return None
        pair = (a, b) if a < b else (b, a)
        order += 1
        rel = rels.get(pair)
        if rel is None:
            rel = rels[pair] = _Rel(a, b, kind, order)
        elif kind in ("defines", "calls"):
            rel.a, rel.b, rel.kind = a, b, kind
        rel.count += 1
        return rel

    for unit in builder.units:
        if unit.kind != "prose":
            continue
        keys = [k for _, k in sorted(unit.mentions) if k in selected]
        keys = list(dict.fromkeys(keys))
        offsets = {k: o for o, k in sorted(unit.mentions, reverse=True)}
        # Words of any name in the sentence are not relation keywords.
        names = {w for k in keys for w in selected[k].key.split()}
        window = len(keys) if len(keys) <= 5 else 3
        for i, a in enumerate(keys):
            for b in keys[i + 1: i + 1 + window]:
                rel = touch(a, b, "cooccurrence")
                if rel is None:
                    continue
                if len(rel.sentences) < 2 and unit.text not in rel.sentences:
                    rel.sentences.append(unit.text)
                if not rel.words:
                    lo, hi = sorted((offsets[a], offsets[b]))
                    between = _salient(unit.text[lo:hi], names)[:3]
                    rel.words = between or _salient(unit.text, names)[:3]
    heading_links: dict[int, int] = {}
    for unit in builder.units:
        if unit.section < 0 or unit.kind == "heading":
            continue
        head_key = builder.units[unit.section].mentions[0][1]
        for _, key in sorted(unit.mentions):
            if heading_links.get(unit.section, 0) >= MAX_HEADING_LINKS:
                break
            rel = touch(head_key, key, "section")
            if rel is not None and rel.count == 1:
                heading_links[unit.section] = heading_links.get(unit.section, 0) + 1
                head = selected[head_key].name
                rel.sentences.append(f'The section "{head}" mentions {selected[key].name}: {unit.text}')
    for parent, child in builder.subsections:
        p_key, c_key = builder.units[parent].mentions[0][1], builder.units[child].mentions[0][1]
        rel = touch(p_key, c_key, "subsection")
        if rel is not None and not rel.sentences:
            rel.sentences.append(f'"{selected[c_key].name}" is a subsection of "{selected[p_key].name}".')
    for a, b, kind, text in builder.code_rels:
        rel = touch(a.casefold(), b.casefold(), kind)
        if rel is not None:
            if text not in rel.sentences:
                rel.sentences.insert(0, text)
    return sorted(rels.values(), key=lambda r: (-r.count, r.first))


_KEYWORDS_BY_KIND: dict[str, str] = {
    "cooccurrence": "co-occurrence",
    "section": "section content, mentions",
    "subsection": "subsection, document structure",
    "defines": "defines method, class member, code structure",
    "calls": "calls, function call, code dependency",
}


def extract(text: str, section_path: str = "", max_entities: int = DEFAULT_MAX_ENTITIES,
            max_records: int = DEFAULT_MAX_RECORDS) -> ExtractionResult:
    """Extract entities and relations from one chunk of text.

    ``section_path`` is LightRAG's heading breadcrumb (``a → b → c``) for the
    chunk, if any: its last heading becomes the section of the text that precedes
    the chunk's own headings. At most ``max_entities`` entities and
    ``max_records`` rows in total are returned.
    """
    builder = DocumentBuilder()
    if section_path.strip():
        builder.add_heading(section_path.split("→")[-1], 1, synthetic_path=section_path.strip())
    if text.strip():
        parse_document(builder, text)
    _resolve(builder)
    chosen = _select(builder, max_entities)
    selected = {c.key: c for c in chosen}
    by_key, first_in_section = _mention_index(builder)
    entities = [ExtractedEntity(c.name, c.category, _describe(c, builder, by_key, first_in_section))
                for c in chosen]
    room = max(0, max_records - len(entities))
    relations: list[ExtractedRelation] = []
    for rel in _relations(builder, selected)[:room]:
        a, b = selected[rel.a], selected[rel.b]
        keywords = list(dict.fromkeys(rel.words + _KEYWORDS_BY_KIND[rel.kind].split(", ")))
        description = bounded(" ".join(rel.sentences), MAX_RELATION_DESC_CHARS)
        if not description:
            description = f"{a.name} and {b.name} are mentioned together."
        relations.append(ExtractedRelation(a.name, b.name, ", ".join(keywords), description))
    return ExtractionResult(entities, relations)
