"""LightRAG's hot paths made cheaper (`rag_worker.storage.hot_paths`): the fast merge of chunk
ids gives the same list as LightRAG's own `merge_source_ids` for every input, plain ids or not;
the delimiter check returns what LightRAG's `fix_tuple_delimiter_corruption` returns for any
record; the one-pass chunk ranking picks what LightRAG's own `pick_by_vector_similarity` picks;
the budget cut on a prefix keeps what LightRAG's `truncate_list_by_token_size` keeps; the relations
read within the budget are LightRAG's first relations, so the same ones are kept."""

from __future__ import annotations

import collections
import functools
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_worker.storage.lightrag_setup import import_lightrag

import_lightrag()  # installs the fast merge (idempotent), as the worker does at start

from lightrag import operate, utils  # noqa: E402
from lightrag.constants import GRAPH_FIELD_SEP  # noqa: E402

from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer  # noqa: E402
from rag_worker.storage.hot_paths import (  # noqa: E402
    RELATION_MIN_TOKENS,
    RELATIONS_FIRST_READ,
    REPLACED,
    budget_on_prefix,
    fast_merge,
    pick_in_one_pass,
    relation_tokens,
    relations_within_budget,
)

ORIGINAL = utils.split_string_by_multi_markers  # untouched: the reference splits with it


def lightrags_merge(existing: Any, new: Any) -> list[str]:
    """LightRAG 1.5.7's `merge_source_ids`, restated with its own split (no warnings)."""
    merged: list[str] = []
    for sequence in (existing, new):
        for source_id in sequence or []:
            if source_id:
                for part in ORIGINAL(str(source_id), [GRAPH_FIELD_SEP]):
                    if part not in merged:
                        merged.append(part)
    return merged


PLAIN = st.from_regex(r"chunk-[0-9a-f]{4}", fullmatch=True)
ODD = st.sampled_from(["", " ", " chunk-aaaa", "chunk-bbbb ", f"chunk-cccc{GRAPH_FIELD_SEP}chunk-dddd", f"{GRAPH_FIELD_SEP}"])
IDS = st.lists(st.one_of(PLAIN, PLAIN, PLAIN, ODD), max_size=30)


@given(IDS, IDS)
def test_the_fast_merge_gives_lightrags_result_for_any_ids(existing: list[str], new: list[str]) -> None:
    assert utils.merge_source_ids(existing, new) == lightrags_merge(existing, new)


def test_lightrags_indexing_uses_the_fast_merge_and_it_takes_generators() -> None:
    assert operate.merge_source_ids is utils.merge_source_ids and operate.merge_source_ids.__module__ == fast_merge.__module__
    ids = [f"chunk-{n:04x}" for n in range(3)]
    assert operate.merge_source_ids((i for i in ids), iter(["chunk-0001", "chunk-9999"])) == [*ids, "chunk-9999"]
    assert operate.merge_source_ids(None, [f"a{GRAPH_FIELD_SEP}b", "a"]) == ["a", "b"]  # LightRAG's own path


def test_odd_ids_go_to_lightrags_function() -> None:
    calls = []

    def original(existing: Any, new: Any) -> list[str]:
        calls.append((existing, new))
        return ["from LightRAG"]

    merge = fast_merge(original, GRAPH_FIELD_SEP)
    assert merge(["a", "b", "a"], ["c"]) == ["a", "b", "c"] and calls == []
    assert merge(["a"], [" b"]) == ["from LightRAG"] and calls == [(["a"], [" b"])]
    assert merge(["a", 5], ["b"]) == ["from LightRAG"] and calls[-1] == (["a", 5], ["b"])  # not a string
    assert merge(["a", "", "b"], ["a", ""]) == ["a", "b"] and len(calls) == 2  # empty ids left out


