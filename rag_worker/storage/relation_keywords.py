"""A relation's keywords, bounded: a sample that stays put while documents keep adding words.

LightRAG 1.5.7 keeps, for each relation, the union of the keywords every extraction of it gave
(`_merge_edges_then_upsert` at indexing, `_rebuild_single_relationship` after a delete), and puts
them first in the relation's vector text: ``"{keywords}\\t{source}\\n{target}\\n{description}"``.
A relation named in many documents collects them all. In a knowledge base of 11,379 generated
documents, 1,245 relations held 50-108 keywords (1,346 more than 20, of 253,801), and each new
document merged into 6.6 of them.
Their vector texts ran past the model's window (LightRAG cut them at 240 tokens, mostly keywords,
with little or none of the description left), and each merge changed them, so they were embedded again at
every document: a sixth of indexing's embedding work, and a share that grows with the corpus.
The graph edge and the lexical index carried the same growing list.

Keywords that LightRAG derives are cut to :data:`MAX_RELATION_KEYWORDS`: the ones whose hash is
smallest (a bottom-k sample). The sample does not depend on the order documents came in, and a
kept sample merged with new keywords keeps what the whole union would, so a relation's keywords
change only when a new one hashes into the sample: less and less often as it grows. A relation
with fewer keywords is written as LightRAG wrote it. Keywords a user sets with the edit tools
(LightRAG's `aedit_relation` and the like) are not derived and are kept as given.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from rag_worker.graph.snapshot import SEP

#: Keywords kept for a relation LightRAG derives them for (most relations have 1-3).
MAX_RELATION_KEYWORDS = 20

#: Set while LightRAG derives a relation from extractions (a merge, or a delete's rebuild).
_DERIVING: ContextVar[bool] = ContextVar("lightrag_mcp_deriving_relation", default=False)

#: LightRAG's separators in a stored keywords value: commas, and GRAPH_FIELD_SEP in old rows.
_SEPARATORS = re.compile(f",|{re.escape(SEP)}")

#: LightRAG's functions that derive a relation's keywords from extractions.
DERIVING_FUNCTIONS = ("_merge_edges_then_upsert", "_rebuild_single_relationship")


def bounded_keywords(keywords: str, limit: int = MAX_RELATION_KEYWORDS) -> str:
    """`keywords` (comma-separated) as they are when there are at most `limit` distinct ones;
    else the `limit` whose hash is smallest, sorted and joined as LightRAG joins them."""
    words = list(dict.fromkeys(word.strip() for word in _SEPARATORS.split(keywords) if word.strip()))
    if len(words) <= limit:
        return keywords
    return ",".join(sorted(heapq.nsmallest(limit, words, key=_rank)))


def _rank(word: str) -> tuple[bytes, str]:
    return hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), word


def bound_derived_keywords() -> None:
    """Mark LightRAG's deriving functions (idempotent), so the writes they make are bounded."""
    import lightrag.operate

    for name in DERIVING_FUNCTIONS:
        function = getattr(lightrag.operate, name)
        if not getattr(function, "marks_derived_keywords", False):
            setattr(lightrag.operate, name, _deriving(function))


def _deriving(function: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(function)
    async def derive(*args: Any, **kwargs: Any) -> Any:
        token = _DERIVING.set(True)
        try:
            return await function(*args, **kwargs)
        finally:
            _DERIVING.reset(token)

    derive.marks_derived_keywords = True  # type: ignore[attr-defined]
    return derive


def keep_relation_keywords_bounded(rag: Any) -> None:
    """Bound what `rag`'s graph and relation vectors receive from a derivation.

    Wraps the outermost `upsert` of the relation vector store: install it after every other
    wrapper of that method (the lexical mirror must index the bounded text)."""
    graph, vectors = rag.chunk_entity_relation_graph, rag.relationships_vdb
    upsert_edge, upsert = graph.upsert_edge, vectors.upsert

    async def upsert_bounded_edge(source: str, target: str, edge_data: dict[str, Any]) -> Any:
        keywords = edge_data.get("keywords")
        if _DERIVING.get() and isinstance(keywords, str):
            edge_data = {**edge_data, "keywords": bounded_keywords(keywords)}
        return await upsert_edge(source, target, edge_data)

    async def upsert_bounded(data: dict[str, dict[str, Any]]) -> Any:
        if _DERIVING.get() and data:
            data = {key: _bounded_row(row, vectors.global_config) for key, row in data.items()}
        return await upsert(data)

    graph.upsert_edge, vectors.upsert = upsert_bounded_edge, upsert_bounded


def _bounded_row(row: dict[str, Any], global_config: dict[str, Any]) -> dict[str, Any]:
    """A relation vector row with its keywords bounded, and its text rebuilt as LightRAG builds it."""
    from lightrag.operate import _truncate_vdb_content

    keywords = row.get("keywords")
    if not isinstance(keywords, str) or (bounded := bounded_keywords(keywords)) == keywords:
        return row
    source, target = row.get("src_id", ""), row.get("tgt_id", "")
    text = f"{bounded}\t{source}\n{target}\n{row.get('description', '')}"
    return {
        **row,
        "keywords": bounded,
        "content": _truncate_vdb_content(text, global_config, f"relation:{source}-{target}"),
    }
