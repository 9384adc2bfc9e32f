"""On the embedded engine's graph (LightRAG's `PGTableGraphStorage`) a graph tool reuses the
snapshot it read while the graph is unchanged, and reads it again after any insert, update or
delete.  Real LightRAG on the real embedded engine."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from rag_worker.graph.snapshot import GraphSnapshot, forget_unused, read_snapshot
from tests.unit.test_vector_flush import counting_lightrag
from tests.unit.test_vector_flush_engine import anyio_backend, engine_dir  # noqa: F401  (fixtures)

pytestmark = pytest.mark.anyio


class Context:
    """What read_snapshot needs of a request context: CPU work run (here, inline)."""

    async def run_cpu(self, function: Callable[..., Any], *args: Any) -> Any:
        return function(*args)


@pytest.fixture
async def graph(engine_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:  # noqa: F811
    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    workspace = f"g_{uuid.uuid4().hex[:8]}"
    async with counting_lightrag(tmp_path, workspace, graph_storage="PGTableGraphStorage", model_name="count8") as rag:
        yield rag


def node(name: str, description: str) -> dict[str, str]:
    return {"entity_id": name, "entity_type": "person", "description": description, "source_id": "c1"}


async def test_an_unchanged_graph_is_read_once_and_every_change_is_seen(graph: Any) -> None:
    store, ctx = graph.chunk_entity_relation_graph, Context()
    await store.upsert_node("Ada", node("Ada", "mathematician"))
    await store.upsert_node("Bob", node("Bob", "engineer"))
    await store.upsert_edge("Ada", "Bob", {"keywords": "works with", "weight": "1.0", "source_id": "c1"})
    await store.index_done_callback()
    first = await read_snapshot(ctx, graph)
    assert isinstance(first, GraphSnapshot) and set(first.nodes) == {"Ada", "Bob"} and len(first.edges) == 1
    assert await read_snapshot(ctx, graph) is first  # unchanged: not read again

    await store.upsert_node("Ada", node("Ada", "mathematician and writer"))  # an update
    await store.index_done_callback()
    updated = await read_snapshot(ctx, graph)
    assert updated is not first and "writer" in updated.nodes["Ada"]["description"]

    await store.upsert_node("Cy", node("Cy", "chemist"))  # an insert
    await store.index_done_callback()
    assert "Cy" in (await read_snapshot(ctx, graph)).nodes

    await store.remove_edges([("Ada", "Bob")])  # a delete
    await store.index_done_callback()
    assert (await read_snapshot(ctx, graph)).edges == []


async def test_a_snapshot_no_graph_call_used_for_a_while_is_let_go(graph: Any) -> None:
    store, ctx = graph.chunk_entity_relation_graph, Context()
    await store.upsert_node("Ada", node("Ada", "mathematician"))
    await store.index_done_callback()
    first = await read_snapshot(ctx, graph)
    assert forget_unused(unused_for=60) == 0 and await read_snapshot(ctx, graph) is first  # used just now: kept
    assert forget_unused(unused_for=0) >= 1  # (other tests' snapshots may go too)
    assert await read_snapshot(ctx, graph) is not first  # read again
