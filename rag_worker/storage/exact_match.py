"""Exact names in retrieval: the passages that contain the names and identifiers a question asks about.

The packaged embedding model barely tells "HERON-1000" from "HERON-1010": over 100 generated
reports that each state who built one coded prototype (`scripts/bench_retrieval.py`), the passage
answering "Who built the HERON-1000 prototype?" was among the first 10 for 61 % of the questions
in naive mode and 45-53 % in the graph modes; the top 10 of a miss were other reports' prototype
sentences. Passage size made no difference (120, 160 and 240 tokens: 0.60, 0.68, 0.61). Two steps
at LightRAG 1.5.7's own seams put the exact names back in charge:

* `add_named_chunks(rag)`: the chunk vector search (naive mode, mix's vector half) also returns the
  passages of every entity the question names verbatim, when the name is specific (at most
  `MAX_NAMED_CHUNKS` passages: "Berlin" in 300 passages says nothing). LightRAG's `entity_chunks`
  store maps an entity name to its chunk ids on every storage backend.
* `exact_term_rerank`: LightRAG's `rerank_model_func` (used while `enable_rerank` is on, the query
  tool's default): passages naming more of the question's names first, ties in LightRAG's order,
  so the graph modes' chunk choice (by vector similarity to the question) cannot bury them.

A question that names nothing leaves both steps without effect.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from typing import Any

from rag_worker.embedded.text_query import query_names
from rag_worker.query_cache import cosines

log = logging.getLogger("rag_worker.storage.exact_match")

#: A name whose entity has more passages than this is too common to pull passages in.
MAX_NAMED_CHUNKS = 5


@functools.lru_cache(maxsize=256)
def _name_pattern(name: str) -> re.Pattern[str]:
    # Whole words only: "HERON-100" must not match "HERON-1000".
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _lower_words_pattern(name: str) -> re.Pattern[str]:
    # `name` in lower case, its words apart by any blanks: what `_name_pattern` finds in the
    # flattened text of an ASCII passage lowered.
    return re.compile(r"(?<![\w-])" + r"\s+".join(map(re.escape, name.lower().split(" "))) + r"(?![\w-])")


def named_in(names: Sequence[str], text: str) -> int:
    """How many of `names` appear in `text` (whole words, any case, line breaks as spaces).

    In an ASCII passage, an ASCII name of single-spaced words is looked for in the passage
    lowered, only where its first word is, and with no flattened copy (which splits the passage
    into words): ~21 us a passage of 1,200 characters before, ~2 us now, and a question's rerank
    reads hundreds.  Anything else keeps the case-blind pattern over the flattened text,
    whose Unicode folding (`ſ` for `s`, the Kelvin sign for `k`) `str.lower` does not do."""
    lowered = text.lower() if text.isascii() else None
    flat: str | None = None
    count = 0
    for name in names:
        if lowered is not None and name.isascii() and name == " ".join(name.split()):
            found = _found_at_a_first_word(_lower_words_pattern(name), name.lower().split(" ", 1)[0], lowered)
        else:
            flat = " ".join(text.split()) if flat is None else flat
            found = _name_pattern(name).search(flat) is not None
        count += found
    return count


def _found_at_a_first_word(pattern: re.Pattern[str], first_word: str, text: str) -> bool:
    # A match starts where the name's first word does: `pattern` is tried at each place `str.find`
    # finds it (a search would try every position, its leading look-behind denying re's literal scan).
    at = text.find(first_word)
    while at >= 0:
        if pattern.match(text, at):
            return True
        at = text.find(first_word, at + 1)
    return False


async def exact_term_rerank(query: str, documents: list[str], top_n: int | None = None,
                            **_: Any) -> list[dict[str, Any]]:
    """LightRAG `rerank_model_func`: documents naming more of the query's names first.

    Returns LightRAG's index form (`[{"index", "relevance_score"}]`); scores lie in (0, 1]
    (1: every name present), so LightRAG's `min_rerank_score` 0 keeps every passage.
    """
    names = query_names(query)
    counts = [named_in(names, document) for document in documents] if names else [0] * len(documents)
    order = sorted(range(len(documents)), key=lambda i: -counts[i])  # stable: ties keep LightRAG's order
    if top_n:
        order = order[:top_n]
    return [{"index": i, "relevance_score": (counts[i] + 1) / (len(names) + 1)} for i in order]


def add_named_chunks(rag: Any) -> None:
    """Make `rag.chunks_vdb.query` lead with the passages of the entities the question names
    (at most `top_k` rows in all, as before); any lookup failure leaves the vector results alone."""
    search = rag.chunks_vdb.query

    async def query(query: str, top_k: int, query_embedding: Any = None, **kwargs: Any) -> Any:
        found = await search(query, top_k=top_k, query_embedding=query_embedding, **kwargs)
        try:
            named = await _named_rows(rag, query, query_embedding, {str(r.get("id")) for r in found or ()})
        except Exception:  # an aid to the vector search, never a reason to fail it
            log.debug("exact-name lookup failed", exc_info=True)
            return found
        return (named + list(found or ()))[:max(top_k, 1)] if named else found

    rag.chunks_vdb.query = query


async def _named_rows(rag: Any, query: str, query_embedding: Any, seen: set[str]) -> list[dict[str, Any]]:
    """Vector-search rows for the passages of the query's specific names (not in `seen`)."""
    ids: list[str] = []
    names = query_names(query)
    rows = await rag.entity_chunks.get_by_ids(list(names)) if names else []  # one read: one trip to a server
    for row in rows:
        chunk_ids = [str(c) for c in (row or {}).get("chunk_ids") or []]
        if 0 < max(len(chunk_ids), int((row or {}).get("count") or 0)) <= MAX_NAMED_CHUNKS:
            ids += [c for c in chunk_ids if c not in seen and c not in ids]
    return await chunk_rows(rag, ids, query_embedding) if ids else []


async def chunk_rows(rag: Any, ids: list[str], query_embedding: Any) -> list[dict[str, Any]]:
    """Vector-search rows (as `chunks_vdb.query` returns them) for the chunks `ids` (missing ones left out)."""
    chunks = await rag.text_chunks.get_by_ids(ids)
    similarity = await _similarities(rag, ids, query_embedding)
    return [
        {"id": chunk_id, "content": chunk["content"], "full_doc_id": chunk.get("full_doc_id"),
         "file_path": chunk.get("file_path"), "created_at": chunk.get("create_time"),
         "distance": similarity.get(chunk_id)}
        for chunk_id, chunk in zip(ids, chunks, strict=True) if chunk and chunk.get("content")
    ]


async def _similarities(rag: Any, ids: list[str], query_embedding: Any) -> dict[str, float]:
    """Cosine similarity of each passage to the question, as the vector search reports it."""
    if query_embedding is None:
        return {}
    return cosines(query_embedding, await rag.chunks_vdb.get_vectors_by_ids(ids) or {})
