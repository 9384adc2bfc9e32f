"""A knowledge base's vector search finds its nearest rows when other knowledge bases share its
tables in one engine (LibreChat's users, one engine per data directory).

LightRAG keeps every workspace's vectors in one table per kind and asks for a workspace's
nearest rows with `WHERE workspace = $1 ... ORDER BY distance LIMIT top_k`.  pgvector's HNSW
index hands the scan its `hnsw.ef_search` (40) nearest rows of the whole table and the filter
then drops the other workspaces' rows: a knowledge base holding a tenth of a table got 1 to 6
(median 6) of the 40 rows it asked for, 14 % of its true nearest (measured on a 5,000-document
engine beside a second knowledge base).  pgvector 0.8's iterative scan goes on reading the index until the
filtered rows fill the limit.  LightRAG's sessions also keep 400 candidates (`hnsw.ef_search`),
and the engine's new indexes link 8 neighbours (`HNSW_M`).  Real LightRAG on the real embedded
engine."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.unit.test_vector_flush import counting_lightrag
from tests.unit.test_vector_flush_engine import anyio_backend, engine_dir  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio

TOP_K = 40
#: The small knowledge base holds 27 % of the table: enough for the planner to choose the HNSW
#: index (it sorts a smaller share's rows itself, exactly, as it did for 11 % here).
ROWS = {"big": 4000, "small": 1500}


def vector(text: str) -> np.ndarray:
    """A deterministic pseudo-random direction for a text (8 dimensions, the test model's)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(8).astype(np.float32)


async def hashed(texts: list[str], **kwargs: Any) -> np.ndarray:
    return np.array([vector(text) for text in texts])


@pytest.fixture
async def two_knowledge_bases(engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, Any]]:  # noqa: F811
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    run = uuid.uuid4().hex[:8]
    async with (
        counting_lightrag(tmp_path / "big", f"big_{run}", hashed, vector_storage="PGVectorStorage", model_name="hash8") as big,
        counting_lightrag(tmp_path / "small", f"small_{run}", hashed, vector_storage="PGVectorStorage", model_name="hash8") as small,
    ):
        yield {"big": big, "small": small}


async def test_a_small_knowledge_base_beside_a_big_one_gets_its_nearest_entities(two_knowledge_bases: dict[str, Any]) -> None:
    for name, rag in two_knowledge_bases.items():
        await rag.entities_vdb.upsert(
            {f"ent-{name}-{n}": {"content": f"{name} entity {n}", "entity_name": f"{name} {n}", "source_id": "c1"} for n in range(ROWS[name])}
        )
        await rag.entities_vdb.index_done_callback()
    small = two_knowledge_bases["small"].entities_vdb
    await small.db.execute(f"ANALYZE {small.table_name}")  # the statistics autovacuum gathers in use
    names = [f"small {n}" for n in range(ROWS["small"])]
    stored = np.array([vector(f"small entity {n}") for n in range(ROWS["small"])])
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    found = expected = 0
    for question in range(20):
        query = vector(f"question {question}")
        similarity = stored @ (query / np.linalg.norm(query))
        closer = [names[i] for i in np.argsort(-similarity)[:TOP_K] if 1 - similarity[i] < 1 - small.cosine_better_than_threshold]
        rows = await small.query("", top_k=TOP_K, query_embedding=query.tolist())
        got = [row["entity_name"] for row in rows]
        assert len(got) == len(closer), f"question {question}: {len(got)} rows of the {len(closer)} nearest"
        found += len(set(got) & set(closer))
        expected += len(closer)
    assert found / expected >= 0.9, f"recall {found / expected:.2f}"


def test_a_server_configured_explicitly_is_asked_for_the_same_search_unless_its_administrator_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    from config.backends import VECTOR_SEARCH_SETTINGS
    from config.settings import load_settings
    from mcp_front.server import worker_environment

    monkeypatch.delenv("POSTGRES_SERVER_SETTINGS", raising=False)
    asked = worker_environment(load_settings({}))["POSTGRES_SERVER_SETTINGS"]
    assert dict(pair.split("=", 1) for pair in asked.split("&")) == VECTOR_SEARCH_SETTINGS  # as LightRAG parses it
    monkeypatch.setenv("POSTGRES_SERVER_SETTINGS", "search_path=rag")
    assert worker_environment(load_settings({}))["POSTGRES_SERVER_SETTINGS"] == "search_path=rag"


async def test_the_engines_sessions_and_new_indexes_use_the_search_and_index_settings(two_knowledge_bases: dict[str, Any]) -> None:
    from config.backends import VECTOR_SEARCH_SETTINGS
    from rag_worker.storage.embedded_engine import HNSW_M

    db = two_knowledge_bases["small"].entities_vdb.db  # LightRAG's own pool
    for name, value in VECTOR_SEARCH_SETTINGS.items():
        assert (await db.query(f"SHOW {name}"))[name] == value
    index = await db.query("SELECT indexdef FROM pg_indexes WHERE indexname LIKE '%entity_hash8%hnsw%'")
    assert f"m='{HNSW_M}'" in index["indexdef"]


