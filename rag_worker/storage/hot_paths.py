"""Six of LightRAG 1.5.7's hot paths at thousands of documents, made cheaper with the same results.

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

**Cutting a list to its token budget from the part that reaches it.**  A question's entities,
relations and passages are cut to their token budgets (`truncate_list_by_token_size`: the first
items whose rendering fits) by encoding the WHOLE rendered list and decoding every token's offset.
A local question at 5,000 generated reports names entities with about 1,500 relations each: the
list of their relations was tens of thousands of tokens for a budget of 8,000, and its encoding
took 69 of the worker's 197 ms of CPU per question.  :func:`budget_on_prefix` renders items only
until their text holds more tokens than the budget, then gives LightRAG's own function that prefix
of the list.  The answer is the same: LightRAG keeps the items inside the offset of the budget's
last token, and tiktoken's `cl100k_base` and `o200k_base` split a text into pieces that hold a
blank only as their first or last characters, so a text and its prefix encode alike up to the
prefix's last run of non-blank characters.  The prefix is taken only once it holds the budget's
tokens beyond that run (`_settled_tokens`); other tokenizers, and lists that never get there, go
to LightRAG's function whole.  (One difference: an item past the prefix holding a lone surrogate,
which tiktoken would replace, sends LightRAG's function to its fall-back cut.  No store returns one:
PostgreSQL refuses them and LightRAG's JSON writer removes them.)

**Reading a local question's relations only as far as its budget can reach.**  LightRAG reads the
properties of every relation of the entities a local, hybrid or mix question found, sorts them by
the relation counts of their ends and then their weight, and keeps the first ones that fit the
relation budget (`max_relation_tokens`, 8,000 tokens).  At 5,000 generated reports a question
naming four common entities read the properties of 2,100-3,900 relations (twenty such questions).
:func:`relations_within_budget` ranks them by their ends' counts first, reads the properties of
the best ranked (whole ranks at a time: a rank's relations are ordered by their weights), sorts
them as LightRAG does, and stops reading once the relations it holds take more tokens than the
budget: no relation after them can be kept, so the first relations, in the same order, are all
that is needed.  A question whose relations one read holds (`RELATIONS_FIRST_READ`: most questions
at 100 documents) reads them as LightRAG does, beside their ends' counts, and counts no tokens.
The tokens a relation takes (:func:`relation_tokens`) are counted on its line
as `_apply_token_truncation` renders it: a line opens with `{"` after a line break, so it begins a
piece of its own for tiktoken (the encodings above; any other tokenizer: LightRAG's function), and
its tokens up to its last run of non-blank characters are the same whatever follows
(`_settled_tokens`), and never fewer than `RELATION_MIN_TOKENS` (the words `entity`, `entity` and
`description` and the digits `1` and `2`, pieces of their own).  Hybrid's round-robin with the
global relations keeps this list's first K, or the same relations with their ends the other way
round (the same tokens), among the first relations it keeps, so a relation after those that fill
the budget is not kept there either.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from rag_worker.storage.vector_flush import chunk_similarities

log = logging.getLogger(__name__)

#: LightRAG's own functions that `use_cheaper_hot_paths` replaced, by name (the tests' reference).
REPLACED: dict[str, Callable[..., Any]] = {}

MergeIds = Callable[[Iterable[str] | None, Iterable[str] | None], list[str]]
Normalize = Callable[..., str]
Truncate = Callable[[list[Any], Callable[[Any], str], str, int, Any], list[Any]]
FixRecord = Callable[[str, str, str], str]

#: What every repair pattern of `fix_tuple_delimiter_corruption` needs outside a sound delimiter.
_DELIMITER_MARKS = frozenset("<|>")

#: tiktoken encodings whose pieces hold a blank only as their first or last characters.
_PREFIX_STABLE_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})
#: Characters Python calls blank that tiktoken's `\s` does not (Unicode's White_Space): taken as
#: part of a run of non-blank characters, which only lengthens the part a prefix may encode apart.
_NOT_REGEX_BLANK = frozenset("\x1c\x1d\x1e\x1f")
#: Characters of rendered items first taken per token of the budget (English JSON: about 4 a
#: token); doubled while the prefix holds too few tokens.
_CHARS_PER_BUDGET_TOKEN = 6

#: Fewest tokens of a relation in a question's relation list (`_apply_token_truncation`'s rendering).
RELATION_MIN_TOKENS = 5
#: Relations whose properties a local question reads first (whole ranks); twice as many at each further read.
#: A question with no more relations reads them all at once, as LightRAG does.
RELATIONS_FIRST_READ = 256

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


def _settled_tokens(tokens: int, text: str) -> int:
    """How many of `text`'s `tokens` any longer text beginning with `text` also begins with: all
    but those of its last run of non-blank characters (trailing blanks included) and the character
    before it, at most one token per byte."""
    end = len(text)
    while end and text[end - 1].isspace() and text[end - 1] not in _NOT_REGEX_BLANK:
        end -= 1
    while end and not (text[end - 1].isspace() and text[end - 1] not in _NOT_REGEX_BLANK):
        end -= 1
    return tokens - len(text[max(0, end - 1):].encode("utf-8"))


def _tiktoken_pieces(tokenizer: Any) -> bool:
    """Whether `tokenizer` is LightRAG's tiktoken one with an encoding of `_PREFIX_STABLE_ENCODINGS`."""
    from lightrag.utils import TiktokenTokenizer

    return type(tokenizer) is TiktokenTokenizer and getattr(tokenizer.tokenizer, "name", None) in _PREFIX_STABLE_ENCODINGS


