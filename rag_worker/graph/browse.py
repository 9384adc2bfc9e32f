"""Choosing the part of the graph a call asks for: the whole graph (most connected first),
the entities of one type, or the neighbourhood of one or more center entities.

Pure functions over a `GraphSnapshot`; they run in a worker thread.  Over a part of the graph
they ask for the relations they need (`GraphSnapshot.need_relations`) before reading them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rag_worker.graph.snapshot import Edge, GraphSnapshot, folded


@dataclass(frozen=True)
class GraphFilters:
    """Which entities and relations may appear (types compared case-insensitively)."""

    min_degree: int = 0
    entity_types: frozenset[str] = frozenset()
    relationship_types: frozenset[str] = frozenset()
    min_weight: float = 0.0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> GraphFilters:
        """From a call's `graph_options`."""
        return cls(
            min_degree=int(options["min_degree"]),
            entity_types=folded(options.get("entity_types")),
            relationship_types=folded(options.get("relationship_types")),
            min_weight=float(options["min_weight"]),
        )

    def node_ok(self, snapshot: GraphSnapshot, name: str) -> bool:
        if self.min_degree and snapshot.degree(name) < self.min_degree:
            return False
        return not self.entity_types or snapshot.node_type(name).casefold() in self.entity_types

    def edge_ok(self, edge: Edge) -> bool:
        if self.relationship_types and not edge.has_keyword(self.relationship_types):
            return False
        return not self.min_weight or (edge.weight or 0.0) >= self.min_weight

    def applied(self) -> dict[str, object]:
        applied: dict[str, object] = {}
        if self.min_degree:
            applied["min_degree"] = self.min_degree
        if self.entity_types:
            applied["entity_types"] = sorted(self.entity_types)
        if self.relationship_types:
            applied["relationship_types"] = sorted(self.relationship_types)
        if self.min_weight:
            applied["min_weight"] = self.min_weight
        return applied


@dataclass
class Selection:
    """The entities (in output order) and relations chosen, and what the limits cut."""

    nodes: list[str]
    edges: list[Edge]
    centers: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    more_beyond_depth: bool = False

    @property
    def truncated(self) -> bool:
        return bool(self.reasons)


def _by_degree(snapshot: GraphSnapshot, names: Iterable[str], most: int | None = None) -> list[str]:
    """Most connected first, then by name (LightRAG's own order); only the first `most` if given."""

    def key(name: str) -> tuple[int, str]:
        return -snapshot.degree(name), name

    return sorted(names, key=key) if most is None else heapq.nsmallest(most, names, key=key)


def select_whole(
    snapshot: GraphSnapshot, filters: GraphFilters, max_nodes: int, max_edges: int, entity_type: str | None = None
) -> Selection:
    """The most connected entities passing the filters (optionally of one type)."""
    wanted_type = entity_type.casefold() if entity_type else None
    eligible = [
        name
        for name in snapshot.nodes
        if filters.node_ok(snapshot, name)
        and (wanted_type is None or snapshot.node_type(name).casefold() == wanted_type)
    ]
    selection = Selection(_by_degree(snapshot, eligible, max_nodes), [])
    if len(eligible) > max_nodes:
        selection.reasons.append(
            f"max_nodes={max_nodes} kept the {max_nodes} most connected of {len(eligible)} entities"
        )
    _attach_edges(snapshot, filters, selection, max_edges, preferred=[])
    return selection


def select_neighbourhood(
    snapshot: GraphSnapshot,
    centers: list[str],
    filters: GraphFilters,
    max_depth: int,
    max_nodes: int,
    max_edges: int,
) -> Selection:
    """Breadth-first from the centers, level by level, most connected first within a level.

    The centers are always included; other entities and the relations followed must pass
    the filters.  The relations that discovered each entity are kept first when
    `max_edges` cuts, so the picture stays connected."""
    chosen: list[str] = []
    seen: set[str] = set()
    tree_edges: list[Edge] = []
    level = [name for name in dict.fromkeys(centers) if name in snapshot.nodes]
    discovered_by: dict[str, Edge] = {}
    depth = 0
    cut = False
    more_beyond = False
    while level:
        for name in _by_degree(snapshot, level):
            if name in seen:
                continue
            if len(chosen) >= max_nodes:
                cut = True
                break
            seen.add(name)
            chosen.append(name)
            if name in discovered_by:
                tree_edges.append(discovered_by[name])
        if cut:
            break
        following: list[str] = []
        snapshot.need_relations(level)
        for name in level:
            for edge in snapshot.incident(name):
                neighbour = edge.other(name)
                if neighbour in seen or not filters.edge_ok(edge) or not filters.node_ok(snapshot, neighbour):
                    continue
                if depth >= max_depth:
                    more_beyond = True
                    break
                if neighbour not in discovered_by:
                    discovered_by[neighbour] = edge
                    following.append(neighbour)
        if depth >= max_depth:
            break
        level = following
        depth += 1
    selection = Selection(chosen, [], centers=[name for name in centers if name in seen], more_beyond_depth=more_beyond)
    if cut:
        selection.reasons.append(f"max_nodes={max_nodes} stopped the search before max_depth={max_depth}")
    _attach_edges(snapshot, filters, selection, max_edges, preferred=tree_edges)
    return selection


def _attach_edges(
    snapshot: GraphSnapshot, filters: GraphFilters, selection: Selection, max_edges: int, preferred: list[Edge]
) -> None:
    """Relations among the chosen entities: the preferred ones first, then the strongest."""
    snapshot.need_relations(selection.nodes, among=True)
    chosen = set(selection.nodes)
    preferred_ids = {edge.id for edge in preferred}
    others: dict[str, Edge] = {}
    for name in selection.nodes:
        for edge in snapshot.incident(name):
            if edge.id in preferred_ids or edge.id in others:
                continue
            if edge.other(name) in chosen and filters.edge_ok(edge):
                others[edge.id] = edge
    ranked = preferred + sorted(others.values(), key=lambda edge: (-(edge.weight or 0.0), edge.source, edge.target))
    if len(ranked) > max_edges:
        selection.reasons.append(f"max_edges={max_edges} kept {max_edges} of {len(ranked)} relations (strongest first)")
    selection.edges = ranked[:max_edges]
