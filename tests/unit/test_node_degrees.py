"""Relation counts kept by triggers (rag_worker/storage/node_degrees.py): after any sequence of
LightRAG's own graph writes (batches, single upserts, self-relations, removals, an entity's
cascade, a drop, a truncate) every entity's kept count is what `PGTableGraphStorage` counts;
existing relations are counted when the triggers are made; a reader counts until a writer made
them; concurrent writers sharing entities neither deadlock nor miscount.  Real LightRAG on the
real embedded engine."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rag_worker.storage import node_degrees
from rag_worker.storage.node_degrees import TRIGGERS, keep_node_degrees
from tests.unit.test_vector_flush import counting_lightrag
from tests.unit.test_vector_flush_engine import engine_dir  # noqa: F401 - the module's engine

pytestmark = pytest.mark.anyio

NAMES = ["Acme", "Berlin", "Nimbus", "Alice", "Paris", "Kafka", "Oslo", "Bob"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def rag(engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:  # noqa: F811
    """A LightRAG instance whose graph lives in the engine (its own workspace)."""
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    async with counting_lightrag(tmp_path, f"t_{uuid.uuid4().hex[:8]}", graph_storage="PGTableGraphStorage") as instance:
        yield instance


def counted(graph: Any) -> Any:
    """LightRAG's own count (the class's method, whatever the instance was given)."""
    return type(graph).node_degrees_batch(graph, NAMES)


async def drop_triggers(graph: Any) -> None:
    for name in TRIGGERS:
        await graph._db.execute(f"DROP TRIGGER IF EXISTS {name} ON lightrag_graph_edges")


async def random_writes(graph: Any, rnd: random.Random, steps: int) -> None:
    """LightRAG's graph writes at random over a few shared entities (self-relations included)."""
    for _ in range(steps):
        kind = rnd.random()
        a, b = rnd.choice(NAMES), rnd.choice(NAMES)
        if kind < 0.35:
            pairs = [(rnd.choice(NAMES), rnd.choice(NAMES)) for _ in range(rnd.randint(1, 6))]
            await graph.upsert_edges_batch([(s, t, {"weight": "1.0", "description": f"{s}-{t}"}) for s, t in dict.fromkeys(pairs)])
        elif kind < 0.55:
            await graph.upsert_edge(a, b, {"weight": "2.0", "description": "again"})  # new, or its properties changed
        elif kind < 0.7:
            await graph.remove_edges([(a, b), (b, rnd.choice(NAMES))])
        elif kind < 0.8:
            await graph.delete_node(a)  # its relations go by the foreign key's cascade
        elif kind < 0.87:
            await graph.remove_nodes([a, b])
        elif kind < 0.95:
            await graph.upsert_node(a, {"entity_id": a, "description": "touched"})
        else:
            await graph.drop()


