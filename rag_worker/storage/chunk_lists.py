"""An entity's chunk ids on PostgreSQL, appended to instead of rewritten whole (issue 25).

LightRAG keeps, per entity, the id of every chunk that names it (`entity_chunks`: read when a
document merges into the entity, and by deletes to rebuild it).  `PGKVStorage` keeps that list
as one JSONB value and writes it whole at every merge.  An entity most documents name holds
thousands of ids (7,000 at 10,000 generated reports), so each document rewrote about 213,000
ids — 9 MB of JSON encoded, parsed and compressed, out of line, at every document — and the
write grew with the knowledge base.  With these rows, batches at 10,400–11,300 documents took
2.66–2.68 s of CPU a document against 2.79–2.82 s (the engine's part 0.55–0.57 against 0.74–0.76 s).

Here the list is kept in rows of `BUCKET` ids (small enough never to be compressed or stored
out of line), beside a head row with its length, LightRAG's `count`, and a digest of the ids.
A write whose list starts with the stored one (a merge appends) rewrites only the last row
and adds the new ones; any other list (a delete's rebuild) replaces the rows.  The digest
decides which, so what is read back is always exactly what LightRAG wrote.

Rows LightRAG wrote before (a knowledge base indexed by an earlier version) are moved into
these tables in one transaction when the knowledge base is next opened for writing; until then
a reader of a shared knowledge base reads LightRAG's own table.  Only `PGKVStorage`'s
`entity_chunks` (the embedded engine's, or a PostgreSQL server's): relations' lists stay short.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from typing import Any

log = logging.getLogger("rag_worker.storage.chunk_lists")

BUCKET = 40  # ids per row: ~1.6 KB, under PostgreSQL's 2 KB threshold for compressing a row
STORE = "entity_chunks"
LEGACY = "LIGHTRAG_ENTITY_CHUNKS"
ROWS = "LIGHTRAG_MCP_CHUNK_LISTS"
HEADS = "LIGHTRAG_MCP_CHUNK_LIST_HEADS"
_KEY = "workspace = $1 AND store = $2"

CREATE = (
    f"""CREATE TABLE IF NOT EXISTS {HEADS} (
    workspace VARCHAR(255) NOT NULL, store VARCHAR(64) NOT NULL, id VARCHAR(512) NOT NULL,
    length INTEGER NOT NULL, count INTEGER NOT NULL, digest BYTEA NOT NULL,
    create_time BIGINT NOT NULL, update_time BIGINT NOT NULL,
    CONSTRAINT {HEADS}_PK PRIMARY KEY (workspace, store, id))""",
    f"""CREATE TABLE IF NOT EXISTS {ROWS} (
    workspace VARCHAR(255) NOT NULL, store VARCHAR(64) NOT NULL, id VARCHAR(512) NOT NULL,
    bucket INTEGER NOT NULL, chunk_ids TEXT[] NOT NULL,
    CONSTRAINT {ROWS}_PK PRIMARY KEY (workspace, store, id, bucket))""",
)
# Row by row, joined in Python: aggregating them in the engine took 4-5 ms for 7,600 ids, against 1 ms.
_READ = f"""SELECT h.id, h.count, h.create_time, h.update_time, r.chunk_ids FROM {HEADS} h
    LEFT JOIN {ROWS} r ON r.workspace = h.workspace AND r.store = h.store AND r.id = h.id
    WHERE h.workspace = $1 AND h.store = $2 AND h.id = ANY($3::varchar[]) ORDER BY h.id, r.bucket"""
_WRITE_ROW = f"""INSERT INTO {ROWS} (workspace, store, id, bucket, chunk_ids) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (workspace, store, id, bucket) DO UPDATE SET chunk_ids = EXCLUDED.chunk_ids"""
_WRITE_HEAD = f"""INSERT INTO {HEADS} (workspace, store, id, length, count, digest, create_time, update_time)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (workspace, store, id) DO UPDATE
    SET length = EXCLUDED.length, count = EXCLUDED.count, digest = EXCLUDED.digest, update_time = EXCLUDED.update_time"""
# LightRAG's rows of the workspace, moved in one statement each (ids joined by "\n" for the digest, as `digest`).
_MOVE_ROWS = f"""INSERT INTO {ROWS} (workspace, store, id, bucket, chunk_ids)
    SELECT l.workspace, $2, l.id, (e.o - 1) / {BUCKET}, array_agg(e.c ORDER BY e.o)
    FROM {LEGACY} l, jsonb_array_elements_text(l.chunk_ids) WITH ORDINALITY AS e(c, o)
    WHERE l.workspace = $1 AND jsonb_typeof(l.chunk_ids) = 'array' GROUP BY l.workspace, l.id, (e.o - 1) / {BUCKET} ON CONFLICT DO NOTHING"""
_MOVE_HEADS = f"""INSERT INTO {HEADS} (workspace, store, id, length, count, digest, create_time, update_time)
    SELECT l.workspace, $2, l.id, jsonb_array_length(l.chunk_ids), COALESCE(l.count, jsonb_array_length(l.chunk_ids)),
        sha256(convert_to(COALESCE((SELECT string_agg(c, E'\\n' ORDER BY o)
                                    FROM jsonb_array_elements_text(l.chunk_ids) WITH ORDINALITY AS e(c, o)), ''), 'UTF8')),
        COALESCE(EXTRACT(EPOCH FROM l.create_time)::BIGINT, 0), COALESCE(EXTRACT(EPOCH FROM l.update_time)::BIGINT, 0)
    FROM {LEGACY} l WHERE l.workspace = $1 AND jsonb_typeof(l.chunk_ids) = 'array' ON CONFLICT DO NOTHING"""


def digest(ids: Sequence[str]) -> bytes:
    return hashlib.sha256("\n".join(ids).encode("utf-8")).digest()


def digests(ids: Sequence[str], length: int) -> tuple[bytes, bytes]:
    """`digest` of the first `length` ids and of them all, in one pass over the ids."""
    state = hashlib.sha256("\n".join(ids[:length]).encode("utf-8"))
    head = state.digest()
    if len(ids) > length:
        state.update((("\n" if length else "") + "\n".join(ids[length:])).encode("utf-8"))
    return head, state.digest()


class ChunkLists:
    """`entity_chunks`' reads and writes on the tables above, in place of a `PGKVStorage`'s."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.db = storage.db

    @property
    def key(self) -> list[Any]:
        return [self.storage.workspace, STORE]

    async def open(self, *, read_only: bool) -> bool:
        """Ready to serve: False for a reader while LightRAG's own rows wait to be moved."""
        for statement in CREATE:
            await self.db.execute(statement)
        legacy = await self.db.query(f"SELECT EXISTS (SELECT 1 FROM {LEGACY} WHERE workspace = $1) AS held",
                                     [self.storage.workspace])
        if not (legacy or {}).get("held"):
            return True
        if read_only:
            return False
        await self.db._run_with_retry(self._move_lightrags_rows)
        return True

    async def _move_lightrags_rows(self, connection: Any) -> None:
        workspace = self.storage.workspace
        started = time.monotonic()
        async with connection.transaction():
            await connection.execute(_MOVE_ROWS, *self.key)
            moved = await connection.execute(_MOVE_HEADS, *self.key)
            await connection.execute(f"DELETE FROM {LEGACY} WHERE workspace = $1", workspace)
        log.info("workspace %s: entities' chunk-id lists moved to rows of %d (%s) in %.1fs",
                 workspace, BUCKET, moved, time.monotonic() - started)

    async def get_by_ids(self, ids: list[str]) -> list[dict[str, Any] | None]:
        if not ids:
            return []
        found: dict[str, dict[str, Any]] = {}
        for row in await self.db.query(_READ, [*self.key, list(ids)], multirows=True) or []:
            value = found.get(row["id"]) or found.setdefault(row["id"], _value(row))
            value["chunk_ids"].extend(row["chunk_ids"] or ())
        return [found.get(entity) for entity in ids]

    async def get_by_id(self, entity: str) -> dict[str, Any] | None:
        return (await self.get_by_ids([entity]))[0]

    async def filter_keys(self, keys: set[str]) -> set[str]:
        """The keys not stored (LightRAG's meaning)."""
        if not keys:
            return set()
        rows = await self.db.query(f"SELECT id FROM {HEADS} WHERE {_KEY} AND id = ANY($3::varchar[])",
                                   [*self.key, list(keys)], multirows=True)
        return set(keys) - {row["id"] for row in rows or []}

    async def is_empty(self) -> bool:
        row = await self.db.query(f"SELECT EXISTS (SELECT 1 FROM {HEADS} WHERE {_KEY}) AS stored", self.key)
        return not (row or {}).get("stored")

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        if data:
            await self.db._run_with_retry(lambda connection: self._write(connection, data))

    async def _write(self, connection: Any, data: dict[str, dict[str, Any]]) -> None:
        now = int(time.time())
        async with connection.transaction():
            heads = {
                row["id"]: (row["length"], bytes(row["digest"]))
                for row in await connection.fetch(
                    f"SELECT id, length, digest FROM {HEADS} WHERE {_KEY} AND id = ANY($3::varchar[]) FOR UPDATE",
                    *self.key, list(data),
                )
            }
            rows: list[tuple[Any, ...]] = []
            replaced: list[str] = []
            head_rows: list[tuple[Any, ...]] = []
            for entity, value in data.items():
                ids = [str(chunk) for chunk in value.get("chunk_ids") or []]
                length, stored = heads.get(entity, (0, digest([])))
                first = length // BUCKET  # the row the new ids start in (rewritten whole)
                prefix, whole = digests(ids, min(length, len(ids)))
                if len(ids) < length or prefix != stored:
                    replaced.append(entity)
                    first = 0
                elif len(ids) == length:
                    first = -(-length // BUCKET)  # unchanged: only the head (count, time) is written
                rows.extend((*self.key, entity, bucket, ids[bucket * BUCKET : (bucket + 1) * BUCKET])
                            for bucket in range(first, -(-len(ids) // BUCKET)))
                head_rows.append((*self.key, entity, len(ids), int(value.get("count", len(ids))), whole, now))
            if replaced:
                await connection.execute(f"DELETE FROM {ROWS} WHERE {_KEY} AND id = ANY($3::varchar[])", *self.key, replaced)
            if rows:
                await connection.executemany(_WRITE_ROW, rows)
            await connection.executemany(_WRITE_HEAD, head_rows)

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self.db._run_with_retry(lambda connection: self._delete(connection, list(ids)))

    async def _delete(self, connection: Any, ids: list[str] | None) -> None:
        where = _KEY + ("" if ids is None else " AND id = ANY($3::varchar[])")
        arguments = [*self.key, *([] if ids is None else [ids])]
        async with connection.transaction():
            await connection.execute(f"DELETE FROM {ROWS} WHERE {where}", *arguments)
            await connection.execute(f"DELETE FROM {HEADS} WHERE {where}", *arguments)

    async def drop(self) -> dict[str, str]:
        try:
            await self.db._run_with_retry(lambda connection: self._delete(connection, None))
        except Exception as exc:  # LightRAG's contract: reported, not raised
            return {"status": "error", "message": str(exc)}
        return {"status": "success", "message": "data dropped"}


def _value(row: Any) -> dict[str, Any]:
    """A list as `PGKVStorage` gives it (its ids added row by row)."""
    created, updated = int(row["create_time"] or 0), int(row["update_time"] or 0)
    return {"id": row["id"], "chunk_ids": [], "count": int(row["count"]),
            "create_time": created, "update_time": updated or created}


async def keep_chunk_lists_in_rows(rag: Any, *, read_only: bool = False) -> None:
    """Serve `rag.entity_chunks` from `ChunkLists` where it is LightRAG's PostgreSQL KV storage."""
    storage: Any = getattr(rag, "entity_chunks", None)
    if type(storage).__name__ != "PGKVStorage" or getattr(storage, "db", None) is None:
        return
    lists = ChunkLists(storage)
    if not await lists.open(read_only=read_only):
        return
    for name in ("get_by_id", "get_by_ids", "filter_keys", "is_empty", "upsert", "delete", "drop"):
        setattr(storage, name, getattr(lists, name))
    storage.get_by_id_strict = lists.get_by_id  # errors propagate: complete or raise
