"""An entity's chunk ids kept in rows that are appended to (rag_worker.storage.chunk_lists):
what is read back is exactly what LightRAG wrote last, whatever the order of appends, rewrites
and deletes; LightRAG's own rows from an earlier version are moved on opening, and a reader
reads them where they are until then.  Real LightRAG, real embedded engine."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from config.storages import ENGINE_STORAGES
from rag_worker.storage.chunk_lists import BUCKET, HEADS, LEGACY, ROWS, ChunkLists
from tests.engine_rows import lightrag_on

pytestmark = pytest.mark.anyio

DOCS = [
    "Kestrel Array is a radio telescope in Patagonia. Kestrel Array was funded by the Halvorsen Foundation.",
    "The Halvorsen Foundation is based in Bergen. Ingrid Halvorsen founded the Halvorsen Foundation in 1998.",
]


@pytest.fixture
async def rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    async with lightrag_on(tmp_path, ENGINE_STORAGES) as instance:
        yield instance


def chunk_ids(count: int, salt: str) -> list[str]:
    return [f"chunk-{salt}-{number:05d}" for number in range(count)]


async def stored_rows(rag: Any, table: str) -> int:
    storage = rag.entity_chunks
    row = await storage.db.query(f"SELECT count(*) AS n FROM {table} WHERE workspace = $1", [storage.workspace])
    return int(row["n"])


async def test_indexing_keeps_entities_chunk_ids_in_rows_not_in_lightrags_table(rag: Any) -> None:
    await rag.ainsert(DOCS, ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
    listed = await rag.entity_chunks.get_by_id("Halvorsen Foundation")
    assert listed is not None and len(listed["chunk_ids"]) == 2 and listed["count"] == 2
    assert await stored_rows(rag, LEGACY) == 0 and await stored_rows(rag, HEADS) >= 3


async def test_what_is_read_is_what_was_written_last_through_appends_rewrites_and_deletes(rag: Any) -> None:
    storage, expected = rag.entity_chunks, {}
    entities = [f"Entity {number}" for number in range(5)]
    rnd = random.Random(20261127)
    for step in range(150):
        entity = rnd.choice(entities)
        current = list((expected.get(entity) or {}).get("chunk_ids", []))
        move = rnd.choice(["append", "append", "append", "same", "shorter", "reorder", "delete"])
        if move == "append":  # a merge: what is stored, then new ids (across row boundaries too)
            current += chunk_ids(rnd.choice([1, 2, BUCKET - 1, BUCKET, BUCKET + 1, 3 * BUCKET]), f"{step}")
        elif move == "shorter":  # a delete's rebuild
            current = [chunk for chunk in current if rnd.random() < 0.6]
        elif move == "reorder":
            rnd.shuffle(current)
        if move == "delete":
            await storage.delete([entity])
            expected.pop(entity, None)
        else:
            value = {"chunk_ids": current, "count": len(current) + (7 if move == "same" else 0)}
            await storage.upsert({entity: value})
            expected[entity] = value
        read = await storage.get_by_ids(entities)
        for name, got in zip(entities, read, strict=True):
            if name not in expected:
                assert got is None, (step, name)
            else:
                assert got is not None and got["id"] == name, (step, name)
                assert got["chunk_ids"] == expected[name]["chunk_ids"], (step, move, name)
                assert got["count"] == expected[name]["count"] and got["update_time"] >= got["create_time"] > 0
    assert await storage.filter_keys(set(entities) | {"Nobody"}) == (set(entities) - set(expected)) | {"Nobody"}
    assert not await storage.is_empty() or not expected
    assert (await storage.drop())["status"] == "success"
    assert await storage.is_empty() and await stored_rows(rag, ROWS) == 0


async def test_lightrags_own_rows_are_moved_on_opening_and_read_where_they_are_by_a_reader(rag: Any) -> None:
    storage = rag.entity_chunks
    legacy = {"Hub": chunk_ids(3 * BUCKET + 5, "hub"), "Leaf": ["chunk-1"], "Empty": []}
    for name, ids in legacy.items():
        await storage.db.execute(
            f"INSERT INTO {LEGACY} (workspace, id, chunk_ids, count) VALUES ($1, $2, $3::jsonb, $4)",
            {"workspace": storage.workspace, "id": name, "chunk_ids": json.dumps(ids), "count": len(ids)},
        )
    assert await ChunkLists(storage).open(read_only=True) is False  # a reader leaves them, and LightRAG reads them
    assert await stored_rows(rag, LEGACY) == 3

    assert await ChunkLists(storage).open(read_only=False) is True
    assert await stored_rows(rag, LEGACY) == 0
    read = await storage.get_by_ids(list(legacy))
    assert [value["chunk_ids"] for value in read if value] == list(legacy.values())
    # The moved digest is the one a write computes: a merge onto a moved list appends.
    await storage.upsert({"Hub": {"chunk_ids": [*legacy["Hub"], "chunk-new"], "count": 3 * BUCKET + 6}})
    hub = await storage.get_by_id("Hub")
    assert hub is not None and hub["chunk_ids"] == [*legacy["Hub"], "chunk-new"]
    rows = await storage.db.query(f"SELECT count(*) AS n FROM {ROWS} WHERE workspace = $1 AND id = 'Hub'",
                                  [storage.workspace])
    assert rows["n"] == 4


@pytest.mark.parametrize("length", [0, 1, 5])
@pytest.mark.parametrize("count", [0, 1, 5, 9])
def test_one_pass_digests_equal_separate_ones(length: int, count: int) -> None:
    from rag_worker.storage.chunk_lists import digest, digests

    ids = chunk_ids(count, "d")
    if length <= count:
        assert digests(ids, length) == (digest(ids[:length]), digest(ids))