async def test_kept_counts_are_lightrags_counts_after_any_writes(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    await keep_node_degrees(rag)
    assert graph.node_degrees_batch != type(graph).node_degrees_batch.__get__(graph)  # served from the table
    rnd = random.Random(25)
    for _ in range(30):
        await random_writes(graph, rnd, 6)
        expected = await counted(graph)
        assert await graph.node_degrees_batch(NAMES) == expected
        assert [await graph.node_degree(name) for name in NAMES] == list(expected.values())
    assert await graph.edge_degrees_batch([("Acme", "Berlin")]) == {("Acme", "Berlin"): expected["Acme"] + expected["Berlin"]}
    await graph.drop()
    kept = await graph._db.query(f"SELECT count(*) AS kept FROM {node_degrees.TABLE} WHERE workspace = $1", [graph.workspace])
    assert kept == {"kept": 0}  # no row left at 0


async def test_an_update_that_moves_a_relations_end_moves_its_counts(rag: Any) -> None:
    """LightRAG's upserts change properties; a statement of another writer may change an end."""
    graph = rag.chunk_entity_relation_graph
    await keep_node_degrees(rag)
    await graph.upsert_edges_batch([("Acme", "Berlin", {"weight": "1.0"}), ("Acme", "Kafka", {"weight": "1.0"})])
    await graph.upsert_node("Oslo", {"entity_id": "Oslo"})
    await graph._db.execute(
        "UPDATE lightrag_graph_edges SET tgt_id = 'Oslo' WHERE workspace = $1 AND src_id = 'Acme' AND tgt_id = 'Berlin'",
        {"workspace": graph.workspace})
    assert await graph.node_degrees_batch(NAMES) == await counted(graph)
    assert (await graph.node_degrees_batch(["Berlin", "Oslo"])) == {"Berlin": 0, "Oslo": 1}


async def test_relations_written_before_are_counted_when_the_triggers_are_made(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    await drop_triggers(graph)  # as in a knowledge base an earlier version indexed
    await random_writes(graph, random.Random(7), 40)
    await graph.upsert_edges_batch([("Acme", name, {"weight": "1.0"}) for name in NAMES])  # a self-relation too
    before = await counted(graph)
    await keep_node_degrees(rag)
    assert await graph._db.query(node_degrees._READY, [TRIGGERS]) == {"ready": len(TRIGGERS)}
    assert await graph.node_degrees_batch(NAMES) == before
    assert before["Acme"] == len(NAMES) + 1  # the self-relation counts twice, as LightRAG counts it


async def test_a_reader_counts_until_a_writer_made_the_triggers(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    await drop_triggers(graph)
    await keep_node_degrees(rag, read_only=True)
    assert "node_degrees_batch" not in vars(graph)  # LightRAG's count
    await keep_node_degrees(rag)
    assert "node_degrees_batch" in vars(graph)
    await keep_node_degrees(rag, read_only=True)  # made: a reader reads them too


async def test_a_former_versions_triggers_are_replaced(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    await drop_triggers(graph)
    await graph._db.execute("""CREATE OR REPLACE FUNCTION lightrag_mcp_degrees_added_v0() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'former version'; END $$""")
    await graph._db.execute("""CREATE TRIGGER lightrag_mcp_degrees_added_v0 AFTER INSERT ON lightrag_graph_edges
        FOR EACH STATEMENT EXECUTE FUNCTION lightrag_mcp_degrees_added_v0()""")
    await keep_node_degrees(rag)
    await graph.upsert_edge("Acme", "Oslo", {"weight": "1.0"})  # the former trigger would raise
    assert await graph.node_degrees_batch(["Acme", "Oslo"]) == {"Acme": 1, "Oslo": 1}


async def test_concurrent_writers_sharing_entities_neither_deadlock_nor_miscount(rag: Any, tmp_path: Path) -> None:
    """Two LightRAG instances of one knowledge base (two users' processes) and concurrent batches
    within each, all naming the same entities in opposite orders: batches of new relations, then
    removals of distinct relations, lock the shared counts without a deadlock; then both at once
    (LightRAG's removal locks relations out of order, and retries when the engine breaks the
    deadlock that makes with an upsert of the same relations) still leave the right counts."""
    graph = rag.chunk_entity_relation_graph
    await keep_node_degrees(rag)
    async with counting_lightrag(tmp_path, graph.workspace, graph_storage="PGTableGraphStorage") as other:
        await keep_node_degrees(other)
        storages = (graph, other.chunk_entity_relation_graph)
        names = [f"E{n}" for n in range(40)]
        deadlocks = await deadlocks_so_far(graph)

        async def adding(storage: Any, seed: int) -> None:
            rnd = random.Random(seed)
            for _ in range(15):
                pairs = sorted({(rnd.choice(names), rnd.choice(names)) for _ in range(30)}, reverse=bool(seed % 2))
                await storage.upsert_edges_batch([(s, t, {"weight": "1.0"}) for s, t in pairs])

        async def removing(storage: Any, pairs: list[tuple[str, str]]) -> None:
            for start in range(0, len(pairs), 10):
                await storage.remove_edges(pairs[start : start + 10])

        async with anyio.create_task_group() as group:
            for seed in range(6):
                group.start_soon(adding, storages[seed % 2], seed)
        stored = sorted({tuple(sorted(edge)) for name in names for edge in await graph.get_node_edges(name) or []})
        async with anyio.create_task_group() as group:
            for part in range(6):  # distinct relations, sharing their entities' counts
                group.start_soon(removing, storages[part % 2], stored[part::6][:: 1 if part % 2 else -1])
        assert await deadlocks_so_far(graph) == deadlocks
        assert await graph.node_degrees_batch(names) == await type(graph).node_degrees_batch(graph, names)

        async with anyio.create_task_group() as group:
            for seed in range(6, 12):
                group.start_soon(adding, storages[seed % 2], seed)
                group.start_soon(removing, storages[seed % 2], stored[seed % 6 :: 6])
        assert await graph.node_degrees_batch(names) == await type(graph).node_degrees_batch(graph, names)


async def deadlocks_so_far(graph: Any) -> int:
    """The engine's count of deadlocks it broke, once every process reported its own (within 1 s)."""
    await anyio.sleep(1.5)
    row = await graph._db.query("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
    return int(row["deadlocks"])


async def test_a_truncated_relations_table_leaves_no_counts(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    await keep_node_degrees(rag)
    await graph.upsert_edges_batch([("Acme", "Berlin", {"weight": "1.0"})])
    await graph._db.execute("TRUNCATE lightrag_graph_edges")
    assert await graph.node_degrees_batch(["Acme", "Berlin"]) == {"Acme": 0, "Berlin": 0}
    assert await graph._db.query(f"SELECT count(*) AS kept FROM {node_degrees.TABLE}") == {"kept": 0}
