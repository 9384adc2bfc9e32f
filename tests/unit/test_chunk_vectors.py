"""A question's chunk ranking from the vectors the worker keeps (rag_worker/storage/chunk_vectors.py):
LightRAG's cosines, the server asked only for chunks not kept, their vectors read without making
the question wait, and never a document's former vectors once its status row changed, whoever
changed it.  Real LightRAG (`PGVectorStorage`, `PGDocStatusStorage`) on the
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
                                          "chunks_count": len(texts), "file_path": f"{doc_id}.md"}})
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
