"""Choosing subgraphs, their statistics, and relationship walks over a small known graph:
triangle Alice-Bob-Carol, chain Carol-Dave-Erin-Frank, Helena-Alice, isolated Zed."""

from __future__ import annotations

import pytest

from rag_worker.graph.browse import GraphFilters, select_neighbourhood, select_whole
from rag_worker.graph.relationships import RelationFilters, hop_record, walk
from rag_worker.graph.snapshot import GraphSnapshot, split_keywords, split_multi
from rag_worker.graph.statistics import MAX_PATH_LENGTH_NODES, graph_statistics
from tests.unit.graph_fixtures import edge, node, people_snapshot, snapshot


def test_snapshot_indexes_degrees_types_and_keywords() -> None:
    graph = people_snapshot()
    assert len(graph) == 8 and len(graph.edges) == 7
    assert graph.degree("Carol King") == 3 and graph.degree("Zed") == 0
    assert graph.node_type("Dave Acme Corp") == "organization"
    assert graph.resolve("alice johnson") == "Alice Johnson" and graph.resolve("nobody") is None
    assert split_multi("a<SEP> b <SEP>a<SEP>") == ["a", "b"]
    assert split_keywords("co-occurrence,led<SEP>Led, project") == ["co-occurrence", "led", "project"]


def test_a_relation_reported_in_both_directions_counts_once() -> None:
    graph = snapshot([node("A"), node("B")], [edge("A", "B"), edge("B", "A")])
    assert len(graph.edges) == 1 and graph.degree("A") == 1


def test_whole_graph_keeps_the_most_connected_and_says_when_cut() -> None:
    graph = people_snapshot()
    selection = select_whole(graph, GraphFilters(), max_nodes=3, max_edges=100)
    assert selection.nodes == ["Alice Johnson", "Carol King", "Bob Stone"]
    assert {(e.source, e.target) for e in selection.edges} == {
        ("Alice Johnson", "Bob Stone"),
        ("Bob Stone", "Carol King"),
        ("Carol King", "Alice Johnson"),
    }
    assert selection.truncated and "max_nodes=3" in selection.reasons[0]
    complete = select_whole(graph, GraphFilters(), max_nodes=100, max_edges=100)
    assert not complete.truncated and len(complete.nodes) == 8 and len(complete.edges) == 7


def test_max_edges_keeps_the_strongest_relations() -> None:
    selection = select_whole(people_snapshot(), GraphFilters(), max_nodes=100, max_edges=2)
    assert [e.weight for e in selection.edges] == [3.0, 2.0]
    assert selection.truncated and "max_edges=2" in selection.reasons[0]


def test_filters_by_type_degree_keyword_and_weight() -> None:
    graph = people_snapshot()
    people = select_whole(graph, GraphFilters(entity_types=frozenset({"person"})), 100, 100)
    assert set(people.nodes) == {"Alice Johnson", "Bob Stone", "Carol King", "Helena Vargas"}
    connected = select_whole(graph, GraphFilters(min_degree=2), 100, 100)
    assert "Zed" not in connected.nodes and "Helena Vargas" not in connected.nodes
    friends = select_whole(graph, GraphFilters(relationship_types=frozenset({"friends"})), 100, 100)
    assert len(friends.edges) == 2
    heavy = select_whole(graph, GraphFilters(min_weight=2.0), 100, 100)
    assert sorted(e.weight or 0 for e in heavy.edges) == [2.0, 3.0]
    by_type = select_whole(graph, GraphFilters(), 100, 100, entity_type="ORGANIZATION")
    assert by_type.nodes == ["Dave Acme Corp", "Erin Labs"]


def test_neighbourhood_follows_hops_up_to_max_depth() -> None:
    graph = people_snapshot()
    one = select_neighbourhood(graph, ["Dave Acme Corp"], GraphFilters(), 1, 100, 100)
    assert set(one.nodes) == {"Dave Acme Corp", "Carol King", "Erin Labs"} and one.more_beyond_depth
    assert one.centers == ["Dave Acme Corp"] and not one.truncated
    two = select_neighbourhood(graph, ["Dave Acme Corp"], GraphFilters(), 2, 100, 100)
    assert set(two.nodes) == {"Dave Acme Corp", "Carol King", "Erin Labs", "Alice Johnson", "Bob Stone", "Frank Street"}
    assert len(two.edges) == 6  # the triangle's Alice-Bob edge joins two depth-2 entities
    everything = select_neighbourhood(graph, ["Zed"], GraphFilters(), 3, 100, 100)
    assert everything.nodes == ["Zed"] and not everything.edges and not everything.more_beyond_depth


def test_neighbourhood_cut_by_max_nodes_keeps_the_center_and_stays_connected() -> None:
    graph = people_snapshot()
    selection = select_neighbourhood(graph, ["Carol King"], GraphFilters(), 3, 4, 3)
    assert selection.nodes[0] == "Carol King" and len(selection.nodes) == 4
    assert selection.truncated
    import networkx as nx

    picture = nx.Graph([(e.source, e.target) for e in selection.edges])
    picture.add_nodes_from(selection.nodes)
    assert nx.is_connected(picture)  # the discovering relations are kept first


