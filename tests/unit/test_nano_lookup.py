"""NanoVectorDB rows read by id (`rag_worker.storage.nano_lookup`): the same rows as the library's
own scan, through upserts, inserts and deletes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from nano_vectordb import NanoVectorDB

from rag_worker.storage.nano_lookup import index_row_lookups


def scanned(db: NanoVectorDB, ids: list[str]) -> list[dict[str, object]]:
    """The library's own `get`: every row compared with the ids."""
    return [row for row in db._NanoVectorDB__storage["data"] if row["__id__"] in ids]  # type: ignore[attr-defined]


def rows(count: int, start: int = 0, tag: str = "") -> list[dict[str, object]]:
    return [{"__id__": f"id-{i}", "__vector__": np.random.rand(8).astype(np.float32), "tag": tag}
            for i in range(start, start + count)]


def test_get_finds_the_same_rows_as_a_scan_through_upserts_and_deletes(tmp_path: Path) -> None:
    index_row_lookups()
    assert getattr(NanoVectorDB.get, "by_position", False)
    db = NanoVectorDB(8, storage_file=str(tmp_path / "vdb.json"))
    chance = random.Random(7)
    db.upsert(rows(50))
    for step in range(200):
        action = chance.choice(["insert", "update", "delete", "read"])
        if action == "insert":
            db.upsert(rows(3, start=50 + 3 * step, tag="new"))
        elif action == "update":
            db.upsert(rows(2, start=chance.randrange(0, 50 + 3 * step), tag=f"updated {step}"))
        elif action == "delete":
            db.delete([f"id-{chance.randrange(0, 50 + 3 * step)}" for _ in range(2)])
        asked = [f"id-{chance.randrange(0, 60 + 3 * step)}" for _ in range(5)] + ["absent"]
        assert db.get(asked) == scanned(db, asked)


def test_an_updated_row_is_read_with_its_new_content(tmp_path: Path) -> None:
    index_row_lookups()
    db = NanoVectorDB(8, storage_file=str(tmp_path / "vdb.json"))
    db.upsert(rows(10, tag="old"))
    assert [row["tag"] for row in db.get(["id-3"])] == ["old"]
    db.upsert(rows(1, start=3, tag="new"))
    assert [row["tag"] for row in db.get(["id-3", "id-3"])] == ["new"]
    db.delete(["id-3"])
    assert db.get(["id-3"]) == []
