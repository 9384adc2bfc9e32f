"""The fast merge of chunk ids LightRAG's indexing uses (`rag_worker.storage.hot_paths`): the
same list as LightRAG's own `merge_source_ids` for every input, plain ids or not."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rag_worker.storage.lightrag_setup import import_lightrag

import_lightrag()  # installs the fast merge (idempotent), as the worker does at start

from lightrag import operate, utils  # noqa: E402
from lightrag.constants import GRAPH_FIELD_SEP  # noqa: E402

from rag_worker.storage.hot_paths import fast_merge  # noqa: E402

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