def budget_on_prefix(original: Truncate, chars_per_token: int = _CHARS_PER_BUDGET_TOKEN) -> Truncate:
    """`original` (LightRAG's `truncate_list_by_token_size`) given only the items that reach the
    budget, when the tokenizer's encoding allows it.  The prefix's tokens are first counted once it
    holds `chars_per_token` characters per token of the budget (0: at every item)."""

    def truncate_list_by_token_size(
        list_data: list[Any], key: Callable[[Any], str], separator: str, max_token_size: int, tokenizer: Any
    ) -> list[Any]:
        if max_token_size <= 0 or not _tiktoken_pieces(tokenizer):
            return original(list_data, key, separator, max_token_size, tokenizer)
        rendered: list[str] = []
        size, goal = 0, max_token_size * chars_per_token
        for item in list_data[:-1]:  # a prefix is never the whole list
            rendered.append(key(item))
            size += len(rendered[-1]) + len(separator)
            if size < goal:
                continue
            text = separator.join(rendered)
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: tiktoken's text would not be this one
                break
            if _settled_tokens(len(tokenizer.encode(text)), text) > max_token_size:
                return original(list_data[: len(rendered)], key, separator, max_token_size, tokenizer)
            goal *= 2
        return original(list_data, key, separator, max_token_size, tokenizer)

    return truncate_list_by_token_size


FindRelations = Callable[[list[dict[str, Any]], Any, Any], Awaitable[list[dict[str, Any]]]]


