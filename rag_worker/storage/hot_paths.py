"""Two of LightRAG 1.5.7's hot paths at thousands of documents, made cheaper with the same results.

**Merging an entity's chunk ids without a regular-expression split per id.**  LightRAG keeps every chunk id that names an entity or relation (`entity_chunks`,
`relation_chunks`), and each merge of new extractions into one of them calls
`lightrag.utils.merge_source_ids(existing, new)`, which splits EVERY id with
`split_string_by_multi_markers` (a `re.split` and two list comprehensions) to guard against a
joined value no caller passes.  An entity named in every document holds one id per chunk: 3,488
at 5,000 generated reports.  A py-spy profile of the worker indexing documents 5,100-5,200 put a
third of the event loop's busy time in those splits (2,917 of 7,196 samples), blocking every call
meanwhile: that is most of what CPU per document gained from 100 to 5,000 documents.

:func:`fast_merge` gives LightRAG the same function with a fast path: when every
id is a plain string with no separator and no surrounding blanks (what LightRAG's callers pass),
the result is the ids deduplicated in first-seen order, which is what the splits would return.
Anything else (a joined value, blanks, a non-string) goes to LightRAG's own function unchanged.

**Normalizing a name once.**  Every extraction record LightRAG parses (at indexing, and again
for every chunk naming a shared entity when a delete rebuilds it) goes through
`normalize_extracted_info`: a dozen regular expressions and two `str.maketrans` tables built per
call, 12-28 us.  A delete at 5,300 documents re-parsed the extractions of most of the corpus:
half of its 78 s of event-loop time was in that function (1,520 of 3,132 samples).  The same
entity names recur throughout; :func:`normalize_names_once` keeps the results for short texts
(names, types, keywords) in a bounded cache.  The function is pure (its text and a flag in, a
string out), so a kept result is the one it would compute; descriptions, mostly unique, are
computed as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

MergeIds = Callable[[Iterable[str] | None, Iterable[str] | None], list[str]]
Normalize = Callable[..., str]

#: Texts up to this long are names, types or keywords: their normalized form is kept.
NAME_CHARS = 120
#: Normalized names kept (least recently used go first): ~2 MB.
NAMES_KEPT = 20_000


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

    return merge_source_ids


def normalize_names_once(original: Normalize) -> Normalize:
    """`original` (LightRAG's `normalize_extracted_info`), its results for short texts kept."""
    kept = functools.lru_cache(maxsize=NAMES_KEPT)(original)

    def normalize_extracted_info(name: str, remove_inner_quotes: bool = False) -> str:
        if type(name) is str and len(name) <= NAME_CHARS:
            return str(kept(name, bool(remove_inner_quotes)))
        return original(name, remove_inner_quotes=remove_inner_quotes)

    normalize_extracted_info.names_kept = kept  # type: ignore[attr-defined]
    return normalize_extracted_info


def use_cheaper_hot_paths() -> None:
    """Give LightRAG the fast merge and the kept names (idempotent)."""
    import lightrag.operate
    import lightrag.utils
    from lightrag.constants import GRAPH_FIELD_SEP

    if hasattr(lightrag.utils.normalize_extracted_info, "names_kept"):
        return
    merged = fast_merge(lightrag.utils.merge_source_ids, GRAPH_FIELD_SEP)
    lightrag.utils.merge_source_ids = merged
    lightrag.operate.merge_source_ids = merged  # imported by name there
    # `sanitize_and_normalize_extracted_text`, its one caller, finds it in lightrag.utils at each call.
    lightrag.utils.normalize_extracted_info = normalize_names_once(lightrag.utils.normalize_extracted_info)