def test_neighbourhood_filters_apply_to_everything_but_the_centers() -> None:
    graph = people_snapshot()
    selection = select_neighbourhood(
        graph, ["Zed", "Carol King"], GraphFilters(entity_types=frozenset({"person"})), 2, 100, 100
    )
    assert "Zed" in selection.nodes and "Dave Acme Corp" not in selection.nodes
    assert {"Alice Johnson", "Bob Stone", "Helena Vargas"} <= set(selection.nodes)


def test_statistics_of_a_known_graph() -> None:
    graph = people_snapshot()
    stats = graph_statistics(graph, select_whole(graph, GraphFilters(), 100, 100))
    assert (stats["total_nodes"], stats["total_edges"]) == (8, 7)
    assert stats["knowledge_base_nodes"] == 8
    assert stats["node_types"] == {"person": 4, "organization": 2, "location": 1, "concept": 1}
    assert stats["edge_types"]["co-occurrence"] == 4 and stats["edge_keywords"]["friends"] == 2
    assert stats["density"] == pytest.approx(7 / 28, abs=1e-6)
    assert stats["average_degree"] == pytest.approx(14 / 8)
    # Alice, Bob: clustering 1/3 and 1; Carol 1/3; everyone else 0
    assert stats["clustering_coefficient"] == pytest.approx((1 / 3 + 1 + 1 / 3) / 8, abs=1e-6)
    assert stats["connected_components"] == 2 and stats["largest_component_nodes"] == 7
    assert stats["average_path_length"] is not None and stats["average_path_length"] > 1


def test_path_length_is_skipped_with_a_reason_on_large_components() -> None:
    names = [f"N{i}" for i in range(MAX_PATH_LENGTH_NODES + 5)]
    graph = snapshot([node(name) for name in names], [edge(a, b) for a, b in zip(names, names[1:], strict=False)])
    stats = graph_statistics(graph, select_whole(graph, GraphFilters(), 1000, 2000))
    assert stats["average_path_length"] is None and "largest component" in stats["average_path_length_note"]
    empty = graph_statistics(GraphSnapshot({}, []), select_whole(GraphSnapshot({}, []), GraphFilters(), 10, 10))
    assert empty["total_nodes"] == 0 and empty["average_path_length"] is None


# ----------------------------------------------------------------------------- relationships
def test_direct_relations_with_direction_as_stored() -> None:
    graph = people_snapshot()
    found = walk(graph, "Alice Johnson", RelationFilters(), 1)
    assert {hop.reached for hop in found.hops} == {"Bob Stone", "Carol King", "Helena Vargas"}
    directions = {hop.reached: hop.direction for hop in found.hops}
    assert directions == {"Bob Stone": "outgoing", "Carol King": "incoming", "Helena Vargas": "incoming"}
    assert found.counts["by_direction"] == {"outgoing": 1, "incoming": 2}
    assert found.counts["total"] == 3 and found.counts["by_depth"] == {"1": 3}
    outgoing = walk(graph, "Alice Johnson", RelationFilters(direction="outgoing"), 1)
    assert [hop.reached for hop in outgoing.hops] == ["Bob Stone"]
    incoming = walk(graph, "Alice Johnson", RelationFilters(direction="incoming"), 1)
    assert {hop.reached for hop in incoming.hops} == {"Carol King", "Helena Vargas"}


def test_multi_hop_reports_each_relation_once_with_its_path() -> None:
    graph = people_snapshot()
    found = walk(graph, "Frank Street", RelationFilters(), 3)
    by_depth = found.counts["by_depth"]
    assert by_depth == {"1": 1, "2": 1, "3": 1}
    last = found.hops[-1]
    assert last.path == ("Frank Street", "Erin Labs", "Dave Acme Corp", "Carol King") and last.depth == 3
    record = hop_record(graph, last)
    assert record["connected_entity"]["name"] == "Carol King" and record["path_length"] == 3
    wide = walk(graph, "Carol King", RelationFilters(), 2)
    assert len({(h.edge.source, h.edge.target) for h in wide.hops}) == len(wide.hops) == 6  # Erin-Frank is hop 3


def test_relationship_type_and_target_type_filters() -> None:
    graph = people_snapshot()
    friends = walk(graph, "Alice Johnson", RelationFilters(relationship_types=frozenset({"friends"})), 3)
    assert {hop.reached for hop in friends.hops} == {"Bob Stone", "Carol King"}
    organizations = walk(graph, "Carol King", RelationFilters(target_types=frozenset({"organization"})), 2)
    assert {hop.reached for hop in organizations.hops} == {"Dave Acme Corp", "Erin Labs"}
    assert organizations.counts["by_target_type"] == {"organization": 2}
    heavy = walk(graph, "Alice Johnson", RelationFilters(min_weight=2.5), 1)
    assert [hop.reached for hop in heavy.hops] == ["Carol King"]