def relation_tokens(tokenizer: Any, relation: dict[str, Any]) -> int:
    """Fewest tokens `relation` adds to any relation list holding it, rendered as
    `_apply_token_truncation` renders it: its line's tokens that any text going on after it keeps
    (`_settled_tokens`), and at least `RELATION_MIN_TOKENS`.  A line begins a piece of its own (it
    opens with `{"`, after a line break), so what comes before it changes none of its tokens."""
    entity1, entity2 = relation["src_tgt"]
    line = json.dumps({"entity1": entity1, "entity2": entity2, "description": relation.get("description", "UNKNOWN")},
                      ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: tiktoken's text would not be this one
        return RELATION_MIN_TOKENS
    return max(RELATION_MIN_TOKENS, _settled_tokens(len(tokenizer.encode(line)), line))


def _ranked(pairs: list[tuple[str, str]], properties: dict[tuple[str, str], dict[str, Any]],
            ranks: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """The relations `pairs` found in `properties`, as LightRAG lists them (their properties,
    `src_tgt` and `rank`): best ranked first, then heaviest."""
    relations = []
    for pair in pairs:
        found = properties.get(pair)
        if found is None:
            continue
        if "weight" not in found:
            log.warning("Edge %s missing 'weight' attribute, using default value 1.0", pair)
            found["weight"] = 1.0
        relations.append({"src_tgt": pair, "rank": ranks.get(pair, 0), **found})
    return sorted(relations, key=lambda relation: (relation["rank"], relation["weight"]), reverse=True)


def relations_within_budget(original: FindRelations, first_read: int = RELATIONS_FIRST_READ) -> FindRelations:
    """`original` (LightRAG's `_find_most_related_edges_from_entities`), the properties read only
    for the relations that can be kept: best ranked first, whole ranks at a time (`first_read`,
    then twice as many at each read), until the relations read hold more tokens than the budget.
    Relations one read holds are read as LightRAG reads them, with their ranks, and not counted."""

    async def _find_most_related_edges_from_entities(
        node_datas: list[dict[str, Any]], query_param: Any, knowledge_graph_inst: Any
    ) -> list[dict[str, Any]]:
        budget = getattr(query_param, "max_relation_tokens", None)
        config = getattr(knowledge_graph_inst, "global_config", None) or {}
        tokenizer = config.get("tokenizer")
        if type(budget) is not int or budget <= 0 or not _tiktoken_pieces(tokenizer):
            return await original(node_datas, query_param, knowledge_graph_inst)  # (no tokenizer: nothing cut)
        names = [node["entity_name"] for node in node_datas]
        edges_of = await knowledge_graph_inst.get_nodes_edges_batch(names)
        pairs = list(dict.fromkeys(tuple(sorted(edge)) for name in names for edge in edges_of.get(name, [])))

        def properties(ranked: list[tuple[str, str]]) -> Any:  # the relations' properties, awaited
            return knowledge_graph_inst.get_edges_batch([{"src": src, "tgt": tgt} for src, tgt in ranked])

        if len(pairs) <= first_read:  # nothing to leave unread: LightRAG's two reads, side by side
            ranks, read = await asyncio.gather(knowledge_graph_inst.edge_degrees_batch(pairs), properties(pairs))
            return _ranked(pairs, read, ranks)
        ranks = await knowledge_graph_inst.edge_degrees_batch(pairs)
        by_rank = sorted(pairs, key=lambda pair: ranks.get(pair, 0), reverse=True)  # a rank's pairs in list order
        relations: list[dict[str, Any]] = []
        tokens, start, step = 0, 0, first_read
        while start < len(by_rank):
            end = min(start + step, len(by_rank))
            while end < len(by_rank) and ranks.get(by_rank[end], 0) == ranks.get(by_rank[end - 1], 0):
                end += 1  # a rank whole: its relations are ordered by their weights
            read = await properties(by_rank[start:end])
            if any(read.get(pair) is None for pair in by_rank[start:end]):  # a relation gone meanwhile: LightRAG's way
                return await original(node_datas, query_param, knowledge_graph_inst)
            for relation in _ranked(by_rank[start:end], read, ranks):
                relations.append(relation)
                tokens += relation_tokens(tokenizer, relation)
                if tokens > budget:
                    return relations
            start, step = end, step * 2
        return relations

    return _find_most_related_edges_from_entities


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
    """Give LightRAG the fast merge, the kept names, the sound records kept, the budget cut on a
    prefix, the relations read within the budget and the one-pass chunk ranking (idempotent)."""
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
    REPLACED["truncate_list_by_token_size"] = lightrag.utils.truncate_list_by_token_size
    # `atruncate_list_by_token_size` and LightRAG's other callers find it in lightrag.utils at each call.
    lightrag.utils.truncate_list_by_token_size = budget_on_prefix(lightrag.utils.truncate_list_by_token_size)
    REPLACED["_find_most_related_edges_from_entities"] = lightrag.operate._find_most_related_edges_from_entities
    # `_get_node_data` finds it in lightrag.operate at each call.
    lightrag.operate._find_most_related_edges_from_entities = relations_within_budget(
        lightrag.operate._find_most_related_edges_from_entities)
    REPLACED["pick_by_vector_similarity"] = lightrag.utils.pick_by_vector_similarity
    lightrag.utils.pick_by_vector_similarity = pick_in_one_pass
    lightrag.operate.pick_by_vector_similarity = pick_in_one_pass  # imported by name there
