"""A question's chunk ranking and search from the vectors the worker keeps
(rag_worker/storage/chunk_vectors.py): LightRAG's cosines, the server asked only for chunks not
kept, their vectors read without making the question wait, and never a document's former vectors
once its status row changed, whoever changed it; a store held whole searched exactly, as
LightRAG's search ranks.  Real LightRAG (`PGVectorStorage`, `PGDocStatusStorage`) on the
real embedded engine."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from rag_worker.query_cache import observing_chunk_scores
from rag_worker.storage import chunk_vectors
from rag_worker.storage.vector_flush import chunk_similarities, reading_committed_state
from tests.unit.test_vector_flush import counting_lightrag
from tests.unit.test_vector_flush_engine import engine_dir  # noqa: F401 - the module's engine

pytestmark = pytest.mark.anyio

QUESTION = np.asarray([3.0, 1.0, 0.5, 1.0, 2.0, 1.0, 1.0, 0.0], dtype=np.float32)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace() -> str:
    return f"t_{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def rag(engine_dir: Path, tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:  # noqa: F811
    """A LightRAG instance whose vectors and doc status live in the engine.  Its vectors are kept
    as rankings need them: not all read at the first (the tests of that say so)."""
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    monkeypatch.setattr(chunk_vectors, "READ_ALL_AT_MOST", 0)
    async with counting_lightrag(tmp_path, workspace, vector_storage="PGVectorStorage",
                                 doc_status_storage="PGDocStatusStorage", model_name="count8") as instance:
        yield instance


def recorded(monkeypatch: pytest.MonkeyPatch, name: str) -> list[list[str]]:
    """The ids of each call of `chunk_vectors.<name>` from now on: `_read` (vectors read to be
    kept) or `_in_engine` (cosines asked of the server)."""
    function = getattr(chunk_vectors, name)
    calls: list[list[str]] = []

    async def recording(storage: Any, ids: list[str], *args: Any) -> Any:
        calls.append(sorted(ids))
        return await function(storage, ids, *args)

    monkeypatch.setattr(chunk_vectors, name, recording)
    return calls


async def index(rag: Any, doc_id: str, texts: list[str], status: str = "processed") -> list[str]:
    """Write a document's chunks and then its status row, as LightRAG's pipeline does."""
    chunks = {f"{doc_id}-chunk-{n:03d}": {"content": text, "full_doc_id": doc_id, "tokens": 3, "chunk_order_index": n,
                                          "file_path": f"{doc_id}.md"} for n, text in enumerate(texts)}
    await rag.chunks_vdb.upsert(chunks)
    await rag.chunks_vdb.index_done_callback()
    await rag.doc_status.upsert({doc_id: {"status": status, "content_summary": texts[0][:20], "content_length": 9,
                                          "chunks_count": len(texts), "chunks_list": list(chunks),
                                          "file_path": f"{doc_id}.md"}})
    return list(chunks)


async def ranked(rag: Any, ids: list[str], question: np.ndarray = QUESTION) -> dict[str, float]:
    """A question's ranking, and then the background read it started."""
    with reading_committed_state():
        similarity = await chunk_similarities(rag.chunks_vdb, ids, question)
    await chunk_vectors.filled(rag.chunks_vdb)
    return similarity


async def keep(rag: Any, ids: list[str]) -> None:
    """Rank `ids` twice: the second ranking reads their vectors to keep them."""
    await ranked(rag, ids)
    await ranked(rag, ids)
    assert set(ids) <= set(chunk_vectors._kept_for(rag.chunks_vdb).rows)


async def lightrag_cosines(rag: Any, ids: list[str], question: np.ndarray = QUESTION) -> dict[str, float]:
    from lightrag.utils import cosine_similarity

    stored = await rag.chunks_vdb.get_vectors_by_ids(ids)  # LightRAG's own read
    return {key: float(cosine_similarity(question, np.asarray(vector, dtype=np.float32))) for key, vector in stored.items()}


