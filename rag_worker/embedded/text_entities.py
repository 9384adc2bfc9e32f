"""Deterministic entity and relation extraction from Markdown, prose and code.

This is the "model" behind the built-in extractor: regexes and small word lists,
no randomness, stable ordering. It finds

* Markdown headings (the H1 as the document title, deeper levels as sections),
* capitalised multi-word names (people, organisations, places, events, ...),
  acronyms and CamelCase product names, read with the function words of the
  chunk's language (English, German, French, Spanish: ``stopwords``),
* full dates and amounts with a unit (``text_values``),
* code identifiers: declarations in code blocks or raw source, backticked names,
  ``snake_case`` / ``camelCase`` / ``dotted.calls()`` and file names in prose,

and relates them by the sentence that names both (its linking words are the
keywords: "received, funding"), section membership (heading → the entities its
section introduces, heading → subheading) and code structure (class → method,
function → function it calls). A description is one short fragment of the
sentence that mentions an entity (or both ends of a relation), so the entity and
relation vectors carry the document's meaning.

Every row costs an embedding: LightRAG embeds each entity ("name\ndescription")
and relation ("keywords\tsource\ntarget\ndescription"), and embeds them again
whenever a later document merges new fragments into them. So the output is
bounded by the chunk's length (``CHARS_PER_ENTITY``, ``CHARS_PER_RELATION``),
most salient first, and every description is one fragment of at most
``MAX_ENTITY_DESC_CHARS`` / ``MAX_RELATION_DESC_CHARS`` characters.

The steps live in their own modules: ``text_document`` (parsing into units and
candidates), ``text_selection``, ``text_descriptions`` and ``text_relations``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .stopwords import detect_language
from .text_descriptions import MAX_RELATION_DESC_CHARS, describe, mention_index
from .text_document import DocumentBuilder, parse_document
from .text_relations import choose_relations, find_relations
from .text_selection import resolve_aliases, select_entities
from .text_sentences import bounded

DEFAULT_MAX_ENTITIES = 40
DEFAULT_MAX_RECORDS = 100
# Density bounds: at most one entity per CHARS_PER_ENTITY characters of the chunk and
# one relation per CHARS_PER_RELATION (never fewer than the minimums), so a chunk of
# 240 tokens (~1,000 characters) yields at most 13 entities and 7 relations.
CHARS_PER_ENTITY = 80
CHARS_PER_RELATION = 150
MIN_ENTITIES = 6
MIN_RELATIONS = 4


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


def density_limits(text: str) -> tuple[int, int]:
    """(entities, relations) a chunk of this length may yield (see ``CHARS_PER_ENTITY``)."""
    size = len(text.strip())
    return (max(MIN_ENTITIES, -(-size // CHARS_PER_ENTITY)),
            max(MIN_RELATIONS, -(-size // CHARS_PER_RELATION)))


def extract(text: str, section_path: str = "", max_entities: int = DEFAULT_MAX_ENTITIES,
            max_records: int = DEFAULT_MAX_RECORDS) -> ExtractionResult:
    """Extract entities and relations from one chunk of text.

    ``section_path`` is LightRAG's heading breadcrumb (``a → b → c``) for the
    chunk, if any: its last heading becomes the section of the text that precedes
    the chunk's own headings. At most ``max_entities`` entities and
    ``max_records`` rows in total are returned, and no more than the chunk's
    length allows (``density_limits``).
    """
    builder = DocumentBuilder(detect_language(text))
    if section_path.strip():
        builder.add_heading(section_path.split("→")[-1], 1, synthetic_path=section_path.strip())
    if text.strip():
        parse_document(builder, text)
    resolve_aliases(builder)
    entity_room, relation_room = density_limits(text)
    chosen = select_entities(builder, min(max_entities, entity_room))
    selected = {c.key: c for c in chosen}
    by_key, first_in_section = mention_index(builder)
    entities = [ExtractedEntity(c.name, c.category, describe(c, builder, by_key, first_in_section))
                for c in chosen]
    room = min(relation_room, max(0, max_records - len(entities)))
    relations: list[ExtractedRelation] = []
    for rel in choose_relations(find_relations(builder, selected), selected, room):
        a, b = selected[rel.a], selected[rel.b]
        description = bounded(rel.description, MAX_RELATION_DESC_CHARS)
        if not description:
            description = f"{a.name} and {b.name} are mentioned together."
        relations.append(ExtractedRelation(a.name, b.name, rel.keywords(), description))
    return ExtractionResult(entities, relations)
