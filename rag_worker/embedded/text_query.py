"""Search-query keywords for LightRAG's keyword-extraction prompt, without an LLM.

``extract_query_keywords`` reads a query with the extractor's own sentence scan, so the
names it finds are spelled as the entity index spells them; ``query_names`` gives those
names alone (``rag_worker.storage.exact_match`` looks them up verbatim).
"""

from __future__ import annotations

import functools
import re

from . import text_lexicon as lx
from .text_scan import scan_sentence
from .text_sentences import WORD_RE, clean_inline, split_sentences

_PHRASE_TOKEN_RE = re.compile(r"[^\W_][\w'’-]*|[^\w\s]+")  # words, and punctuation that ends a phrase
_QUOTED_RE = re.compile(r'"([^"]{2,60})"|“([^”]{2,60})”')
#: Names that lead the high-level keywords (the rest of the room is the question's topic).
MAX_HIGH_LEVEL_NAMES = 3


def _content_phrases(text: str, exclude: set[str]) -> list[str]:
    """Runs of consecutive content words ("secret launch code"), at most four words each."""
    phrases: list[str] = []
    current: list[str] = []
    for match in _PHRASE_TOKEN_RE.finditer(text):
        word = match.group(0).strip("'’-")
        low = word.lower()
        content = (word[:1].isalnum() and len(word) >= 2 and low not in lx.QUERY_STOPWORDS
                   and low not in exclude)
        if (not content or len(current) == 4) and current:
            phrases.append(" ".join(current))
            current = []
        if content:
            current.append(low)
    if current:
        phrases.append(" ".join(current))
    return phrases


def extract_query_keywords(query: str, limit: int = 8) -> tuple[list[str], list[str]]:
    """Split a search query into ``(high_level, low_level)`` keyword lists.

    Low level: names, identifiers and quoted phrases in the query (the entity
    index is searched with them), else its content-word phrases. High level: the
    names first, then the query's topic phrases and words: LightRAG searches the
    relation index with them, and a relation is embedded as its keywords, its two
    entity names and its sentence (1.5.7 ``_merge_edges_then_upsert``), so the names
    the question is about lead that search to their relations. Topic words alone
    ("funded", "project") scored under LightRAG's cosine threshold (0.2) against a
    relation that says "received 42 million euros from", and global mode found
    nothing that the other modes found. Neither list is empty for a query with
    any visible character.
    """
    text = " ".join(query.split())
    if not text:
        return [], []
    names = query_names(text)
    name_words = {w.casefold() for name in names for w in re.split(r"[\s_.]+", name) if w}
    name_words |= {w.casefold() for name in names for w in name.split()}
    phrases = _content_phrases(text, name_words)
    words = [w for phrase in phrases for w in phrase.split()]
    topics = [p for p in phrases if " " in p] + [w for w in words if len(w) >= 3]
    low = list(names) or phrases
    high = list(names[:MAX_HIGH_LEVEL_NAMES]) + topics
    if not low:  # only stopwords or symbols: fall back to the words, then the text
        low = WORD_RE.findall(text) or [text[:100]]
    if not high:
        high = [w.lower() for w in low]
    return _dedupe(high)[:limit], _dedupe(low)[:limit]


@functools.lru_cache(maxsize=64)
def query_names(query: str) -> tuple[str, ...]:
    """The names, identifiers and quoted phrases of a query, spelled as the entity index spells them.

    Remembered: one question reaches the keyword step, the named-passage lookup and the reranker
    (`exact_match`), and scanning it is the costly part of each."""
    text = " ".join(query.split())
    names: list[str] = []
    for sentence in split_sentences(clean_inline(text)):
        names.extend(m.name for m in scan_sentence(sentence, query_mode=True))
    # Quoted phrases are what the user wants matched literally.
    names.extend(a or b for a, b in _QUOTED_RE.findall(text))
    return tuple(_dedupe(names))


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        item = item.strip()
        if item and item.casefold() not in seen:
            seen.add(item.casefold())
            out.append(item)
    return out