NAME_PARTS = list("ab AZ09.\"'“”‘’《》（）—－　中文 \u00a0\u202f") + ["<p>", "</br>", "Ｎ", "０", "12", "1.2"]
NAMES = st.lists(st.sampled_from(NAME_PARTS), max_size=20).map("".join)


@given(NAMES, st.booleans())
def test_kept_names_are_what_lightrag_computes(name: str, remove_inner_quotes: bool) -> None:
    normalize = utils.normalize_extracted_info
    original = normalize.names_kept.__wrapped__  # type: ignore[attr-defined]
    expected = original(name, remove_inner_quotes=remove_inner_quotes)
    assert normalize(name, remove_inner_quotes=remove_inner_quotes) == expected
    assert normalize(name, remove_inner_quotes) == expected  # again: the kept result


def test_long_texts_are_computed_not_kept() -> None:
    normalize = utils.normalize_extracted_info
    description = "“Acme Corporation” funded the ZEBRA-7741 project in Berlin. " * 5
    before = normalize.names_kept.cache_info().currsize  # type: ignore[attr-defined]
    assert normalize(description) == normalize.names_kept.__wrapped__(description)  # type: ignore[attr-defined]
    assert normalize.names_kept.cache_info().currsize == before  # type: ignore[attr-defined]


