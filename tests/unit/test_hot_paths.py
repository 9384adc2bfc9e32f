"""LightRAG's hot paths made cheaper (`rag_worker.storage.hot_paths`): the fast merge of chunk
ids gives the same list as LightRAG's own `merge_source_ids` for every input, plain ids or not;
the delimiter check returns what LightRAG's `fix_tuple_delimiter_corruption` returns for any
record; the one-pass chunk ranking picks what LightRAG's own `pick_by_vector_similarity` picks."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_worker.storage.lightrag_setup import import_lightrag

import_lightrag()  # installs the fast merge (idempotent), as the worker does at start

from lightrag import operate, utils  # noqa: E402
from lightrag.constants import GRAPH_FIELD_SEP  # noqa: E402

from rag_worker.storage.hot_paths import REPLACED, fast_merge, pick_in_one_pass  # noqa: E402

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
