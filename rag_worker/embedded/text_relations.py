"""Relations between the selected entities of one chunk, strongest first.

Candidates come from sentences that name two entities (the closest pair of mentions gives
the description, the words between them the keywords), section membership (a heading and the entities its section introduces,
a heading and its subheadings) and code structure (class -> method, caller -> callee);
``choose_relations`` keeps the ones a chunk's length allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import text_lexicon as lx
from .text_descriptions import MAX_RELATION_DESC_CHARS, mention_offset, window_around
from .text_document import Candidate, DocumentBuilder
from .text_selection import rank_group
from .text_sentences import WORD_RE

MAX_HEADING_LINKS = 2  # a heading is linked to the entities its section introduces first
MAX_RELATION_WORDS = 3  # words of the linking phrase that become a relation's keywords

_KEYWORDS_BY_KIND: dict[str, str] = {
    "cooccurrence": "",  # the sentence's own words say what the relation is
    "section": "section content",
    "subsection": "subsection, document structure",
    "defines": "defines method, class member, code structure",
    "calls": "calls, function call, code dependency",
}

#: (heading key, entity key, text of the unit that mentions the entity in that section)
_HeadingLink = tuple[str, str, str]


@dataclass
class RelationCandidate:
    """A relation between two selected entity keys, before the chunk's bound is applied."""

    a: str
    b: str
    kind: str  # "cooccurrence", "section", "subsection", "defines", "calls"
    first: int
    count: int = 0
    gap: int = 1 << 30  # closest distance of the two mentions in one sentence
    rank: int = 0  # a section link's position among its heading's links
    words: list[str] = field(default_factory=list)
    description: str = ""

    def keywords(self) -> str:
        """The words that link the two names in their sentence, then those naming the relation's kind."""
        kind = [w for w in _KEYWORDS_BY_KIND[self.kind].split(", ") if w]
        return ", ".join(dict.fromkeys(self.words + kind)) or "related"


class _RelationTable:
    """Relation candidates by undirected pair, numbered in the order they are first touched."""

    def __init__(self, selected: dict[str, Candidate]) -> None:
        self.selected = selected
        self.rels: dict[tuple[str, str], RelationCandidate] = {}
        self.order = 0

    def touch(self, a: str, b: str, kind: str) -> RelationCandidate | None:
        """Count one more sighting of the pair; None if it is not a pair of selected entities."""
        # Undirected pair key; the stored direction is the first touch's, except
        # that code structure (class -> method, caller -> callee) always wins.
        if a == b or a not in self.selected or b not in self.selected:
            return None
        pair = (a, b) if a < b else (b, a)
        self.order += 1
        rel = self.rels.get(pair)
        if rel is None:
            rel = self.rels[pair] = RelationCandidate(a, b, kind, self.order)
        elif kind in ("defines", "calls"):
            rel.a, rel.b, rel.kind = a, b, kind
        rel.count += 1
        return rel


def _salient(words_text: str, exclude: set[str], stop: frozenset[str]) -> list[str]:
    found: list[str] = []
    for word in WORD_RE.findall(words_text):
        low = word.lower().strip("'’-")
        if len(low) >= 3 and low not in stop and low not in exclude and low not in found:
            found.append(low)
    return found


# What a bare connector between two names says ("Alice Johnson of Acme", "Vicksburg, Mississippi").
_CONNECTOR_KEYWORDS: dict[tuple[str, str], str] = {
    ("of", lx.ORGANIZATION): "member", ("at", lx.ORGANIZATION): "works", ("from", lx.ORGANIZATION): "member",
    ("von", lx.ORGANIZATION): "member", ("de", lx.ORGANIZATION): "member", ("in", lx.LOCATION): "located",
    ("at", lx.LOCATION): "located", (",", lx.LOCATION): "located", ("near", lx.LOCATION): "near",
}


def _linking_words(text: str, first: Candidate, second: Candidate, exclude: set[str], stop: frozenset[str]
                   ) -> list[str]:
    """The words between two names that say how they relate ("received funding"): content words
    between them, else what a bare connector means, else the sentence's salient words."""
    between = _salient(text, exclude, stop)
    if between:
        return between[:MAX_RELATION_WORDS]
    connector = " ".join(text.split()).strip().lower()
    for category in (second.category, first.category):
        phrase = _CONNECTOR_KEYWORDS.get((connector, category))
        if phrase:
            return [phrase]
    return []


def _add_cooccurrences(table: _RelationTable, builder: DocumentBuilder) -> None:
    """Relate entities named in one sentence; the closest pair of mentions describes it."""
    selected = table.selected
    for unit in builder.units:
        if unit.kind != "prose":
            continue
        stop = lx.keyword_stopwords(unit.language or builder.language)
        keys = [k for _, k in sorted(unit.mentions) if k in selected]
        keys = list(dict.fromkeys(keys))
        offsets = {k: o for o, k in sorted(unit.mentions, reverse=True)}
        # Words of any name in the sentence are not relation keywords.
        names = {w for _, k in unit.mentions for w in k.split()}
        window = len(keys) if len(keys) <= 5 else 3
        for i, a in enumerate(keys):
            for b in keys[i + 1: i + 1 + window]:
                rel = table.touch(a, b, "cooccurrence")
                if rel is None:
                    continue
                lo, hi = sorted((offsets[a], offsets[b]))
                gap = hi - lo
                if gap < rel.gap:
                    rel.gap = gap
                    first, second = (selected[a], selected[b]) if offsets[a] <= offsets[b] else (selected[b], selected[a])
                    end = max(offsets[a] + len(selected[a].name), offsets[b] + len(selected[b].name))
                    rel.description = window_around(unit.text, lo, end, MAX_RELATION_DESC_CHARS)
                    linking = unit.text[lo + len(first.name):hi] if lo + len(first.name) <= hi else ""
                    rel.words = _linking_words(linking, first, second, names, stop) or \
                        _salient(unit.text, names, stop)[:MAX_RELATION_WORDS - 1]