class VectorStore:
    """A chunk store as LightRAG's picking reads it: `get_vectors_by_ids` (missing ids left out)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    async def get_vectors_by_ids(self, ids: list[str]) -> dict[str, list[float]]:
        return {chunk_id: self.vectors[chunk_id] for chunk_id in ids if chunk_id in self.vectors}


async def never_embeds(*_: Any, **__: Any) -> Any:
    raise AssertionError("the question's vector was given")


VECTOR = st.lists(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0]), min_size=4, max_size=4)


CHUNK = st.sampled_from([f"c{n}" for n in range(12)])


@given(
    st.dictionaries(CHUNK, VECTOR, min_size=9),  # most candidates have a vector, some do not
    st.lists(st.lists(CHUNK, max_size=8), max_size=4),
    VECTOR,
    st.integers(min_value=-1, max_value=15),
)
def test_the_one_pass_ranking_picks_what_lightrag_picks(
    vectors: dict[str, list[float]], entities: list[list[str]], question: list[float], wanted: int
) -> None:
    """Any vectors (zero ones included), candidates with and without one, any number asked for:
    the same similarities picked, best first; [] where LightRAG gives []."""
    import anyio
    import numpy as np

    store = VectorStore(vectors)
    info = [{"sorted_chunks": chunk_ids} for chunk_ids in entities]
    arguments = ("q", None, store, wanted, info, never_embeds, np.asarray(question, dtype=np.float32))
    ours = anyio.run(pick_in_one_pass, *arguments)
    theirs = anyio.run(REPLACED["pick_by_vector_similarity"], *arguments)

    def similarity(chunk_id: str) -> float:
        return float(utils.cosine_similarity(np.asarray(question, dtype=np.float32), np.asarray(vectors[chunk_id], dtype=np.float32)))

    assert len(ours) == len(theirs)
    assert np.allclose([similarity(c) for c in ours], [similarity(c) for c in theirs], atol=1e-6)  # ties in any order


def test_lightrags_question_path_uses_the_one_pass_ranking() -> None:
    assert operate.pick_by_vector_similarity is pick_in_one_pass is utils.pick_by_vector_similarity


RECORD_PARTS = st.sampled_from(["<|#|>", "<|S|>", "<", "|", ">", "#", "S", "s", "\\", ":", " ", "a", "entity", "Nimbus"])
DELIMITERS = st.sampled_from([("#", "<|#|>"), ("S", "<|S|>"), ("s", "<|S|>"), ("|", "<|||>"), ("", "<||>")])


@settings(max_examples=1000)
@given(st.lists(RECORD_PARTS, max_size=14).map("".join), DELIMITERS)
@example("entity<|#|>Nimbus<|#|>a>b", ("#", "<|#|>"))  # a '>' of a mangled delimiter: <|#|>> -> <|#|>
@example("a<|#|>|b", ("#", "<|#|>"))
@example("name<||type", ("#", "<|#|>"))
@example("a <|> b<X|#|Y>c", ("#", "<|#|>"))
def test_the_delimiter_check_returns_lightrags_record_for_any_record(record: str, delimiters: tuple[str, str]) -> None:
    """Sound, mangled or odd delimiters, a core LightRAG lower-cased: the same record back."""
    core, tuple_delimiter = delimiters
    assert utils.fix_tuple_delimiter_corruption(record, core, tuple_delimiter) == REPLACED[
        "fix_tuple_delimiter_corruption"](record, core, tuple_delimiter)


def test_lightrags_extraction_uses_the_delimiter_check() -> None:
    assert operate.fix_tuple_delimiter_corruption is utils.fix_tuple_delimiter_corruption
    assert operate.fix_tuple_delimiter_corruption.__module__ == fast_merge.__module__


TOKENIZERS = {model: make_offline_tokenizer(model) for model in ("gpt-4o-mini", "gpt-4")}  # o200k, cl100k
TEXT_PARTS = st.sampled_from([
    "Acme", "berlin", "IT'S", "'ll", " ", "  ", "\t", "\n", "\r\n", "\x1c", "\x85", "\u3000", "\xa0", "\u200b",
    "中文字符", "。", "...", "!!!", "?!", "123456", "٣٤", "é", "e\u0301", "🙂", "👍🏽", "<|endoftext|>", "/", "\\",
    '"', "{", "}", "—", "ß", "Ǆ",
])
ITEMS = st.lists(st.lists(TEXT_PARTS, max_size=12).map("".join), max_size=40)
KEYS = {"text": str, "json": lambda text: json.dumps({"description": text}, ensure_ascii=False)}


@settings(max_examples=1500, deadline=None)
@given(ITEMS, st.sampled_from(sorted(KEYS)), st.sampled_from(["\n", "", " ", "\n\n", "/", "\r\n", "},"]),
       st.integers(min_value=-1, max_value=40), st.sampled_from(sorted(TOKENIZERS)))
@example(["word " * 30 + "tail"] * 10, "text", "\n", 12, "gpt-4o-mini")  # the prefix ends in a long word run
@example(["中文字符" * 40] * 8, "json", "\n", 20, "gpt-4o-mini")  # no blank at all: the prefix is the whole list
@example(["a   "] * 200, "text", "", 7, "gpt-4")  # blanks at the prefix's end
@example(["a"] * 300, "text", "", 3, "gpt-4o-mini")  # one piece across items: its tokens shift with the next item
def test_the_budget_cut_on_a_prefix_keeps_what_lightrag_keeps(
    texts: list[str], key: str, separator: str, budget: int, model: str
) -> None:
    """Any items (blanks of every kind, CJK with no blank, emoji, special-token text, punctuation
    runs), any separator, budget and encoding: the same items kept."""
    arguments = (texts, KEYS[key], separator, budget, TOKENIZERS[model])
    theirs = REPLACED["truncate_list_by_token_size"](*arguments)
    assert utils.truncate_list_by_token_size(*arguments) == theirs
    # the shortest prefix allowed (its tokens counted at every item): where a wrong margin shows
    assert budget_on_prefix(REPLACED["truncate_list_by_token_size"], chars_per_token=0)(*arguments) == theirs


def test_the_budget_cut_encodes_only_the_prefix_that_reaches_the_budget() -> None:
    """A question's relations at 5,000 documents: thousands of items for a budget of 8,000
    tokens.  LightRAG's function is given the first few hundred, and keeps what it keeps from all."""
    relations = [{"entity1": f"Acme Corporation {n}", "entity2": f"Berlin {n}", "description": f"Acme Corporation opened office {n} in Berlin to support its teams."} for n in range(6000)]
    seen: list[int] = []

    def original(items: list[Any], *rest: Any) -> list[Any]:
        seen.append(len(items))
        return list(REPLACED["truncate_list_by_token_size"](items, *rest))

    cut = budget_on_prefix(original)
    render = lambda item: json.dumps(item, ensure_ascii=False)  # noqa: E731 (LightRAG's key)
    kept = cut(relations, render, "\n", 8000, TOKENIZERS["gpt-4o-mini"])
    assert kept == REPLACED["truncate_list_by_token_size"](relations, render, "\n", 8000, TOKENIZERS["gpt-4o-mini"])
    assert 200 < len(kept) < seen[0] < 1000


