"""Merging an entity's chunk ids without a regular-expression split per id.

LightRAG 1.5.7 keeps every chunk id that names an entity or relation (`entity_chunks`,
`relation_chunks`), and each merge of new extractions into one of them calls
`lightrag.utils.merge_source_ids(existing, new)`, which splits EVERY id with
`split_string_by_multi_markers` (a `re.split` and two list comprehensions) to guard against a
joined value no caller passes.  An entity named in every document holds one id per chunk: 3,488
at 5,000 generated reports.  A py-spy profile of the worker indexing documents 5,100-5,200 put a
third of the event loop's busy time in those splits (2,917 of 7,196 samples), blocking every call
meanwhile: that is most of what CPU per document gained from 100 to 5,000 documents.

:func:`merge_ids_without_regex` gives LightRAG the same function with a fast path: when every
id is a plain string with no separator and no surrounding blanks (what LightRAG's callers pass),
the result is the ids deduplicated in first-seen order, which is what the splits would return.
Anything else (a joined value, blanks, a non-string) goes to LightRAG's own function unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

MergeIds = Callable[[Iterable[str] | None, Iterable[str] | None], list[str]]


def fast_merge(original: MergeIds, separator: str) -> MergeIds:
    """`original` (LightRAG's `merge_source_ids`) with a fast path for plain ids."""

    def merge_source_ids(existing_ids: Iterable[str] | None, new_ids: Iterable[str] | None) -> list[str]:
        sequences = [list(ids) if ids else [] for ids in (existing_ids, new_ids)]
        merged: list[str] = []
        seen: set[str] = set()
        for ids in sequences:
            for source_id in ids:
                if not source_id:
                    continue
                if type(source_id) is not str or separator in source_id or source_id.strip() != source_id:
                    return original(*sequences)
                if source_id not in seen:
                    seen.add(source_id)
                    merged.append(source_id)
        return merged

    merge_source_ids.without_regex = True  # type: ignore[attr-defined]
    return merge_source_ids


def merge_ids_without_regex() -> None:
    """Give LightRAG's indexing (and its utils' other users) the fast merge (idempotent)."""
    import lightrag.operate
    import lightrag.utils
    from lightrag.constants import GRAPH_FIELD_SEP

    current: Any = lightrag.utils.merge_source_ids
    if getattr(current, "without_regex", False):
        return
    merged = fast_merge(current, GRAPH_FIELD_SEP)
    lightrag.utils.merge_source_ids = merged
    lightrag.operate.merge_source_ids = merged  # imported by name there
