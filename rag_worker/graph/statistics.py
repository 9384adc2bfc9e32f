"""Statistics of a selected subgraph: counts by type, density, degree, clustering, components,
and the average shortest path when it is cheap to compute."""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from rag_worker.graph.browse import Selection
from rag_worker.graph.snapshot import GraphSnapshot

MAX_PATH_LENGTH_NODES = 300  # all-pairs BFS on the largest component only up to this size
MAX_TYPES_LISTED = 50


def _top(counter: Counter[str]) -> dict[str, int]:
    return dict(counter.most_common(MAX_TYPES_LISTED))


def graph_statistics(snapshot: GraphSnapshot, selection: Selection) -> dict[str, Any]:
    """Statistics of `selection` (and the size of the whole knowledge base)."""
    graph = nx.Graph()
    graph.add_nodes_from(selection.nodes)
    graph.add_edges_from((edge.source, edge.target) for edge in selection.edges)
    nodes, edges = graph.number_of_nodes(), graph.number_of_edges()
    keywords: Counter[str] = Counter()
    for edge in selection.edges:
        keywords.update(keyword.casefold() for keyword in edge.keywords)
    components = list(nx.connected_components(graph)) if nodes else []
    largest = max(components, key=len) if components else set()
    path_length: float | None = None
    note: str | None = None
    if len(largest) < 2:
        note = "no two connected entities"
    elif len(largest) > MAX_PATH_LENGTH_NODES:
        note = f"not computed: the largest component has {len(largest)} entities (limit {MAX_PATH_LENGTH_NODES})"
    else:
        path_length = round(nx.average_shortest_path_length(graph.subgraph(largest)), 4)
    knowledge_base_nodes, knowledge_base_edges = snapshot.size()
    return {
        "knowledge_base_nodes": knowledge_base_nodes,
        "knowledge_base_edges": knowledge_base_edges,
        "total_nodes": nodes,
        "total_edges": edges,
        "node_types": _top(Counter(snapshot.node_type(name) for name in selection.nodes)),
        "edge_types": _top(Counter(edge.type.casefold() for edge in selection.edges)),
        "edge_keywords": _top(keywords),
        "density": round(nx.density(graph), 6) if nodes > 1 else 0.0,
        "average_degree": round(2 * edges / nodes, 4) if nodes else 0.0,
        "clustering_coefficient": round(nx.average_clustering(graph), 6) if nodes else 0.0,
        "connected_components": len(components),
        "largest_component_nodes": len(largest),
        "average_path_length": path_length,
        "average_path_length_note": note,
    }