@pytest.mark.parametrize("case", ["short list", "other tokenizer", "no budget"])
def test_lists_that_do_not_reach_the_budget_and_other_tokenizers_go_to_lightrag_whole(case: str) -> None:
    seen: list[int] = []

    def original(items: list[Any], *rest: Any) -> list[Any]:
        seen.append(len(items))
        return items[:1]

    class Whitespace:  # a tokenizer LightRAG could be given: one token a word
        def encode(self, text: str) -> list[int]:
            return [0] * len(text.split())

    items = ["alpha beta"] * (10 if case == "short list" else 5000)
    tokenizer = Whitespace() if case == "other tokenizer" else TOKENIZERS["gpt-4o-mini"]
    budget_on_prefix(original)(items, str, "\n", 0 if case == "no budget" else 100, tokenizer)
    assert seen == [len(items)]


def test_lightrags_question_path_uses_the_budget_cut() -> None:
    assert utils.truncate_list_by_token_size.__module__ == fast_merge.__module__
    assert operate.atruncate_list_by_token_size is utils.atruncate_list_by_token_size  # finds it in utils at each call


class Graph:
    """A graph storage as LightRAG's local relations read it: each entity's relations, their ends'
    counts and their properties (many equal counts and weights: ties)."""

    def __init__(self, edges: dict[tuple[str, str], tuple[float, str]], tokenizer: Any) -> None:
        self.edges = edges
        self.global_config = {"tokenizer": tokenizer}
        self.properties_read = 0
        self.property_reads = 0
        self.lists_read = 0

    async def get_nodes_edges_batch(self, names: list[str]) -> dict[str, list[tuple[str, str]]]:
        self.lists_read += 1
        return {name: [(name, t if s == name else s) for s, t in self.edges if name in (s, t)] for name in names}

    async def edge_degrees_batch(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
        degree = collections.Counter(name for edge in self.edges for name in edge)
        return {(s, t): degree[s] + degree[t] for s, t in pairs}

    async def get_edges_batch(self, pairs: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        self.properties_read += len(pairs)
        self.property_reads += 1
        found = {}
        for pair in pairs:
            key = (pair["src"], pair["tgt"])
            if key in self.edges:
                weight, description = self.edges[key]
                found[key] = {"weight": weight, "description": description}
        return found


def rendered(relation: dict[str, Any]) -> str:
    """A relation, local or global, as `_apply_token_truncation` renders it to count its tokens."""
    entity1, entity2 = relation["src_tgt"] if "src_tgt" in relation else (relation["src_id"], relation["tgt_id"])
    return json.dumps({"entity1": entity1, "entity2": entity2, "description": relation.get("description", "UNKNOWN")},
                      ensure_ascii=False)


def round_robin(local: list[dict[str, Any]], global_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """LightRAG's merge of a hybrid question's local and global relations (`_perform_kg_search`)."""
    merged, seen = [], set()
    for i in range(max(len(local), len(global_))):
        for relations in (local, global_):
            if i < len(relations):
                relation = relations[i]
                key = tuple(sorted(relation["src_tgt"] if "src_tgt" in relation else (relation["src_id"], relation["tgt_id"])))
                if key not in seen:
                    merged.append(relation)
                    seen.add(key)
    return merged


DESCRIPTION_PARTS = ["Acme opened an office in Berlin.", "中文字符" * 30, "x" * 200, "<|endoftext|>", '"quoted"', " ",
                     "\\n", "🙂" * 20, "ends with a blank ", "。", "", "report 42 names Nimbus"]


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=8, max_value=60), st.integers(min_value=20, max_value=700), st.integers(min_value=0, max_value=10**6),
       st.integers(min_value=1, max_value=6), st.sampled_from([1, 16, 64, RELATIONS_FIRST_READ]))
def test_relations_read_within_the_budget_are_lightrags_first_and_keep_the_same(
    names: int, edges: int, seed: int, found: int, first_read: int
) -> None:
    """Random graphs with many ties in counts and weights, descriptions from empty to hundreds of
    tokens (CJK with no blank, special-token text, quotes), budgets from a few relations to more
    than there are, first reads from one relation to more than there are: LightRAG's first
    relations in LightRAG's order, and the same relations kept from them, alone and merged with a
    hybrid question's global relations (some the same relations, their ends the other way round)."""
    import random

    import anyio

    rnd = random.Random(seed)
    entities = [f"E{n}" if n % 3 else f"名{n}" for n in range(names)]
    graph = Graph({tuple(sorted((rnd.choice(entities), rnd.choice(entities)))): (
        rnd.choice([1.0, 1.0, 2.0, 0.5]), "".join(rnd.choices(DESCRIPTION_PARTS, k=rnd.choice([0, 1, 3, 8]))))
        for _ in range(edges)}, TOKENIZERS["gpt-4o-mini"])
    nodes = [{"entity_name": name} for name in rnd.sample(entities, found)]
    budget = rnd.choice([5, 20, 60, 200, 1000, 4000])
    param = type("QueryParam", (), {"max_relation_tokens": budget})()
    theirs = anyio.run(REPLACED["_find_most_related_edges_from_entities"], nodes, param, graph)
    graph.properties_read = graph.property_reads = graph.lists_read = 0
    ours = anyio.run(relations_within_budget(REPLACED["_find_most_related_edges_from_entities"], first_read), nodes, param, graph)
    assert ours == theirs[: len(ours)] and (ours or not theirs)
    assert graph.lists_read == 1  # the entities' relations read once, whatever their number
    if len(theirs) <= first_read:
        assert ours == theirs and graph.property_reads == 1  # one read holds them: LightRAG's list, whole
    cut = functools.partial(REPLACED["truncate_list_by_token_size"], key=rendered, separator="\n",
                            max_token_size=budget, tokenizer=TOKENIZERS["gpt-4o-mini"])
    assert cut(ours) == cut(theirs)
    global_ = [{"src_id": t, "tgt_id": s, **props} if rnd.random() < 0.5 else {"src_id": s, "tgt_id": t, **props}
               for (s, t), props in ((pair, {"weight": w, "description": d}) for pair, (w, d) in rnd.sample(
                   sorted(graph.edges.items()), min(len(graph.edges), rnd.choice([1, 10, 100]))))]
    assert cut(round_robin(ours, global_)) == cut(round_robin(theirs, global_))


def test_a_question_naming_common_entities_reads_the_properties_of_the_relations_its_budget_keeps() -> None:
    """Three entities with 1,500 relations each and descriptions of about 100 tokens (a local
    question at 5,000 documents): a few hundred relations' properties read, not 4,500, and the
    same relations kept."""
    import anyio

    hubs = ["Acme Corporation", "Nimbus Scheduler", "Berlin"]
    edges = {tuple(sorted((hub, f"{hub} partner {n}"))): (1.0 + n % 3, f"{hub} and partner {n} worked together on report {n} " * 6)
             for hub in hubs for n in range(1500)}
    edges |= {(f"{hub} partner {n}", f"topic {k}"): (1.0, "") for hub in hubs for n in range(1500) for k in range(n % 40)}
    graph = Graph(edges, TOKENIZERS["gpt-4o-mini"])  # partners of 1-40 relations: ranks of 37-38 relations a hub
    param = type("QueryParam", (), {"max_relation_tokens": 8000})()
    nodes = [{"entity_name": hub} for hub in hubs]
    theirs = anyio.run(REPLACED["_find_most_related_edges_from_entities"], nodes, param, graph)
    graph.properties_read = graph.property_reads = 0
    ours = anyio.run(relations_within_budget(REPLACED["_find_most_related_edges_from_entities"]), nodes, param, graph)
    cut = functools.partial(REPLACED["truncate_list_by_token_size"], key=rendered, separator="\n",
                            max_token_size=8000, tokenizer=TOKENIZERS["gpt-4o-mini"])
    assert cut(ours) == cut(theirs) and 50 < len(cut(ours)) < len(ours)
    assert graph.properties_read < 600 and ours == theirs[: len(ours)]
    assert graph.property_reads == 1  # the first read (whole ranks) holds the relations the budget keeps


@given(st.text(max_size=12), st.text(max_size=12), st.text(max_size=20))
def test_a_rendered_relation_takes_at_least_the_fewest_tokens(entity1: str, entity2: str, description: str) -> None:
    """The bound the relations read rely on, for any names and description, alone and joined."""
    relation = {"src_tgt": (entity1, entity2), "description": description}
    for tokenizer in TOKENIZERS.values():
        assert len(tokenizer.encode(rendered(relation))) >= RELATION_MIN_TOKENS
        assert len(tokenizer.encode("\n".join([rendered(relation)] * 3))) >= 3 * RELATION_MIN_TOKENS


RELATIONS = st.builds(lambda ends, description, swap: {"src_tgt": ends[::-1] if swap else ends, "description": description},
                      st.tuples(st.text(max_size=8), st.text(max_size=8)),
                      st.lists(st.sampled_from(DESCRIPTION_PARTS + ["a", "  ", "\t"]), max_size=6).map("".join), st.booleans())


@settings(max_examples=500, deadline=None)
@given(st.lists(RELATIONS, min_size=1, max_size=6), st.lists(RELATIONS, max_size=3), st.sampled_from(sorted(TOKENIZERS)))
def test_a_relations_counted_tokens_are_kept_by_any_list_going_on_after_it(
    relations: list[dict[str, Any]], more: list[dict[str, Any]], model: str
) -> None:
    """What the relations read rely on: the tokens counted for the relations of a list begin the
    encoding of that list followed by anything a relation list can hold."""
    tokenizer = TOKENIZERS[model]
    counted = sum(relation_tokens(tokenizer, relation) for relation in relations)
    alone = tokenizer.encode("\n".join(map(rendered, relations)))
    going_on = tokenizer.encode("\n".join(map(rendered, relations + more)) + ("\n" if more else ""))
    assert counted <= len(alone) and alone[:counted] == going_on[:counted]


def test_relations_are_read_whole_for_a_tokenizer_the_bound_was_not_shown_for() -> None:
    import anyio

    class Whole:  # one token for any text: a relation could take fewer than RELATION_MIN_TOKENS
        def encode(self, text: str) -> list[int]:
            return [0]

    edges = {("A", f"B{n}"): (1.0, "") for n in range(50)}
    graph = Graph(edges, Whole())
    param = type("QueryParam", (), {"max_relation_tokens": 5})()
    found = anyio.run(relations_within_budget(REPLACED["_find_most_related_edges_from_entities"]), [{"entity_name": "A"}], param, graph)
    assert len(found) == 50 and graph.properties_read == 50  # LightRAG's function: every relation


def test_lightrags_local_questions_read_relations_within_the_budget() -> None:
    assert operate._find_most_related_edges_from_entities.__module__ == fast_merge.__module__
