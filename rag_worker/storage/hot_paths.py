"""Four of LightRAG 1.5.7's hot paths at thousands of documents, made cheaper with the same results.

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

**Checking an extraction record's delimiters with no regular expression when they are sound.**
Every record of every chunk's extraction (at indexing, and again for every chunk naming a shared
entity when a delete rebuilds it) goes through `fix_tuple_delimiter_corruption`: thirteen
`re.sub` calls repairing mangled `<|#|>` separators.  Each pattern needs a `<`, `|` or `>` that
is not part of a sound separator (or matches a sound one and puts it back): a record with none
left once its separators are taken out is returned as it is by :func:`sound_records_kept`,
without the thirteen scans; any other record goes to LightRAG's function.  In the profile of
indexing at 5,300 documents the function held 623 of 6,179 busy event-loop samples.

**Ranking a question's candidate chunks in one pass.**  In the graph modes LightRAG picks the
passages of the entities and relations it found by their similarity to the question
(`pick_by_vector_similarity`, its default VECTOR pick): it reads the vector of every chunk they
name (thousands at 5,000 documents: an entity named in every report) and computes each cosine
with a NumPy call of its own.  A py-spy profile of hybrid questions at 5,485 documents put about
95 ms per question there, most of a question's time.  :func:`pick_in_one_pass` computes the same
similarities in one pass (`vector_flush.chunk_similarities`: a matrix product of the vectors
the worker keeps or the files hold, or pgvector where they are stored), then ranks as LightRAG
does: highest first, ties in candidate order, the same fall-backs (no candidates, a missing
vector, an error).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from rag_worker.storage.vector_flush import chunk_similarities

log = logging.getLogger(__name__)

#: LightRAG's own functions that `use_cheaper_hot_paths` replaced, by name (the tests' reference).
REPLACED: dict[str, Callable[..., Any]] = {}

MergeIds = Callable[[Iterable[str] | None, Iterable[str] | None], list[str]]
Normalize = Callable[..., str]
FixRecord = Callable[[str, str, str], str]

#: What every repair pattern of `fix_tuple_delimiter_corruption` needs outside a sound delimiter.
_DELIMITER_MARKS = frozenset("<|>")

#: Texts up to this long are names, types or keywords: their normalized form is kept.
NAME_CHARS = 120
#: Normalized names kept (least recently used go first): ~2 MB.
NAMES_KEPT = 20_000


def fast_merge(original: MergeIds, separator: str) -> MergeIds:
    """`original` (LightRAG's `merge_source_ids`) with a fast path for plain ids."""

    def merge_source_ids(existing_ids: Iterable[str] | None, new_ids: Iterable[str] | None) -> list[str]:
        sequences = [list(ids) if ids else [] for ids in (existing_ids, new_ids)]
        both = sequences[0] + sequences[1]
        # Checked and deduplicated by C loops, not a Python one: a most-named entity's list is read
        # and merged again for every relation that touches it (0.90 -> 0.60 ms for 7,600 ids).
        try:
            plain = separator not in "\x00".join(both) and list(map(str.strip, both)) == both
        except TypeError:  # an id that is not a string
            plain = False
        if not plain:
            return original(*sequences)
        merged = dict.fromkeys(both)
        merged.pop("", None)
        return list(merged)

    return merge_source_ids


def sound_records_kept(original: FixRecord) -> FixRecord:
    """`original` (LightRAG's `fix_tuple_delimiter_corruption`), a record whose delimiters are all
    sound returned at once."""

    def fix_tuple_delimiter_corruption(record: str, delimiter_core: str, tuple_delimiter: str) -> str:
        if (
            type(record) is str
            and delimiter_core
            and tuple_delimiter == f"<|{delimiter_core}|>"
            and not _DELIMITER_MARKS.intersection(delimiter_core)
        ):
            rest = record.replace(tuple_delimiter, "")
            if not _DELIMITER_MARKS.intersection(rest):
                return record
        return original(record, delimiter_core, tuple_delimiter)

    return fix_tuple_delimiter_corruption


def normalize_names_once(original: Normalize) -> Normalize:
    """`original` (LightRAG's `normalize_extracted_info`), its results for short texts kept."""
    kept = functools.lru_cache(maxsize=NAMES_KEPT)(original)

    def normalize_extracted_info(name: str, remove_inner_quotes: bool = False) -> str:
        if type(name) is str and len(name) <= NAME_CHARS:
            return str(kept(name, bool(remove_inner_quotes)))
        return original(name, remove_inner_quotes=remove_inner_quotes)

    normalize_extracted_info.names_kept = kept  # type: ignore[attr-defined]
    return normalize_extracted_info


async def pick_in_one_pass(
    query: str,
    text_chunks_storage: Any,
    chunks_vdb: Any,
    num_of_chunks: int,
    entity_info: list[dict[str, Any]],
    embedding_func: Callable[..., Awaitable[Any]],
    query_embedding: Any = None,
) -> list[str]:
    """LightRAG's `pick_by_vector_similarity` (same arguments, same answer), its similarities
    computed in one pass: the `num_of_chunks` chunk ids named in `entity_info` most similar to the
    question.  [] when there is nothing to rank or a candidate has no vector (LightRAG's caller then
    picks by weight); on an error, the first candidates."""
    del text_chunks_storage  # LightRAG's signature; the chunks' texts are not needed to rank them
    if not entity_info or num_of_chunks <= 0:
        return []
    candidates = list({chunk_id for entity in entity_info for chunk_id in entity.get("sorted_chunks", [])})
    if not candidates:
        return []
    try:
        if query_embedding is None:
            query_embedding = (await embedding_func([query], context="query"))[0]
        similarity = await chunk_similarities(chunks_vdb, candidates, query_embedding)
        if len(similarity) != len(candidates):
            missing = [chunk_id for chunk_id in candidates if chunk_id not in similarity]
            log.warning("%d of %d candidate chunks have no vector (e.g. %s): picking by weight", len(missing),
                        len(candidates), missing[:3])
            return []
        return sorted(candidates, key=similarity.__getitem__, reverse=True)[:num_of_chunks]
    except Exception:  # as LightRAG's own: the first candidates
        log.exception("ranking chunks by similarity failed; taking the first ones")
        return candidates[:num_of_chunks]


def use_cheaper_hot_paths() -> None:
    """Give LightRAG the fast merge, the kept names, the sound records kept and the one-pass chunk
    ranking (idempotent)."""
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
    REPLACED["fix_tuple_delimiter_corruption"] = lightrag.utils.fix_tuple_delimiter_corruption
    kept_sound = sound_records_kept(lightrag.utils.fix_tuple_delimiter_corruption)
    lightrag.utils.fix_tuple_delimiter_corruption = kept_sound
    lightrag.operate.fix_tuple_delimiter_corruption = kept_sound  # imported by name there
    REPLACED["pick_by_vector_similarity"] = lightrag.utils.pick_by_vector_similarity
    lightrag.utils.pick_by_vector_similarity = pick_in_one_pass
    lightrag.operate.pick_by_vector_similarity = pick_in_one_pass  # imported by name there