async def test_the_engines_tables_but_the_vector_tables_are_vacuumed_at_one_percent_and_vectors_kept_in_the_row(
        engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A vacuum marks pages all-visible, where LightRAG's graph counts relations from the index
    alone; the vector tables keep PostgreSQL's 20 % (each vacuum of an HNSW index is costly).  Their
    vectors are stored in the row (pgvector's type asks for out of line: a lookup more per row read)."""
    from rag_worker.storage.engine_template import TABLE_SETTINGS, VECTOR_STORAGE, apply_table_settings

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    options = {"vector_storage": "PGVectorStorage", "graph_storage": "PGTableGraphStorage", "model_name": "tune8"}
    async with counting_lightrag(tmp_path, f"v_{uuid.uuid4().hex[:8]}", **options) as rag:
        db = rag.entities_vdb.db
        tuned = await apply_table_settings(db)
        assert "lightrag_graph_edges" in tuned and "lightrag_graph_nodes" in tuned
        assert await apply_table_settings(db) == []  # set once
        rows = await db.query("SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'lightrag_%' AND relkind = 'r'",
                              multirows=True)
        options_of = {row["relname"]: set(row["reloptions"] or ()) for row in rows}
        wanted = {f"{name}={value}" for name, value in TABLE_SETTINGS.items()}
        vector_tables = {name for name in options_of if name.startswith("lightrag_vdb_")}
        assert vector_tables and all(not options_of[name] for name in vector_tables)
        assert all(wanted <= options_of[name] for name in set(options_of) - vector_tables)
        assert vector_tables <= set(tuned)
        rows = await db.query(
            "SELECT c.relname, a.attstorage::text AS storage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE a.atttypid = 'halfvec'::regtype AND c.relkind = 'r' AND c.relname LIKE 'lightrag_%'",
            multirows=True,
        )
        assert {row["relname"] for row in rows} == vector_tables
        assert {row["storage"] for row in rows} == {VECTOR_STORAGE[0].lower()}  # MAIN, not pgvector's EXTERNAL


async def test_vector_tables_an_earlier_version_made_in_full_precision_are_converted_once_even_when_the_opening_is_cancelled(
        engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The engine's vector tables are half precision (`HALF_PRECISION`).  A table an earlier version
    made in full precision, with its index, is converted at the next opening in one transaction:
    its rows and its nearest rows kept, its vectors in the row, under the index name LightRAG looks
    for (which then builds none); a cancelled opening does not cut it short; an administrator's own
    `POSTGRES_VECTOR_INDEX_TYPE` is left alone."""
    import anyio
    import asyncpg
    from lightrag.kg.postgres_impl import ClientManager, _safe_index_name

    from rag_worker.storage.embedded_engine import DATABASE, USER, EmbeddedEngine
    from rag_worker.storage.engine_template import HALF_PRECISION, half_precision_vectors

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    workspace, questions = f"c_{uuid.uuid4().hex[:8]}", [vector(f"question {n}") for n in range(5)]
    rows = {f"ent-{n}": {"content": f"entity {n}", "entity_name": f"E{n}", "source_id": "chunk-1"} for n in range(300)}

    async def nearest() -> list[list[str]]:
        async with counting_lightrag(tmp_path, workspace, hashed, vector_storage="PGVectorStorage", model_name="conv8") as rag:
            if not await rag.entities_vdb.get_by_id("ent-0"):
                await rag.entities_vdb.upsert(rows)
                await rag.entities_vdb.index_done_callback()
            return [[row["entity_name"] for row in await rag.entities_vdb.query("", 10, query_embedding=q)] for q in questions]

    async def column_and_indexes(connection: Any) -> tuple[Any, list[str]]:
        column = await connection.fetchrow(
            "SELECT format_type(atttypid, atttypmod) AS type, attstorage::text AS storage FROM pg_attribute "
            "WHERE attrelid = $1::regclass AND attname = 'content_vector'", table)
        indexes = await connection.fetch("SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%hnsw%'", table)
        return column, [row["indexdef"] for row in indexes]

    before = await nearest()
    table = "lightrag_vdb_entity_conv8_8d"
    engine = EmbeddedEngine(engine_dir)
    await engine.ensure_running()
    connection = await asyncpg.connect(host=os.environ["POSTGRES_HOST"], user=USER, database=DATABASE)
    try:
        column, indexes = await column_and_indexes(connection)
        assert column["type"] == "halfvec(8)" and len(indexes) == 1  # as LightRAG makes it on the engine
        # The table as an earlier version left it: full precision, its vectors out of line, its index.
        await connection.execute(f"DROP INDEX {_safe_index_name(table, 'hnsw_halfvec_cosine')}")
        await connection.execute(f"ALTER TABLE {table} ALTER COLUMN content_vector TYPE vector(8), "
                                 "ALTER COLUMN content_vector SET STORAGE EXTERNAL")
        await connection.execute(f"CREATE INDEX {_safe_index_name(table, 'hnsw_cosine')} ON {table} "
                                 "USING hnsw (content_vector vector_cosine_ops) WITH (m = 8, ef_construction = 64)")
        assert await half_precision_vectors(connection, {**ClientManager.get_config(), "vector_index_type": "HNSW"}) == []

        with anyio.CancelScope() as opening:
            opening.cancel()
            await engine.convert_tables()
        column, indexes = await column_and_indexes(connection)
        assert (column["type"], column["storage"]) == ("halfvec(8)", "m")
        name = _safe_index_name(table, f"{HALF_PRECISION.lower()}_cosine")
        assert indexes == [f"CREATE INDEX {name} ON public.{table} USING hnsw (content_vector halfvec_cosine_ops) "
                           "WITH (m='8', ef_construction='64')"]
        assert await connection.fetchval(f"SELECT count(*) FROM {table} WHERE workspace = $1", workspace) == len(rows)
        assert await half_precision_vectors(connection, ClientManager.get_config()) == []  # nothing left to convert
    finally:
        await connection.close()
        await engine.release()
    assert await nearest() == before
