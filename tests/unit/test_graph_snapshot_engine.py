"""On the embedded engine's graph (LightRAG's `PGTableGraphStorage`) a graph tool reuses the
snapshot it read while the graph is unchanged, and reads it again after any insert, update or
delete; entity search reads only the entities and their relation counts, the same ones the
whole snapshot gives; a walk from one entity over the part of the graph around it finds what it
finds over the whole graph, and so does an export's selection over the relations it asks for.
Real LightRAG on the real embedded engine."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rag_worker.graph import snapshot as snapshots
from rag_worker.graph.browse import GraphFilters, Selection, select_neighbourhood, select_whole
from rag_worker.graph.exports import edge_record, node_record
from rag_worker.graph.relationships import RelationFilters, hop_record, walk
from rag_worker.graph.search import SearchRequest, exact_search, fuzzy_search
from rag_worker.graph.snapshot import (
    EntityDegrees,
    GraphSnapshot,
    chosen_properties,
    entity_properties,
    forget_unused,
    keep_part,
    read_entities,
    read_neighbourhood,
    read_part,
    read_snapshot,
    resolve_name,
    run_selection,
    select_over,
)
from rag_worker.graph.statistics import graph_statistics
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


def whole_reads(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the graph storage reads all its relations from now on (`get_all_edges`): [count]."""
    reads = [0]
    all_edges = store.get_all_edges

    async def counted() -> list[dict[str, Any]]:
        reads[0] += 1
        return await all_edges()

    monkeypatch.setattr(store, "get_all_edges", counted)
    return reads


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


