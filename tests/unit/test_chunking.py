"""Chunks never split a character (SPEC §4), stay within LightRAG's token budget, cover the
text in order, and end at the strongest boundary in reach — checked with LightRAG's own
tokenizer (tiktoken o200k, offline)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_worker.chunking import Chunk, chunk_for_lightrag, chunk_text, chunking_func, token_encoder

pytestmark = pytest.mark.anyio


@cache
def tokenizer() -> Any:
    from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer

    return make_offline_tokenizer()


def encode(text: str) -> list[int]:
    return list(token_encoder(tokenizer())(text))


# Pieces that are each one user-perceived character (or a run of them) in scripts that take
# several UTF-8 bytes per character: the material a token-id slice cuts in half.
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # ZWJ sequence
FLAGS = "\U0001f1e9\U0001f1ea\U0001f1ef\U0001f1f5\U0001f1f8\U0001f1e6"  # DE JP SA
PIECES = [
    "量子计算机利用量子比特进行运算", "。", "！", "？", "研究人员测量了纠缠态", "日本語のテキスト", "한국어 문장",
    "اللغة العربية", "؟", "هل يمكن", "Größe", "Übersetzung", "straße", "naïve", "e\u0301\u0301", "a\u0308\u0323",
    FAMILY, FLAGS, "\U0001f44d\U0001f3fd", "\u2764\ufe0f", "ok", "the", "fox", ".", "!", " ", " ", " ", "\n", "\n\n",
    "Ελληνικά", "русский", "हिन्दी", "।", "🙂", "x" * 40,
]
texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=400).map("".join)
budgets = st.sampled_from([(24, 0), (24, 8), (60, 15), (240, 40), (1200, 100)])


def check_chunks(text: str, chunks: list[Chunk], budget: int) -> None:
    previous_start = -1
    covered = 0
    for chunk in chunks:
        assert "\ufffd" not in chunk.content
        assert chunk.tokens == len(encode(chunk.content)) <= budget
        assert chunk.content == text[chunk.start : chunk.end].strip()
        assert chunk.start > previous_start  # in order, always moving on
        assert not text[covered : chunk.start].strip()  # nothing but whitespace left out
        previous_start, covered = chunk.start, max(covered, chunk.end)
    assert not text[covered:].strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, sizes=budgets)
def test_chunks_never_contain_a_replacement_character_and_fit_the_budget(text: str, sizes: tuple[int, int]) -> None:
    budget, overlap = sizes
    chunks = chunk_text(text, encode, budget, overlap)
    check_chunks(text, chunks, budget)


@settings(max_examples=60, deadline=None)
@given(text=texts)
def test_no_chunk_edge_falls_inside_a_grapheme_cluster(text: str) -> None:
    import regex

    edges, position = {0}, 0
    for cluster in regex.findall(r"\X", text):
        position += len(cluster)
        edges.add(position)
    for chunk in chunk_text(text, encode, 24, 8):
        assert chunk.start in edges and chunk.end in edges


def test_a_run_longer_than_the_budget_is_cut_between_whole_graphemes() -> None:
    text = FAMILY * 300 + "中文" * 500 + "a" * 3000
    chunks = chunk_text(text, encode, 50, 10)
    check_chunks(text, chunks, 50)
    assert len(chunks) > 10
    assert all(chunk.content.count("\u200d") % 3 == 0 for chunk in chunks if FAMILY[0] in chunk.content)


def test_a_chunk_ends_at_a_paragraph_rather_than_mid_paragraph() -> None:
    first = " ".join(f"Sentence {n} of the first paragraph." for n in range(24))  # 192 of 240 tokens
    second = " ".join(f"Satz {n} im zweiten Absatz über Größe." for n in range(20))
    chunks = chunk_text(f"{first}\n\n{second}", encode, 240, 0)
    assert chunks[0].content == first  # not 48 more tokens cut from the middle of the second paragraph


def test_a_chunk_ends_after_a_cjk_or_arabic_sentence_stop() -> None:
    chinese = "量子计算机利用量子比特进行运算。" * 40
    arabic = "هل يمكن للحاسوب أن يفهم النصوص العربية؟ " * 40
    for text in (chinese, arabic):
        chunks = chunk_text(text, encode, 60, 0)
        assert len(chunks) > 1
        assert all(chunk.content[-1] in "。؟" for chunk in chunks)


def test_the_overlap_repeats_whole_sentences_of_the_previous_chunk() -> None:
    text = " ".join(f"Fact number {n} is recorded here." for n in range(100))
    chunks = chunk_text(text, encode, 60, 20)
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start < before.end  # they overlap
        assert after.content.startswith("Fact number")
        assert len(encode(text[after.start : before.end].strip())) <= 20


def test_the_result_has_the_shape_lightrag_expects() -> None:
    result = chunk_for_lightrag(tokenizer(), "Größe. 中文。\n\nNext paragraph.", None, False, 10, 100)
    assert result == [{"tokens": len(encode("Größe. 中文。\n\nNext paragraph.")), "content": "Größe. 中文。\n\nNext paragraph.",
                       "chunk_order_index": 0}]


def test_split_by_character_pieces_are_chunked_separately_and_numbered_in_order() -> None:
    text = "first part\u241esecond part\u241e" + "long piece. " * 200
    result = chunk_for_lightrag(tokenizer(), text, "\u241e", True, 10, 100)
    assert [c["content"] for c in result[:2]] == ["first part", "second part"]
    assert [c["chunk_order_index"] for c in result] == list(range(len(result)))
    assert all(c["tokens"] <= 100 for c in result)


def test_an_overlap_not_below_the_chunk_size_is_refused_like_lightrag_does() -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("text", encode, 100, 100)


async def test_the_chunking_func_given_to_lightrag_runs_off_the_event_loop() -> None:
    result = await chunking_func(tokenizer(), "Größe über alles. " * 400, None, False, 40, 240)
    assert len(result) > 1 and all("\ufffd" not in c["content"] for c in result)
