"""Deterministic entity and relation extraction from Markdown, prose and code.

This is the "model" behind the built-in extractor: regexes and small word lists,
no randomness, stable ordering. It finds

* Markdown headings (the H1 as the document title, deeper levels as sections),
* capitalised multi-word names (people, organisations, places, events, ...),
  acronyms and CamelCase product names,
* code identifiers: declarations in code blocks or raw source, backticked names,
  ``snake_case`` / ``camelCase`` / ``dotted.calls()`` and file names in prose,

and relates them by sentence co-occurrence, section membership (heading →
the entities its section introduces, heading → subheading) and code structure
(class → method, function → function it calls). A description is one short
fragment of the sentence that mentions an entity (or both ends of a relation),
so the entity and relation vectors carry the document's meaning.

Every row costs an embedding: LightRAG embeds each entity ("name\ndescription")
and relation ("keywords\tsource\ntarget\ndescription"), and embeds them again
whenever a later document merges new fragments into them. So the output is
bounded by the chunk's length (``CHARS_PER_ENTITY``, ``CHARS_PER_RELATION``),
most salient first, and every description is one fragment of at most
``MAX_ENTITY_DESC_CHARS`` / ``MAX_RELATION_DESC_CHARS`` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import text_lexicon as lx
from .text_document import Candidate, DocumentBuilder, parse_document
from .text_scan import bounded
from .text_scan import extract_query_keywords as extract_query_keywords
from .text_scan import merge_descriptions as merge_descriptions

MAX_ENTITY_DESC_CHARS = 160
MAX_CODE_DESC_CHARS = 200  # a declaration keeps its signature
MAX_RELATION_DESC_CHARS = 150
MAX_HEADING_LINKS = 2  # a heading is linked to the entities its section introduces first
MAX_RELATION_WORDS = 2  # salient words of the sentence added to a relation's keywords
DEFAULT_MAX_ENTITIES = 40
DEFAULT_MAX_RECORDS = 100
# Density bounds: at most one entity per CHARS_PER_ENTITY characters of the chunk and
# one relation per CHARS_PER_RELATION (never fewer than the minimums), so a chunk of
# 240 tokens (~1,000 characters) yields at most 13 entities and 7 relations.
CHARS_PER_ENTITY = 80
CHARS_PER_RELATION = 150
MIN_ENTITIES = 6
MIN_RELATIONS = 4

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
    gap: int = 1 << 30  # closest distance of the two mentions in one sentence
    rank: int = 0  # a section link's position among its heading's links
    words: list[str] = field(default_factory=list)
    description: str = ""


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


def density_limits(text: str) -> tuple[int, int]:
    """(entities, relations) a chunk of this length may yield (see ``CHARS_PER_ENTITY``)."""
    size = len(text.strip())
    return (max(MIN_ENTITIES, -(-size // CHARS_PER_ENTITY)),
            max(MIN_RELATIONS, -(-size // CHARS_PER_RELATION)))


def _strong_word(name: str) -> bool:
    """An acronym, code, version or CamelCase word: a name even when it stands alone."""
    return (name.isupper() or any(ch.isdigit() for ch in name)
            or any(ch.isupper() for ch in name[1:]) or not name.replace("-", "").isalpha())


def _rank_group(c: Candidate) -> int:
    """0 heading, 1 code declaration, 2 named entity / identifier, 3 plain capitalised word."""
    if c.group < 2:
        return c.group
    return 2 if c.strength >= 1 or " " in c.name or _strong_word(c.name) else 3


def _select(builder: DocumentBuilder, max_entities: int) -> list[Candidate]:
    """Keep the ``max_entities`` most salient candidates, returned in first-mention order.

    Headings and code declarations come first; then every sentence in turn gives
    its most salient entity not chosen yet (named before plain words, frequent
    before rare), round after round, so a bound keeps the chunk's later facts too.
    """
    limit = max(0, max_entities)
    cands = builder.cands

    def rank(key: str) -> tuple[int, int, int]:
        c = cands[key]
        return (_rank_group(c), -c.count, c.first)

    # A plain capitalised word that the chunk also uses in lower case ("Budget" as a
    # heading, "the budget" in the text) is a common noun, not a name.
    lowercase_words = {w for unit in builder.units if unit.kind == "prose"
                       for w in _WORD_RE.findall(unit.text) if w.islower()}
    cands = {k: c for k, c in cands.items()
             if not (_rank_group(c) >= 3 and " " not in c.name and c.name.lower() in lowercase_words)}
    # The document title and code declarations first; section headings take their
    # turn where they stand, like a sentence.
    chosen: dict[str, None] = dict.fromkeys(
        sorted((k for k, c in cands.items() if c.group == 1 or (c.group == 0 and c.level <= 1)),
               key=rank)[:limit])
    queues = [sorted(dict.fromkeys(k for _, k in unit.mentions if k in cands), key=rank)
              for unit in builder.units if unit.kind in ("prose", "heading") and unit.mentions]
    for weak_round in (False, True):
        depth = 0
        while len(chosen) < limit and any(depth < len(q) for q in queues):
            for queue in queues:
                picked = next((k for k in queue if k not in chosen
                               and (_rank_group(cands[k]) >= 3) == weak_round), None)
                if picked is not None and len(chosen) < limit:
                    chosen[picked] = None
            depth += 1
    # Anything left (mentions outside prose units), most salient first.
    for key in sorted(cands, key=rank):
        if len(chosen) >= limit:
            break
        chosen.setdefault(key, None)
    return sorted((cands[k] for k in chosen), key=lambda c: c.first)


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


def _window(text: str, start: int, end: int, limit: int) -> str:
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


def _mention_offset(unit_text: str, mentions: list[tuple[int, str]], key: str, name: str) -> tuple[int, int]:
    for offset, mention_key in mentions:
        if mention_key == key:
            return offset, offset + len(name)
    found = unit_text.casefold().find(name.casefold())
    return (found, found + len(name)) if found >= 0 else (0, 0)


def _describe(cand: Candidate, builder: DocumentBuilder, by_key: dict[str, list[int]],
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
        start, _ = _mention_offset(unit.text, unit.mentions, cand.key, cand.name)
        return (1 if start <= 4 else 2, index)

    index = min(mentions[:4], key=defining)
    unit = builder.units[index]
    start, end = _mention_offset(unit.text, unit.mentions, cand.key, cand.name)
    text = unit.text
    if defining(index)[0] == 0:
        text = f"{text.rstrip('.:')}: {builder.units[index + 1].text}"
    description = _window(text, start, end, MAX_ENTITY_DESC_CHARS)
    if not description or description.casefold().strip(" .:") == cand.name.casefold():
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
    """Every candidate relation: co-occurrence, section, subsection and code structure."""
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
        names = {w for _, k in unit.mentions for w in k.split()}
        window = len(keys) if len(keys) <= 5 else 3
        for i, a in enumerate(keys):
            for b in keys[i + 1: i + 1 + window]:
                rel = touch(a, b, "cooccurrence")
                if rel is None:
                    continue
                lo, hi = sorted((offsets[a], offsets[b]))
                gap = hi - lo
                if gap < rel.gap:
                    rel.gap = gap
                    end = max(offsets[a] + len(selected[a].name), offsets[b] + len(selected[b].name))
                    rel.description = _window(unit.text, lo, end, MAX_RELATION_DESC_CHARS)
                    between = _salient(unit.text[lo:hi], names)
                    rel.words = (between or _salient(unit.text, names))[:MAX_RELATION_WORDS]
    # Each heading is linked to the entities its section introduces (first mentioned
    # there), the most salient first, so headings do not become giant hubs.
    first_section: dict[str, int] = {}
    per_section: dict[int, dict[str, tuple[int, int]]] = {}
    for index, unit in enumerate(builder.units):
        if unit.kind == "heading":
            continue
        for offset, key in sorted(unit.mentions):
            if key not in selected:
                continue
            first_section.setdefault(key, unit.section)
            if unit.section >= 0:
                seen = per_section.setdefault(unit.section, {})
                count, first = seen.get(key, (0, index * 1000 + offset))
                seen[key] = (count + 1, first)
    link_rounds: list[list[tuple[str, str, str]]] = []
    for section, seen in per_section.items():
        head_key = builder.units[section].mentions[0][1]

        def salience(key: str, section: int = section, seen: dict = seen) -> tuple[int, int, int, int]:
            count, first = seen[key]
            return (first_section.get(key) != section, _rank_group(selected[key]), -count, first)

        ranked = [k for k in sorted(seen, key=salience) if k != head_key][:MAX_HEADING_LINKS]
        for position, key in enumerate(ranked):
            while len(link_rounds) <= position:
                link_rounds.append([])
            unit_text = next((u.text for u in builder.units if u.section == section and u.kind != "heading"
                              and any(k == key for _, k in u.mentions)), "")
            link_rounds[position].append((head_key, key, unit_text))
    for position, round_links in enumerate(link_rounds):  # every heading's first link, then the second
        for head_key, key, unit_text in round_links:
            rel = touch(head_key, key, "section")
            if rel is not None and rel.kind == "section" and rel.count == 1:
                rel.rank = position
            if rel is not None and not rel.description:
                head, name = selected[head_key].name, selected[key].name
                start, end = _mention_offset(unit_text, [], key, name)
                prefix = f'Section "{head}": '
                room = max(MAX_RELATION_DESC_CHARS // 2, MAX_RELATION_DESC_CHARS - len(prefix))
                rel.description = prefix + _window(unit_text, start, end, room)
    for parent, child in builder.subsections:
        p_key, c_key = builder.units[parent].mentions[0][1], builder.units[child].mentions[0][1]
        rel = touch(p_key, c_key, "subsection")
        if rel is not None and not rel.description:
            rel.description = f'"{selected[c_key].name}" is a subsection of "{selected[p_key].name}".'
    for a, b, kind, text in builder.code_rels:
        rel = touch(a.casefold(), b.casefold(), kind)
        if rel is not None and rel.kind == kind:
            rel.description = text
    return list(rels.values())


def _choose_relations(rels: list[_Rel], selected: dict[str, Candidate], limit: int) -> list[_Rel]:
    """The ``limit`` strongest relations: code structure and headings (at most half of
    the room when sentences relate enough pairs), then the closest co-occurrences."""
    # Code structure, then each heading's first link, subsections, further links.
    priority = {"defines": 0, "calls": 0, "section": 1, "subsection": 2, "section2": 3}
    structure = sorted((r for r in rels if r.kind != "cooccurrence"),
                       key=lambda r: (priority[r.kind + ("2" if r.kind == "section" and r.rank else "")],
                                      r.first))
    weak = {key for key, c in selected.items() if _rank_group(c) >= 3}
    cooccurrence = sorted((r for r in rels if r.kind == "cooccurrence"),
                          key=lambda r: (-r.count, (r.a in weak) + (r.b in weak), r.gap, r.first))
    quota = max(-(-limit // 2), limit - len(cooccurrence))
    chosen = structure[:quota]
    # First the pairs that relate an entity nothing relates yet (a sentence naming
    # five entities would otherwise take every slot), then the rest in order.
    covered = {key for r in chosen for key in (r.a, r.b)}
    later: list[_Rel] = []
    for rel in cooccurrence:
        if len(chosen) < limit and (rel.a not in covered or rel.b not in covered):
            chosen.append(rel)
            covered.update((rel.a, rel.b))
        else:
            later.append(rel)
    chosen += later[:max(0, limit - len(chosen))]
    chosen += structure[quota:][:max(0, limit - len(chosen))]
    return sorted(chosen, key=lambda r: (-r.count, r.first))


_KEYWORDS_BY_KIND: dict[str, str] = {
    "cooccurrence": "co-occurrence",
    "section": "section content",
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
    ``max_records`` rows in total are returned, and no more than the chunk's
    length allows (``density_limits``).
    """
    builder = DocumentBuilder()
    if section_path.strip():
        builder.add_heading(section_path.split("→")[-1], 1, synthetic_path=section_path.strip())
    if text.strip():
        parse_document(builder, text)
    _resolve(builder)
    entity_room, relation_room = density_limits(text)
    chosen = _select(builder, min(max_entities, entity_room))
    selected = {c.key: c for c in chosen}
    by_key, first_in_section = _mention_index(builder)
    entities = [ExtractedEntity(c.name, c.category, _describe(c, builder, by_key, first_in_section))
                for c in chosen]
    room = min(relation_room, max(0, max_records - len(entities)))
    relations: list[ExtractedRelation] = []
    for rel in _choose_relations(_relations(builder, selected), selected, room):
        a, b = selected[rel.a], selected[rel.b]
        keywords = list(dict.fromkeys(rel.words + _KEYWORDS_BY_KIND[rel.kind].split(", ")))
        description = bounded(rel.description, MAX_RELATION_DESC_CHARS)
        if not description:
            description = f"{a.name} and {b.name} are mentioned together."
        relations.append(ExtractedRelation(a.name, b.name, ", ".join(keywords), description))
    return ExtractionResult(entities, relations)
