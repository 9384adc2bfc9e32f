"""An entity's relations, followed breadth-first up to three hops, with filters and counts.

Each relation is reported once, at the hop where the walk first meets it; its `direction` is
seen from the entity on the walk's side (`outgoing` when that entity is the relation's stored
source).  `relationship_types`, `direction` and `min_weight` decide which relations are
followed at every hop; `target_entity_types` only decides which reached entities are reported
(the walk still passes through others).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rag_worker.graph.snapshot import Edge, GraphSnapshot, folded, readable, shorten
from rag_worker.graph.sources import file_names

MAX_RELATIONS = 20_000  # reported relations per call, before pagination
MAX_VISITED = 20_000


@dataclass(frozen=True)
class RelationFilters:
    relationship_types: frozenset[str] = frozenset()
    direction: str = "both"
    target_types: frozenset[str] = frozenset()
    min_weight: float = 0.0

    @classmethod
    def from_arguments(cls, filters: dict[str, Any]) -> RelationFilters:
        """From a call's `relationship_filters`."""
        return cls(
            relationship_types=folded(filters.get("relationship_types")),
            direction=str(filters["direction"]),
            target_types=folded(filters.get("target_entity_types")),
            min_weight=float(filters["min_weight"]),
        )

    def follows(self, edge: Edge, origin: str) -> bool:
        if self.relationship_types and not edge.has_keyword(self.relationship_types):
            return False
        if self.min_weight and (edge.weight or 0.0) < self.min_weight:
            return False
        if self.direction == "outgoing":
            return edge.source == origin
        if self.direction == "incoming":
            return edge.target == origin
        return True

    def applied(self) -> dict[str, Any]:
        applied: dict[str, Any] = {"direction": self.direction}
        if self.relationship_types:
            applied["relationship_types"] = sorted(self.relationship_types)
        if self.target_types:
            applied["target_entity_types"] = sorted(self.target_types)
        if self.min_weight:
            applied["min_weight"] = self.min_weight
        return applied


@dataclass(frozen=True)
class Hop:
    edge: Edge
    origin: str
    reached: str
    depth: int
    path: tuple[str, ...]

    @property
    def direction(self) -> str:
        return "outgoing" if self.edge.source == self.origin else "incoming"


@dataclass
class Walk:
    hops: list[Hop]
    cut: bool = False
    counts: dict[str, Any] = field(default_factory=dict)


def walk(snapshot: GraphSnapshot, root: str, filters: RelationFilters, max_depth: int) -> Walk:
    """Every relation reachable from `root` within `max_depth` hops that passes the filters."""
    hops: list[Hop] = []
    used: set[str] = set()
    visited = {root}
    frontier: list[tuple[str, tuple[str, ...]]] = [(root, (root,))]
    cut = False
    for depth in range(1, max_depth + 1):
        snapshot.need_relations(origin for origin, _ in frontier)  # over a part (`run_selection`)
        following: list[tuple[str, tuple[str, ...]]] = []
        for origin, path in frontier:
            incident = sorted(snapshot.incident(origin), key=lambda e: (-(e.weight or 0.0), e.other(origin)))
            for edge in incident:
                reached = edge.other(origin)
                if edge.id in used or (depth > 1 and reached == root) or not filters.follows(edge, origin):
                    continue
                used.add(edge.id)
                if not filters.target_types or snapshot.node_type(reached).casefold() in filters.target_types:
                    hops.append(Hop(edge, origin, reached, depth, (*path, reached)))
                if reached not in visited:
                    visited.add(reached)
                    following.append((reached, (*path, reached)))
                if len(hops) >= MAX_RELATIONS or len(visited) >= MAX_VISITED:
                    cut = True
                    break
            if cut:
                break
        if cut or not following:
            break
        frontier = following
    hops.sort(key=lambda hop: (hop.depth, -(hop.edge.weight or 0.0), hop.reached, hop.origin))
    return Walk(hops, cut, _counts(snapshot, hops))


def _counts(snapshot: GraphSnapshot, hops: list[Hop]) -> dict[str, Any]:
    return {
        "total": len(hops),
        "by_type": dict(Counter(hop.edge.type.casefold() for hop in hops).most_common(50)),
        "by_direction": dict(Counter(hop.direction for hop in hops)),
        "by_target_type": dict(Counter(snapshot.node_type(hop.reached) for hop in hops).most_common(50)),
        "by_depth": {str(depth): count for depth, count in sorted(Counter(hop.depth for hop in hops).items())},
    }


def hop_record(snapshot: GraphSnapshot, hop: Hop) -> dict[str, Any]:
    reached = snapshot.nodes.get(hop.reached, {})
    return {
        "source": hop.edge.source,
        "target": hop.edge.target,
        "direction": hop.direction,
        "type": hop.edge.type,
        "keywords": list(hop.edge.keywords),
        "description": shorten(readable(hop.edge.attrs.get("description")), 500),
        "weight": hop.edge.weight,
        "path_length": hop.depth,
        "path": list(hop.path),
        "connected_entity": {
            "name": hop.reached,
            "type": snapshot.node_type(hop.reached),
            "description": shorten(readable(reached.get("description")), 200),
            "degree": snapshot.degree(hop.reached),
        },
        "source_files": file_names(hop.edge.attrs)[:5],
    }