def assert_close(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    assert all(abs(got[key] - expected[key]) < 1e-6 for key in expected), (got, expected)


async def test_a_ranking_computes_lightrags_cosines_and_asks_the_server_only_for_chunks_not_kept(
    rag: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers for chunks not kept, and the vectors of those it answered for before are
    read to be kept: the third ranking asks only for chunks whose document has no status row
    (never kept), rows still being indexed and unknown ids (both left out).  Each gives
    LightRAG's cosines; a zero question gives 0.0."""
    kept = await index(rag, "doc-a", [f"text {'x' * n}" for n in range(6)])
    unlisted = await index(rag, "doc-b", ["no status yet", "another"])
    await rag.doc_status.delete(["doc-b"])
    await rag.chunks_vdb.upsert({"doc-a-chunk-009": {"content": "still indexing", "full_doc_id": "doc-a"}})
    asked, reads = recorded(monkeypatch, "_in_engine"), recorded(monkeypatch, "_read")
    ids = [*kept, *unlisted, "doc-a-chunk-009", "missing"]

    rankings = [await ranked(rag, ids) for _ in range(3)]

    expected = await lightrag_cosines(rag, kept + unlisted)
    for similarity in rankings:
        assert_close(similarity, expected)
    assert asked == [sorted(ids), sorted(ids), sorted([*unlisted, "doc-a-chunk-009", "missing"])]
    assert reads == [sorted(kept + unlisted), sorted(unlisted)]
    assert await ranked(rag, kept[:2], np.zeros(8, dtype=np.float32)) == {kept[0]: 0.0, kept[1]: 0.0}
    assert await ranked(rag, ["missing"]) == {}


async def test_a_ranking_never_waits_for_a_read_of_vectors(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rankings answer while the read is held; one read at a time; then the vectors are kept."""
    ids = await index(rag, "doc-a", ["short", "a longer text"])
    await ranked(rag, ids)
    read, released, reads = chunk_vectors._read, asyncio.Event(), []

    async def slow_read(storage: Any, wanted: list[str]) -> Any:
        reads.append(wanted)
        await released.wait()
        return await read(storage, wanted)

    monkeypatch.setattr(chunk_vectors, "_read", slow_read)
    with reading_committed_state(), anyio.fail_after(10):
        assert_close(await chunk_similarities(rag.chunks_vdb, ids, QUESTION), await lightrag_cosines(rag, ids))
        assert_close(await chunk_similarities(rag.chunks_vdb, ids, QUESTION), await lightrag_cosines(rag, ids))
    released.set()
    await chunk_vectors.filled(rag.chunks_vdb)
    assert len(reads) == 1
    asked = recorded(monkeypatch, "_in_engine")

    await ranked(rag, ids)

    assert asked == []


async def test_a_replaced_document_is_ranked_by_its_new_vectors(rag: Any) -> None:
    """A new version reuses its chunk ids with new texts: once the old version is deleted (its
    status row goes) the kept vectors of the old one are never used again."""
    ids = await index(rag, "doc-a", ["short", "a longer text"])
    await keep(rag, ids)
    before = await ranked(rag, ids)
    await rag.chunks_vdb.delete(ids)
    await rag.chunks_vdb.index_done_callback()
    await rag.doc_status.delete(["doc-a"])
    assert await index(rag, "doc-a", ["the new, longer first", "new"]) == ids

    after = await ranked(rag, ids)

    assert_close(after, await lightrag_cosines(rag, ids))
    assert after != pytest.approx(before)


async def test_a_chunk_rewritten_in_place_is_ranked_by_its_new_vector_once_its_status_changes(rag: Any) -> None:
    """A document indexed again under the same id (its status row rewritten after its chunks)."""
    ids = await index(rag, "doc-a", ["short"], status="failed")
    await keep(rag, ids)
    await index(rag, "doc-a", ["a much longer text"], status="processed")

    assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))


async def test_another_processes_write_is_seen(rag: Any, tmp_path: Path, workspace: str) -> None:
    """The writer of a shared knowledge base is another LightRAG instance on the same rows."""
    ids = await index(rag, "doc-a", ["short"])
    await keep(rag, ids)
    async with counting_lightrag(tmp_path / "writer", workspace, vector_storage="PGVectorStorage",
                                 doc_status_storage="PGDocStatusStorage", model_name="count8") as writer:
        await writer.chunks_vdb.delete(ids)
        await writer.chunks_vdb.index_done_callback()
        await writer.doc_status.delete(["doc-a"])
        await index(writer, "doc-a", ["the longer new text"])

    assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))


async def test_vectors_read_while_the_status_changed_are_not_kept(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another question's check ran during the read: what was read serves this ranking only."""
    ids = await index(rag, "doc-a", ["short", "a longer text"])
    await ranked(rag, ids)
    read = chunk_vectors._read

    async def read_while_another_question_checks(storage: Any, wanted: list[str]) -> Any:
        result = await read(storage, wanted)
        await rag.doc_status.upsert({"doc-z": {"status": "pending", "content_summary": "z", "content_length": 1,
                                               "file_path": "z.md"}})
        await chunk_vectors._check(storage, chunk_vectors._kept_for(storage))
        return result

    monkeypatch.setattr(chunk_vectors, "_read", read_while_another_question_checks)
    assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))
    monkeypatch.setattr(chunk_vectors, "_read", read)
    asked = recorded(monkeypatch, "_in_engine")

    await ranked(rag, ids)

    assert asked == [sorted(ids)]


async def test_kept_vectors_stay_within_their_budget(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors that would not fit drop all kept ones first; more than the budget are not kept.
    (A chunk's vector is read the second time the server answers for it.)"""
    monkeypatch.setattr(chunk_vectors, "KEPT_VECTORS", 4)
    first = await index(rag, "doc-a", ["a", "bb", "ccc"])
    second = await index(rag, "doc-b", ["dddd", "eeeee", "ffffff"])
    too_many = await index(rag, "doc-c", [f"text {n}" for n in range(5)])
    reads = recorded(monkeypatch, "_read")

    for ids in (first, first, first, second, second, second, first, first, too_many, too_many, too_many):
        assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))

    assert reads == [sorted(first), sorted(second), sorted(first), sorted(too_many), sorted(too_many)]
    assert sum(kept.used for _, kept in chunk_vectors._KEPT.values()) <= 4


async def test_a_questions_rankings_check_the_doc_status_once(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question ranks its entities' passages and then its relations': the doc status is read at
    the first only, and read again by the next question, which sees a replaced document."""
    ids = await index(rag, "doc-a", ["short", "a longer text"])
    await keep(rag, ids)
    check, checks = chunk_vectors._check, []

    async def counted(storage: Any, kept: Any) -> None:
        checks.append(storage.namespace)
        await check(storage, kept)

    monkeypatch.setattr(chunk_vectors, "_check", counted)
    with reading_committed_state():
        assert_close(await chunk_similarities(rag.chunks_vdb, ids, QUESTION), await lightrag_cosines(rag, ids))
        assert_close(await chunk_similarities(rag.chunks_vdb, ids[1:], QUESTION), await lightrag_cosines(rag, ids[1:]))
    assert len(checks) == 1
    await rag.chunks_vdb.delete(ids)
    await rag.chunks_vdb.index_done_callback()
    await rag.doc_status.delete(["doc-a"])
    await index(rag, "doc-a", ["the new, longer first", "new"])

    assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))
    assert len(checks) == 2


async def test_a_stores_first_ranking_reads_all_its_vectors_a_page_at_a_time(
    rag: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's first question pays the server's cosines once: every vector of the store is then
    read and kept, but those of chunks whose document has no status row; the next ranking asks the
    server only for those, and each gives LightRAG's cosines."""
    monkeypatch.setattr(chunk_vectors, "READ_ALL_AT_MOST", chunk_vectors.KEPT_VECTORS)
    monkeypatch.setattr(chunk_vectors, "READ_ALL_PAGE", 2)
    kept = await index(rag, "doc-a", [f"text {'x' * n}" for n in range(5)])
    other = await index(rag, "doc-c", ["another document"])
    unlisted = await index(rag, "doc-b", ["no status yet"])
    await rag.doc_status.delete(["doc-b"])
    asked = recorded(monkeypatch, "_in_engine")

    first = await ranked(rag, kept[:2])
    second = await ranked(rag, [*kept, *other, *unlisted])

    assert_close(first, await lightrag_cosines(rag, kept[:2]))
    assert_close(second, await lightrag_cosines(rag, [*kept, *other, *unlisted]))
    assert asked == [sorted(kept[:2]), unlisted]
    assert set(chunk_vectors._kept_for(rag.chunks_vdb).rows) == {*kept, *other}


async def test_vectors_that_would_not_fit_are_not_all_read(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """More vectors than the budget leaves: kept as rankings need them, as before."""
    monkeypatch.setattr(chunk_vectors, "READ_ALL_AT_MOST", chunk_vectors.KEPT_VECTORS)
    monkeypatch.setattr(chunk_vectors, "KEPT_VECTORS", 4)
    ids = await index(rag, "doc-a", ["a", "bb", "ccc", "dddd", "eeeee"])
    reads = recorded(monkeypatch, "_read")

    await ranked(rag, ids[:2])

    assert chunk_vectors._kept_for(rag.chunks_vdb).rows == {} and reads == []


async def test_a_check_during_the_read_of_all_vectors_ends_it(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another question's check ran while the pages came in: the rest is not kept (it was read
    before that check), and the next rankings ask the server for it."""
    monkeypatch.setattr(chunk_vectors, "READ_ALL_AT_MOST", chunk_vectors.KEPT_VECTORS)
    monkeypatch.setattr(chunk_vectors, "READ_ALL_PAGE", 2)
    ids = await index(rag, "doc-a", [f"text {'x' * n}" for n in range(6)])
    unpacked, pages = chunk_vectors._unpacked, []

    def unpacked_while_another_question_checks(rows: Any) -> Any:
        pages.append(len(rows))
        if len(pages) == 2:
            chunk_vectors._kept_for(rag.chunks_vdb).generation += 1  # what `_check` does on a change
        return unpacked(rows)

    monkeypatch.setattr(chunk_vectors, "_unpacked", unpacked_while_another_question_checks)
    await ranked(rag, ids[:1])

    assert pages == [2, 2] and len(chunk_vectors._kept_for(rag.chunks_vdb).rows) == 2
    assert_close(await ranked(rag, ids), await lightrag_cosines(rag, ids))
    assert set(chunk_vectors._kept_for(rag.chunks_vdb).rows) == set(ids)  # read again from that ranking


@pytest.fixture
async def searching(rag: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`rag` whose chunk store is read whole at its first search and then searched from the kept
    vectors (`search_kept_first`, as the worker sets it up); `rag.server_searches` holds the top_k
    of each search LightRAG's own `PGVectorStorage.query` makes for it."""
    monkeypatch.setattr(chunk_vectors, "READ_ALL_AT_MOST", chunk_vectors.KEPT_VECTORS)
    calls: list[int] = []
    search = rag.chunks_vdb.query

    async def recording(query: str, top_k: int, query_embedding: Any = None) -> Any:
        calls.append(top_k)
        return await search(query, top_k, query_embedding)

    rag.chunks_vdb.query, rag.server_searches = recording, calls
    chunk_vectors.search_kept_first(rag.chunks_vdb)
    return rag


async def searched(rag: Any, question: np.ndarray = QUESTION, top_k: int = 4) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """A question's search of the chunk store (rows, and the similarities it reported), and then
    the background reads it started."""
    with reading_committed_state(), observing_chunk_scores() as seen:
        rows = await rag.chunks_vdb.query("q", top_k=top_k, query_embedding=question)
    kept = chunk_vectors._kept_for(rag.chunks_vdb)
    for task in (kept.filling, kept.catching):
        if task is not None:
            await task
    return rows, seen.similarity


async def lightrags_search(rag: Any, question: np.ndarray = QUESTION, top_k: int = 4) -> list[dict[str, Any]]:
    """LightRAG's own search (the server's HNSW index, exact at this size)."""
    from lightrag.kg.postgres_impl import PGVectorStorage

    return list(await PGVectorStorage.query(rag.chunks_vdb, "q", top_k, question))


#: Texts whose vectors differ (the counting embedder's first component is the length modulo 7).
TEXTS = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff"]


async def test_a_store_held_whole_is_searched_exactly_as_lightrag_ranks(searching: Any) -> None:
    """The first search reads the store whole; the next ones ask the server nothing but the rows
    found: LightRAG's rows in LightRAG's order, over its threshold, with their cosines reported
    for the sources' scores.  A question like no chunk finds none."""
    rag = searching
    ids = [*await index(rag, "doc-a", TEXTS[:4]), *await index(rag, "doc-b", TEXTS[4:])]
    expected = await lightrags_search(rag)

    first, _ = await searched(rag)
    rows, reported = await searched(rag)
    two, _ = await searched(rag, top_k=2)
    nothing, _ = await searched(rag, -QUESTION)

    assert first == expected and rows == expected and two == expected[:2]
    assert nothing == await lightrags_search(rag, -QUESTION) == []
    assert rag.server_searches == [4]
    assert len(expected) == 4 and set(chunk_vectors._kept_for(rag.chunks_vdb).rows) == set(ids)
    assert_close(reported, await lightrag_cosines(rag, [row["id"] for row in rows]))


async def test_a_changed_document_is_searched_by_the_server_until_its_chunks_are_read_again(
    searching: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replaced document and a new one: the next search is the server's, and only the changed
    documents' chunks are read; then the store is searched exactly again, new texts included."""
    rag = searching
    old = await index(rag, "doc-a", TEXTS[:3])
    await index(rag, "doc-b", TEXTS[3:])
    await searched(rag)
    await rag.chunks_vdb.delete(old)
    await rag.chunks_vdb.index_done_callback()
    await rag.doc_status.delete(["doc-a"])
    await index(rag, "doc-a", ["replace", "replaced"])
    await index(rag, "doc-c", ["new third", "new fourth"])
    rag.server_searches.clear()
    unpacked, read = chunk_vectors._unpacked, []

    def recording(rows: Any) -> Any:
        read.extend(str(row["id"]) for row in rows)
        return unpacked(rows)

    monkeypatch.setattr(chunk_vectors, "_unpacked", recording)

    during, _ = await searched(rag)
    after, _ = await searched(rag)

    expected = await lightrags_search(rag)
    assert during == after == expected and rag.server_searches == [4]
    assert sorted(read) == ["doc-a-chunk-000", "doc-a-chunk-001", "doc-c-chunk-000", "doc-c-chunk-001"]
    kept = chunk_vectors._kept_for(rag.chunks_vdb)
    assert kept.used == len(kept.rows) == 7 and kept.whole == kept.generation


async def test_a_chunk_whose_document_has_no_status_row_leaves_the_search_to_the_server(searching: Any) -> None:
    """Such a chunk is never kept, so the kept vectors are not the whole store: every search is
    LightRAG's (it finds that chunk too)."""
    rag = searching
    await index(rag, "doc-a", TEXTS[:4])
    await index(rag, "doc-b", ["no status"])
    await rag.doc_status.delete(["doc-b"])

    rows = [(await searched(rag))[0] for _ in range(3)]

    assert rows == [await lightrags_search(rag)] * 3 and rag.server_searches == [4, 4, 4]
    assert "doc-b-chunk-000" in {row["id"] for row in rows[0]}
    assert chunk_vectors._kept_for(rag.chunks_vdb).whole is None


async def test_a_document_being_indexed_is_read_again_while_it_is_not_settled(searching: Any) -> None:
    """Its status row says processing and lists its chunks before their rows come (another
    document's commit writes them): every catch-up reads them again until its status is final,
    so the store stays held whole and its search finds them."""
    rag = searching
    await index(rag, "doc-a", TEXTS[:3])
    await searched(rag)
    await rag.doc_status.upsert({"doc-p": {"status": "processing", "content_summary": "p", "content_length": 1,
                                           "chunks_count": 1, "chunks_list": ["doc-p-chunk-000"],
                                           "file_path": "doc-p.md"}})
    await searched(rag)
    await rag.chunks_vdb.upsert({"doc-p-chunk-000": {"content": TEXTS[5], "full_doc_id": "doc-p", "tokens": 1,
                                                     "chunk_order_index": 0, "file_path": "doc-p.md"}})
    await index(rag, "doc-b", TEXTS[3:5])  # its commit writes doc-p's chunk too
    rag.server_searches.clear()

    during, _ = await searched(rag, top_k=10)
    after, _ = await searched(rag, top_k=10)

    assert during == after == await lightrags_search(rag, top_k=10) and rag.server_searches == [10]
    assert "doc-p-chunk-000" in {row["id"] for row in after}
    kept = chunk_vectors._kept_for(rag.chunks_vdb)
    assert kept.whole == kept.generation and kept.behind == set()


async def test_a_scope_opened_inside_a_questions_checks_nothing_again(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sources' scores are ranked after the retrieval, inside the same question
    (`operations.querying`): one status check for both."""
    ids = await index(rag, "doc-a", ["short", "a longer text"])
    check, checks = chunk_vectors._check, []

    async def counted(storage: Any, kept: Any) -> None:
        checks.append(storage.namespace)
        await check(storage, kept)

    monkeypatch.setattr(chunk_vectors, "_check", counted)
    with chunk_vectors.checking_once():
        with reading_committed_state():
            await chunk_similarities(rag.chunks_vdb, ids, QUESTION)
        with reading_committed_state():
            await chunk_similarities(rag.chunks_vdb, ids[1:], QUESTION)
    assert len(checks) == 1


async def test_a_questions_search_and_rankings_of_a_store_held_whole_share_one_product(searching: Any) -> None:
    """Its chunk search and both rankings use the question's one vector: its similarity to every
    kept row is computed once, and each ranking still gives LightRAG's cosines; vectors kept since
    are in the next question's product."""
    rag = searching
    ids = [*await index(rag, "doc-a", TEXTS[:4]), *await index(rag, "doc-b", TEXTS[4:])]
    await searched(rag)
    kept = chunk_vectors._kept_for(rag.chunks_vdb)

    with reading_committed_state():
        await rag.chunks_vdb.query("q", top_k=4, query_embedding=QUESTION)
        product = kept.scored
        first = await chunk_similarities(rag.chunks_vdb, ids[:3], QUESTION)
        second = await chunk_similarities(rag.chunks_vdb, ids[2:], QUESTION)
        assert kept.scored is product is not None
        other = await chunk_similarities(rag.chunks_vdb, ids, -QUESTION)

    assert kept.scored is not product and rag.server_searches == [4]
    assert_close(first, await lightrag_cosines(rag, ids[:3]))
    assert_close(second, await lightrag_cosines(rag, ids[2:]))
    assert_close(other, await lightrag_cosines(rag, ids, -QUESTION))
    await searched(rag, top_k=10)
    await index(rag, "doc-c", ["seventh"])  # kept once read: the product is computed again
    await searched(rag, top_k=10)

    rows, _ = await searched(rag, top_k=10)
    assert rows == await lightrags_search(rag, top_k=10) and "doc-c-chunk-000" in {row["id"] for row in rows}