def _heading_links(builder: DocumentBuilder, selected: dict[str, Candidate]) -> list[list[_HeadingLink]]:
    """Each heading's links to the entities its section introduces, grouped by rank.

    Entities first mentioned in the section come first, the most salient first, and
    at most ``MAX_HEADING_LINKS`` per heading, so headings do not become giant hubs.
    """
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
    link_rounds: list[list[_HeadingLink]] = []
    for section, seen in per_section.items():
        head_key = builder.units[section].mentions[0][1]

        def salience(key: str, section: int = section,
                     seen: dict[str, tuple[int, int]] = seen) -> tuple[int, int, int, int]:
            count, first = seen[key]
            return (first_section.get(key) != section, rank_group(selected[key]), -count, first)

        ranked = [k for k in sorted(seen, key=salience) if k != head_key][:MAX_HEADING_LINKS]
        for position, key in enumerate(ranked):
            while len(link_rounds) <= position:
                link_rounds.append([])
            unit_text = next((u.text for u in builder.units if u.section == section and u.kind != "heading"
                              and any(k == key for _, k in u.mentions)), "")
            link_rounds[position].append((head_key, key, unit_text))
    return link_rounds


def _add_section_links(table: _RelationTable, link_rounds: list[list[_HeadingLink]]) -> None:
    selected = table.selected
    for position, round_links in enumerate(link_rounds):  # every heading's first link, then the second
        for head_key, key, unit_text in round_links:
            rel = table.touch(head_key, key, "section")
            if rel is not None and rel.kind == "section" and rel.count == 1:
                rel.rank = position
            if rel is not None and not rel.description:
                head, name = selected[head_key].name, selected[key].name
                start, end = mention_offset(unit_text, [], key, name)
                prefix = f'Section "{head}": '
                room = max(MAX_RELATION_DESC_CHARS // 2, MAX_RELATION_DESC_CHARS - len(prefix))
                rel.description = prefix + window_around(unit_text, start, end, room)


def find_relations(builder: DocumentBuilder, selected: dict[str, Candidate]) -> list[RelationCandidate]:
    """Every candidate relation: co-occurrence, section, subsection and code structure."""
    table = _RelationTable(selected)
    _add_cooccurrences(table, builder)
    _add_section_links(table, _heading_links(builder, selected))
    for parent, child in builder.subsections:
        p_key, c_key = builder.units[parent].mentions[0][1], builder.units[child].mentions[0][1]
        rel = table.touch(p_key, c_key, "subsection")
        if rel is not None and not rel.description:
            rel.description = f'"{selected[c_key].name}" is a subsection of "{selected[p_key].name}".'
    for a, b, kind, text in builder.code_rels:
        rel = table.touch(a.casefold(), b.casefold(), kind)
        if rel is not None and rel.kind == kind:
            rel.description = text
    return list(table.rels.values())


def choose_relations(rels: list[RelationCandidate], selected: dict[str, Candidate],
                     limit: int) -> list[RelationCandidate]:
    """The ``limit`` strongest relations: code structure and headings (at most half of
    the room when sentences relate enough pairs), then the closest co-occurrences."""
    # Code structure, then each heading's first link, subsections, further links.
    priority = {"defines": 0, "calls": 0, "section": 1, "subsection": 2, "section2": 3}
    structure = sorted((r for r in rels if r.kind != "cooccurrence"),
                       key=lambda r: (priority[r.kind + ("2" if r.kind == "section" and r.rank else "")],
                                      r.first))
    weak = {key for key, c in selected.items() if rank_group(c) >= 3}
    cooccurrence = sorted((r for r in rels if r.kind == "cooccurrence"),
                          key=lambda r: (-r.count, (r.a in weak) + (r.b in weak), r.gap, r.first))
    quota = max(-(-limit // 2), limit - len(cooccurrence))
    chosen = structure[:quota]
    # First the pairs that relate an entity nothing relates yet (a sentence naming
    # five entities would otherwise take every slot), then the rest in order.
    covered = {key for r in chosen for key in (r.a, r.b)}
    later: list[RelationCandidate] = []
    for rel in cooccurrence:
        if len(chosen) < limit and (rel.a not in covered or rel.b not in covered):
            chosen.append(rel)
            covered.update((rel.a, rel.b))
        else:
            later.append(rel)
    chosen += later[:max(0, limit - len(chosen))]
    chosen += structure[quota:][:max(0, limit - len(chosen))]
    return sorted(chosen, key=lambda r: (-r.count, r.first))
