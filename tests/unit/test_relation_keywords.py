"""A relation's derived keywords are a bounded sample (rag_worker.storage.relation_keywords): the
same whatever order documents come in, kept when a merge adds to it, also after a delete's
rebuild, and written the same to the graph and the vector text; keywords a user sets are kept
as given.  Real LightRAG on the real embedded engine."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from config.storages import ENGINE_STORAGES
from rag_worker.storage.relation_keywords import MAX_RELATION_KEYWORDS, bounded_keywords
from tests.engine_rows import engine_rows, lightrag_on

pytestmark = pytest.mark.anyio

SOURCE, TARGET = "Kestrel Array", "Halvorsen Foundation"
#: Linking words: each document relates the two by two of its own (the extractor's keywords).
VERBS = """funded audited leased insured hosted licensed reviewed surveyed catalogued
repaired upgraded rebuilt financed mapped monitored calibrated inspected certified
rented sponsored""".split()
NOUNS = """telescopes antennas receivers cables dishes lenses mirrors sensors masts
generators""".split()


def documents() -> list[str]:
    return [f"{SOURCE} {verb} {noun} for the {TARGET}." for verb, noun in zip(VERBS, NOUNS * 2, strict=True)]


def words(keywords: str) -> set[str]:
    return {word for word in keywords.split(",") if word}


@pytest.fixture
async def rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    async with lightrag_on(tmp_path, ENGINE_STORAGES) as instance:
        yield instance


async def relation(rag: Any) -> tuple[str, str]:
    """The stored edge's keywords, and the relation's vector text."""
    from lightrag.utils import compute_mdhash_id

    edge = await rag.chunk_entity_relation_graph.get_edge(SOURCE, TARGET)
    low, high = sorted([SOURCE, TARGET])
    row = await rag.relationships_vdb.get_by_id(compute_mdhash_id(low + high, prefix="rel-"))
    assert edge is not None and row is not None
    return str(edge["keywords"]), str(row["content"])


def derived_text(keywords: str, description: str) -> str:
    """LightRAG's vector text of a relation it derived."""
    low, high = sorted([SOURCE, TARGET])
    return f"{keywords}\t{low}\n{high}\n{description}"


def test_few_keywords_are_left_as_written_and_many_become_the_same_sample_in_any_order() -> None:
    assert bounded_keywords("opened,office") == "opened,office"
    assert bounded_keywords(" b , a,a") == " b , a,a"  # LightRAG's own text, untouched
    rnd = random.Random(20261127)
    vocabulary = [f"word{number}" for number in range(200)]
    for _ in range(200):
        union = rnd.sample(vocabulary, rnd.randint(MAX_RELATION_KEYWORDS + 1, 120))
        whole = bounded_keywords(",".join(union))
        assert len(words(whole)) == MAX_RELATION_KEYWORDS and words(whole) <= set(union)
        assert whole.split(",") == sorted(whole.split(","))
        rnd.shuffle(union)
        assert bounded_keywords(",".join(union)) == whole  # any order
        # A merge: what a kept sample and the newer keywords keep is what the whole union would.
        cut = rnd.randint(1, len(union) - 1)
        assert bounded_keywords(",".join([*words(bounded_keywords(",".join(union[:cut]))), *union[cut:]])) == whole
    assert bounded_keywords("<SEP>".join(vocabulary[:30])) == bounded_keywords(",".join(vocabulary[:30]))


async def test_merges_and_a_deletes_rebuild_keep_the_sample_and_an_edit_keeps_what_the_user_set(rag: Any) -> None:
    texts = documents()
    ids = [f"doc-{number:02d}" for number in range(len(texts))]
    for start in range(0, len(texts), 5):  # merges into a stored relation, not one batch
        batch = slice(start, start + 5)
        await rag.ainsert(texts[batch], ids=ids[batch], file_paths=[f"{i}.md" for i in ids[batch]])
    union = [*VERBS, *NOUNS]  # each document's linking words are the relation's keywords
    stored, text = await relation(rag)
    description = (await rag.chunk_entity_relation_graph.get_edge(SOURCE, TARGET))["description"]
    assert stored == bounded_keywords(",".join(union)) and text == derived_text(stored, description)
    assert len(words(stored)) == MAX_RELATION_KEYWORDS < len(union)

    await rag.adelete_by_doc_id(ids[0])  # rebuilt from the other documents' extractions
    rebuilt, text = await relation(rag)
    description = (await rag.chunk_entity_relation_graph.get_edge(SOURCE, TARGET))["description"]
    assert rebuilt == bounded_keywords(",".join(word for word in union if word != VERBS[0]))
    assert text == derived_text(rebuilt, description) and VERBS[0] not in words(rebuilt)

    chosen = ",".join(f"term{number}" for number in range(MAX_RELATION_KEYWORDS + 5))
    await rag.aedit_relation(SOURCE, TARGET, {"keywords": chosen})
    edited, text = await relation(rag)
    assert edited == chosen and chosen in text  # LightRAG's edit lays its text out its own way


async def test_a_description_merged_again_keeps_its_text_and_no_summary_is_cached(rag: Any, tmp_path: Path) -> None:
    """The built-in summarises from the second fragment (`extractor.adapt_lightrag`): a relation
    merged once a document keeps its lead, and its text changes only when a new sentence ranks
    into the sample, never to "summary<SEP>newest" and back (LightRAG's join of two fragments,
    which changed it at every merge).  Summaries are not cached; extractions are."""
    texts = documents()
    descriptions = []
    for number, text in enumerate(texts[:14]):
        await rag.ainsert(text, ids=f"doc-{number:02d}", file_paths=f"{number}.md")
        descriptions.append((await rag.chunk_entity_relation_graph.get_edge(SOURCE, TARGET))["description"])
    assert all("<SEP>" not in description and description.startswith(texts[0]) for description in descriptions)
    changes = sum(before != after for before, after in zip(descriptions[2:], descriptions[3:], strict=False))
    assert changes <= 4, descriptions  # 11 merges into a full sample
    cached = engine_rows(tmp_path / "data", "lightrag_llm_cache", rag.workspace)
    assert cached and {row["cache_type"] for row in cached.values()} == {"extract"}
