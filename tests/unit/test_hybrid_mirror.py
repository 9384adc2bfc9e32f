"""The lexical index follows the vector stores' writes (rag_worker.storage.hybrid): what LightRAG
upserts is found by the next search, and is in the index file once the store commits (where a
reader in another process sees it).  Real LightRAG on the local files, in-process."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from rag_worker.storage.lexical_index import FILE_NAME, Entry, Fts5LexicalIndex, Kind

pytestmark = pytest.mark.anyio

ENTITY = {"ent-qx7": {"entity_name": "QX-7741 Relay", "content": "QX-7741 Relay\nA relay assembled in Tromso."}}


@pytest.fixture
async def rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    instance = await new_lightrag(tmp_path / "data", f"mirror_{uuid.uuid4().hex[:8]}", components)
    await instance.lexical.ready()
    try:
        yield instance
    finally:
        await instance.lexical.close()
        await instance.finalize_storages()


def on_disk(rag: Any) -> Fts5LexicalIndex:
    """The index file as a reader in another process opens it."""
    return Fts5LexicalIndex(Path(rag.working_dir) / rag.workspace / FILE_NAME, read_only=True)


def lexical_hits(rag: Any, question: str) -> list[str]:
    reader = on_disk(rag)
    try:
        identifiers, words = reader.search("entity", question, 5)
    finally:
        reader.close()
    return list(dict.fromkeys(hit.key for hit in identifiers + words))


async def test_a_search_sees_what_was_upserted_before_it(rag: Any) -> None:
    await rag.entities_vdb.upsert(ENTITY)
    await rag.entities_vdb.query("Who built QX-7741?", top_k=5)  # no store commit in between
    assert lexical_hits(rag, "QX-7741") == ["ent-qx7"]


async def test_upserts_reach_the_index_file_when_the_store_commits(rag: Any) -> None:
    await rag.entities_vdb.upsert(ENTITY)
    await rag.entities_vdb.index_done_callback()
    assert lexical_hits(rag, "QX-7741") == ["ent-qx7"]


async def test_a_deleted_entity_is_not_committed_after_all(rag: Any) -> None:
    await rag.entities_vdb.upsert(ENTITY)
    await rag.entities_vdb.delete(["ent-qx7"])
    await rag.entities_vdb.index_done_callback()
    assert lexical_hits(rag, "QX-7741") == []


async def test_deletes_reach_the_index_file_with_the_next_commit_in_one_write(
        rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """LightRAG deletes an entity's or relation's row before it upserts the merged one: the index
    writes the delete with the store's commit, in the same transaction as the upsert (a commit a
    delete was 9 % of the event loop's indexing work at 5,000 documents)."""
    await rag.entities_vdb.upsert(ENTITY)
    await rag.entities_vdb.index_done_callback()
    writes: list[int] = []
    add = rag.lexical.index.add

    def counted(entries: Sequence[Entry], removed: Iterable[tuple[Kind, str]] = ()) -> None:
        writes.append(len(entries))
        add(entries, removed)

    monkeypatch.setattr(rag.lexical.index, "add", counted)
    await rag.entities_vdb.delete(["ent-qx7"])
    assert lexical_hits(rag, "QX-7741") == ["ent-qx7"] and writes == []  # not written yet
    merged = {"ent-qx7": {**ENTITY["ent-qx7"], "content": "QX-7741 Relay\nA relay assembled in Narvik."}}
    await rag.entities_vdb.upsert(merged)
    await rag.entities_vdb.index_done_callback()
    assert writes == [1]
    assert lexical_hits(rag, "Narvik") == ["ent-qx7"] and lexical_hits(rag, "Tromso") == []
    await rag.entities_vdb.delete(["ent-qx7"])
    await rag.entities_vdb.index_done_callback()
    assert lexical_hits(rag, "QX-7741") == [] and writes == [1, 0]