async def test_entity_search_reads_the_entities_and_their_relation_counts_not_the_relations(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ctx = graph.chunk_entity_relation_graph, Context()
    for name in ("Ada", "Bob", "Cy", "Dee"):
        await store.upsert_node(name, node(name, f"{name} the person"))
    for source, target in (("Ada", "Bob"), ("Ada", "Cy"), ("Bob", "Cy"), ("Ada", "Ada")):
        await store.upsert_edge(source, target, {"keywords": "knows", "weight": "1.0", "source_id": "c1"})
    await store.index_done_callback()
    edges_read = whole_reads(store, monkeypatch)
    assert isinstance(await read_entities(ctx, graph), EntityDegrees)

    await store.upsert_node("Eve", node("Eve", "Eve the person"))  # the graph changed: read again
    await store.index_done_callback()
    entities = await read_entities(ctx, graph)
    assert isinstance(entities, EntityDegrees) and edges_read[0] == 0 and "Eve" in entities.nodes
    assert await read_entities(ctx, graph) is entities  # unchanged: kept
    whole = await read_snapshot(ctx, graph)
    assert edges_read[0] == 1 and set(entities.nodes) == set(whole.nodes)
    assert {name: (entities.node_type(name), entities.nodes[name].get("description")) for name in whole.nodes} == {
        name: (whole.node_type(name), whole.nodes[name].get("description")) for name in whole.nodes
    }
    assert await entity_properties(graph, entities, ["Ada", "Eve"]) == {name: whole.nodes[name] for name in ("Ada", "Eve")}
    assert {name: entities.degree(name) for name in whole.nodes} == {name: whole.degree(name) for name in whole.nodes}
    assert [entities.degree(name) for name in ("Ada", "Bob", "Cy", "Dee", "Eve")] == [3, 2, 2, 0, 0]  # Ada's own relation once
    for request in (SearchRequest("person", fields=("description",)), SearchRequest("Bob"), SearchRequest("ada", "exact")):
        search = exact_search if request.search_type == "exact" else fuzzy_search
        assert search(entities, request) == search(whole, request)


async def test_a_walk_over_the_part_around_an_entity_finds_what_it_finds_over_the_whole_graph(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ctx, rng = graph.chunk_entity_relation_graph, Context(), random.Random(7)
    names = [f"E{number:02d}" for number in range(40)]
    for name in names:
        await store.upsert_node(name, {**node(name, f"{name} entity"), "entity_type": rng.choice(["person", "place"])})
    pairs = {tuple(sorted(rng.sample(names[:30], 2))) for _ in range(70)} | {("E05", "E05")}  # E30-E39: alone
    for source, target in sorted(pairs):
        keywords = rng.choice(["knows", "visits", "knows,visits"])
        await store.upsert_edge(source, target, {"keywords": keywords, "weight": str(rng.choice([1.0, 2.0, 3.0])),
                                                 "description": f"{source} and {target}", "source_id": "c1", "file_path": f"{source}.md"})
    await store.index_done_callback()
    whole = await read_snapshot(ctx, graph)
    filters = [
        RelationFilters(frozenset(), "both", frozenset(), 0.0),
        RelationFilters(frozenset({"visits"}), "outgoing", frozenset({"place"}), 2.0),
    ]
    for name in names:
        for depth in (1, 2, 3):
            part = await read_neighbourhood(ctx, graph, name, depth)
            assert part is not None
            assert part.degree(name) == whole.degree(name) and part.nodes[name] == whole.nodes[name]
            for chosen in filters:
                assert walk(part, name, chosen, depth) == walk(whole, name, chosen, depth), (name, depth)
            reached = {hop.reached for hop in walk(part, name, filters[0], depth).hops}
            assert {n: part.degree(n) for n in reached} == {n: whole.degree(n) for n in reached}
    assert await read_neighbourhood(ctx, graph, "e01", 1) is None  # only the exact name
    assert await read_neighbourhood(ctx, graph, "nobody", 1) is None
    wide = await read_neighbourhood(ctx, graph, "E01", 3, most_edges=5)  # too wide: a part to walk over
    assert wide is not None and wide.held == set() and wide.size() == whole.size()

    forget_unused(unused_for=0)  # the reference let go
    edges_read = whole_reads(store, monkeypatch)
    for name in names[:12]:  # however much of the graph a level holds (all of it, three hops from most)
        for depth in (2, 3):
            for chosen in filters:
                part = await read_neighbourhood(ctx, graph, name, depth, most_edges=0)
                assert part is not None and part.held is not None
                found = await run_selection(ctx, graph, part, walk, name, chosen, depth)
                over_whole = walk(whole, name, chosen, depth)
                edges = await chosen_properties(graph, part, [name], [hop.edge for hop in found.hops])
                shown = [hop_record(part, replace(hop, edge=edge)) for hop, edge in zip(found.hops, edges, strict=True)]
                assert shown == [hop_record(whole, hop) for hop in over_whole.hops], (name, depth, chosen)
                assert (found.cut, found.counts) == (over_whole.cut, over_whole.counts)
                assert part.nodes[name] == whole.nodes[name]  # the entity's own properties, read for it
    assert edges_read[0] == 0  # never the whole graph


async def random_graph(store: Any, rng: random.Random, count: int) -> list[str]:
    """`count` entities of three types, about two relations each (some self-relations), and a few alone."""
    names = [f"E{number:02d}" for number in range(count)]
    for name in names:
        entity_type = rng.choice(["person", "place", "tool"])
        await store.upsert_node(name, {**node(name, f"{name} entity"), "entity_type": entity_type, "extra": name.lower()})
    linked = names[: count - count // 8]
    pairs = sorted({tuple(sorted(rng.sample(linked, 2))) for _ in range(2 * count)} | {(linked[3], linked[3])})
    rng.shuffle(pairs)  # stored out of order: a part's relations are read in storage order, the whole graph's sorted
    for source, target in pairs:
        keywords = rng.choice(["knows", "visits", "knows,visits", "uses"])
        weight = str(rng.choice([1.0, 2.0, 3.0]))
        await store.upsert_edge(source, target, {"keywords": keywords, "weight": weight, "description": f"{source}-{target}", "source_id": "c1"})
    await store.index_done_callback()
    return names


async def parts_to_read(graph: Any, seed: int) -> tuple[Any, Context, list[str], GraphSnapshot]:
    """A random graph of 48 entities and its whole snapshot (the reference), let go."""
    store, ctx = graph.chunk_entity_relation_graph, Context()
    names = await random_graph(store, random.Random(seed), 48)
    whole = await read_snapshot(ctx, graph)
    forget_unused(unused_for=0)
    return store, ctx, names, whole


def exported(graph: GraphSnapshot, selection: Selection) -> tuple[Any, ...]:
    """What an export shows of a selection."""
    return (
        [node_record(graph, name, True) for name in selection.nodes],
        [edge_record(edge, True) for edge in selection.edges],
        selection.reasons,
        selection.more_beyond_depth,
        graph_statistics(graph, selection),
    )


async def test_an_export_selects_over_the_relations_it_asks_for_what_it_selects_over_the_whole_graph(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ctx, names, whole = await parts_to_read(graph, 11)
    edges_read = whole_reads(store, monkeypatch)
    filters = [
        GraphFilters(),
        GraphFilters(min_degree=3, entity_types=frozenset({"person", "place"})),
        GraphFilters(relationship_types=frozenset({"visits"}), min_weight=2.0),
    ]
    selections: list[tuple[Callable[..., Selection], tuple[Any, ...]]] = []
    for chosen in filters:
        for most_nodes, most_edges in ((5, 100), (20, 12), (100, 500)):
            selections.append((select_whole, (chosen, most_nodes, most_edges, None)))
            selections.append((select_whole, (chosen, most_nodes, most_edges, "place")))
            for centers in (["E00"], ["E07", "E12"], [names[-1]], ["E03"]):
                for depth in (1, 2, 3):
                    selections.append((select_neighbourhood, (centers, chosen, depth, most_nodes, most_edges)))
    for select, args in selections:
        part = await read_part(ctx, graph)
        assert part.held == set() and part.edges == [] and part.size() == whole.size()
        selection = await select_over(ctx, graph, part, select, *args)
        assert exported(part, selection) == exported(whole, select(whole, *args)), (select.__name__, args)
        for name in part.held:  # in the whole graph's order, whatever order they were read in
            assert [edge.id for edge in part.incident(name)] == [edge.id for edge in whole.incident(name)]
    assert edges_read[0] == 0  # however much of the graph a selection asks for


async def test_an_export_of_an_unchanged_graph_starts_from_a_copy_of_the_part_the_last_one_read(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ctx, names, whole = await parts_to_read(graph, 13)
    links_read = [0]
    fetch = store._fetch

    async def counted(sql: str, *args: Any) -> Any:
        links_read[0] += sql in (snapshots._LINKS_OF_SQL, snapshots._LINKS_AMONG_SQL)
        return await fetch(sql, *args)

    monkeypatch.setattr(store, "_fetch", counted)
    chosen = GraphFilters()
    selections: list[tuple[Callable[..., Selection], tuple[Any, ...]]] = [
        (select_whole, (chosen, 10, 30, None)),
        (select_neighbourhood, (["E00"], chosen, 2, 20, 40)),
        (select_neighbourhood, (["E07", "E12"], chosen, 1, 100, 100)),
        (select_whole, (chosen, 20, 50, "place")),
    ]
    read_by_round = []
    for _ in range(2):
        for select, args in selections:
            part = await read_part(ctx, graph)
            selection = await select_over(ctx, graph, part, select, *args)
            assert exported(part, selection) == exported(whole, select(whole, *args))
            keep_part(graph, part)
        read_by_round.append(links_read[0])
    assert read_by_round[0] > 0 and read_by_round[1] == read_by_round[0]  # the second round read no relation

    kept = snapshots._kept(store, "part", part.version)
    held, edges = set(kept.held), len(kept.edges)
    copy = await read_part(ctx, graph)
    assert copy is not kept and copy.held == held and copy.nodes is not kept.nodes
    selection = await select_over(ctx, graph, copy, select_neighbourhood, [names[-1], "E30"], chosen, 3, 100, 500)
    assert exported(copy, selection) == exported(whole, select_neighbourhood(whole, [names[-1], "E30"], chosen, 3, 100, 500))
    assert kept.held == held and len(kept.edges) == edges  # what another export read stays as it was

    await store.upsert_node("E00", node("E00", "changed"))  # the graph changed: a new part
    await store.index_done_callback()
    assert (await read_part(ctx, graph)).held == set()


async def test_a_name_asked_in_another_case_is_resolved_from_the_names_alone(graph: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ctx = graph.chunk_entity_relation_graph, Context()
    for name in ("Ada Lovelace", "ACME", "Acme", "Straße"):
        await store.upsert_node(name, node(name, f"{name} the entity"))
    await store.index_done_callback()
    assert snapshots.reads_parts(graph)
    fetched: list[str] = []
    fetch = store._fetch

    async def counted(sql: str, *args: Any) -> Any:
        fetched.append(sql)
        return await fetch(sql, *args)

    monkeypatch.setattr(store, "_fetch", counted)
    asked = {"Ada Lovelace": "Ada Lovelace", "ada lovelace": "Ada Lovelace", " ADA LOVELACE ": "Ada Lovelace",
             "STRASSE": "Straße", "acme": None, "Acme": "Acme", "Babbage": None}
    whole = await read_snapshot(ctx, graph)
    for name, stored in asked.items():
        assert await resolve_name(ctx, graph, name) == stored == whole.resolve(name), name
    assert snapshots._ENTITIES_SQL not in fetched  # no entity's type or description read
