"""One consistent read of a workspace's knowledge graph, indexed for the graph tools.

LightRAG's graph storages all answer `get_all_nodes()` / `get_all_edges()`; reading both once
per call gives every tool the same picture (degrees, edge orientation, types) whatever the
backend.  Building the indexes is CPU work and runs in a worker thread.

On LightRAG's PostgreSQL table graph (the embedded engine's) that read is the cost of every
graph tool: 0.65-1.9 s at 1,000 documents, most of it decoding each row's JSON.  There a
snapshot is kept (the last few workspaces') with the graph's version (`row_versions`: one
aggregate query over the two tables), and reused while the version is the same.  After a
change (each indexed document makes some) only the rows whose own version (`xmin`) changed are
read and decoded again; the kept rest is indexed anew.  Snapshots are read-only.

Edge orientation: LightRAG's relations are undirected (the default storage is a NetworkX
`Graph`); an edge's `source` → `target` is the order the storage reports it in, which is
what "outgoing"/"incoming" refer to in these tools.
"""

from __future__ import annotations

import logging
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.storage.row_versions import version_sql

log = logging.getLogger("rag_worker.graph")

SEP = "<SEP>"
UNKNOWN_TYPE = "unknown"
DEFAULT_EDGE_TYPE = "related"


def split_multi(value: Any) -> list[str]:
    """The parts of a LightRAG multi-value field (joined with <SEP>), stripped and de-duplicated."""
    if value is None:
        return []
    parts: list[str] = []
    for part in str(value).split(SEP):
        part = part.strip()
        if part and part not in parts:
            parts.append(part)
    return parts


def split_keywords(value: Any) -> list[str]:
    """An edge's keywords: LightRAG joins them with commas (and <SEP> after merges)."""
    keywords: list[str] = []
    seen: set[str] = set()
    for chunk in split_multi(value):
        for word in chunk.split(","):
            word = word.strip()
            if word and word.casefold() not in seen:
                seen.add(word.casefold())
                keywords.append(word)
    return keywords


def folded(values: Any) -> frozenset[str]:
    """Names to compare without regard to case (types, keywords) from an argument list."""
    return frozenset(str(value).strip().casefold() for value in values or [])


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (with an ellipsis when cut)."""
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def readable(value: Any) -> str:
    """A multi-value text field for people: its parts joined by a space."""
    return " ".join(split_multi(value))


def number_or_none(value: Any) -> float | None:
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


@dataclass(frozen=True)
class Edge:
    """One relation as the storage reports it."""

    source: str
    target: str
    attrs: dict[str, Any]
    keywords: tuple[str, ...]
    weight: float | None

    @property
    def type(self) -> str:
        """The relation's primary keyword (LightRAG lists the most important one first)."""
        return self.keywords[0] if self.keywords else DEFAULT_EDGE_TYPE

    @property
    def id(self) -> str:
        return f"{self.source}|{self.target}"

    def other(self, name: str) -> str:
        return self.target if self.source == name else self.source

    def has_keyword(self, wanted: frozenset[str]) -> bool:
        return any(keyword.casefold() in wanted for keyword in self.keywords)


@dataclass
class GraphSnapshot:
    """Nodes by name, edges in storage order, and each node's incident edges."""

    nodes: dict[str, dict[str, Any]]
    edges: list[Edge]
    adjacency: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, raw_nodes: Iterable[dict[str, Any]], raw_edges: Iterable[dict[str, Any]]) -> GraphSnapshot:
        """From a storage's `get_all_nodes()` / `get_all_edges()` (in their order)."""
        nodes: dict[str, dict[str, Any]] = {}
        for raw in raw_nodes:
            name, attrs = node_entry(raw)
            if name is not None:
                nodes[name] = attrs
        return cls.assemble(nodes, [edge for raw in raw_edges if (edge := edge_entry(raw)) is not None])

    @classmethod
    def assemble(cls, nodes: dict[str, dict[str, Any]], edges: Iterable[Edge]) -> GraphSnapshot:
        """Index stored nodes and edges: an undirected relation reported twice is kept once (the
        first), an edge's end that is no stored node is added as a bare one."""
        nodes = dict(nodes)
        kept: list[Edge] = []
        adjacency: dict[str, list[int]] = {name: [] for name in nodes}
        seen: set[tuple[str, str]] = set()
        for edge in edges:
            source, target = edge.source, edge.target
            pair = (source, target) if source <= target else (target, source)
            if pair in seen:
                continue
            seen.add(pair)
            for end in (source, target):
                if end not in nodes:
                    nodes[end] = {"entity_id": end}
                    adjacency[end] = []
            adjacency[source].append(len(kept))
            if target != source:
                adjacency[target].append(len(kept))
            kept.append(edge)
        return cls(nodes, kept, adjacency)

    def __len__(self) -> int:
        return len(self.nodes)

    def degree(self, name: str) -> int:
        return len(self.adjacency.get(name, ()))

    def node_type(self, name: str) -> str:
        return entity_type(self.nodes.get(name, {}))

    def incident(self, name: str) -> list[Edge]:
        return [self.edges[index] for index in self.adjacency.get(name, ())]

    def resolve(self, name: str) -> str | None:
        """The stored name for `name`: exact, else the one case-insensitive match."""
        if name in self.nodes:
            return name
        folded = name.strip().casefold()
        matches = [stored for stored in self.nodes if stored.casefold() == folded]
        return matches[0] if len(matches) == 1 else None

    def types(self) -> set[str]:
        return {entity_type(attrs).casefold() for attrs in self.nodes.values()}


def node_entry(raw: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """A stored node's name and attributes (as `get_all_nodes()` reports it)."""
    attrs = dict(raw)
    name = attrs.pop("id", None) or attrs.get("entity_id")
    return (None if name is None else str(name)), attrs


def edge_entry(raw: dict[str, Any]) -> Edge | None:
    """A stored relation (as `get_all_edges()` reports it); None without both ends."""
    attrs = dict(raw)
    source, target = str(attrs.pop("source", "")), str(attrs.pop("target", ""))
    if not source or not target:
        return None
    return Edge(source, target, attrs, tuple(split_keywords(attrs.get("keywords"))), number_or_none(attrs.get("weight")))


def entity_type(attrs: dict[str, Any]) -> str:
    parts = split_multi(attrs.get("entity_type"))
    return parts[0] if parts else UNKNOWN_TYPE


@dataclass
class _Kept:
    """A snapshot of LightRAG's PostgreSQL table graph, with what a refresh compares against."""

    storage: weakref.ref[Any]
    version: str
    snapshot: GraphSnapshot
    used: float  # monotonic: when a graph call last used it
    node_versions: dict[str, int]  # each stored node's row version (`xmin`)
    edge_versions: dict[tuple[str, str], int]  # each stored edge's, by (src_id, tgt_id)
    edges: dict[tuple[str, str], Edge]  # the stored edges, a relation stored both ways included


#: Snapshots kept, by graph storage (its workspace), most recent last.  At most KEPT_SNAPSHOTS,
#: none unused for KEEP_UNUSED_S: a snapshot holds about 65 MB per 1,000 documents, for the burst
#: of graph calls a conversation makes.
_KEPT: OrderedDict[int, _Kept] = OrderedDict()
KEPT_SNAPSHOTS = 4
KEEP_UNUSED_S = 300.0
_OF_THE_GRAPH = "workspace = $1 AND namespace = $2"
_WHERE = f"WHERE {_OF_THE_GRAPH}"
_VERSION_SQL = version_sql(("lightrag_graph_nodes", _OF_THE_GRAPH), ("lightrag_graph_edges", _OF_THE_GRAPH))
_ROW_VERSION = "xmin::text::bigint AS row_version"
_NODE_VERSIONS = f"SELECT id, {_ROW_VERSION} FROM lightrag_graph_nodes {_WHERE}"
_EDGE_VERSIONS = f"SELECT src_id, tgt_id, {_ROW_VERSION} FROM lightrag_graph_edges {_WHERE}"
_NODES = f"SELECT id, {_ROW_VERSION}, properties FROM lightrag_graph_nodes {_WHERE}"
_EDGES = f"SELECT src_id, tgt_id, {_ROW_VERSION}, properties FROM lightrag_graph_edges {_WHERE}"
_NODES_NAMED = f"{_NODES} AND id = ANY($3::text[])"
_EDGES_NAMED = (
    f"SELECT src_id, tgt_id, e.{_ROW_VERSION}, properties FROM lightrag_graph_edges e "
    f"JOIN unnest($3::text[], $4::text[]) AS wanted(src_id, tgt_id) USING (src_id, tgt_id) {_WHERE}"
)


async def graph_version(storage: Any) -> str | None:
    """A value that changes whenever the graph does, or None where no cheap one exists."""
    if type(storage).__name__ != "PGTableGraphStorage":
        return None
    rows = await storage._fetch(_VERSION_SQL, storage.workspace, storage.namespace)
    return str(rows[0]["version"]) if rows else None


async def read_snapshot(ctx: Any, rag: Any) -> GraphSnapshot:
    """The whole graph of `rag` (the caller's workspace), indexed off the event loop.

    On the PostgreSQL table graph: the kept snapshot while the graph has not changed since it
    was read; after a change, the kept one with the rows whose version changed read again (the
    rest is not read nor decoded)."""
    storage = rag.chunk_entity_relation_graph
    try:
        version = await graph_version(storage)
        if version is None:
            raw_nodes = await storage.get_all_nodes()
            raw_edges = await storage.get_all_edges()
            built: GraphSnapshot = await ctx.run_cpu(GraphSnapshot.build, raw_nodes, raw_edges)
            return built
        kept = _KEPT.get(id(storage))
        if kept is not None and kept.storage() is not storage:
            kept = None  # a new storage object at the same address
        if kept is None or kept.version != version:
            kept = await _refreshed(ctx, storage, version, kept)
    except RagError:
        raise
    except Exception:
        log.exception("reading the knowledge graph failed")
        raise RagError(ErrorCode.GRAPH_ACCESS_ERROR) from None
    kept.used = time.monotonic()
    _KEPT[id(storage)] = kept
    _KEPT.move_to_end(id(storage))
    while len(_KEPT) > KEPT_SNAPSHOTS:
        _KEPT.popitem(last=False)
    return kept.snapshot


async def _refreshed(ctx: Any, storage: Any, version: str, kept: _Kept | None) -> _Kept:
    """The snapshot at `version` (read after it: a later write only costs one more refresh)."""
    where = (storage.workspace, storage.namespace)
    if kept is None:
        node_rows, edge_rows = await storage._fetch(_NODES, *where), await storage._fetch(_EDGES, *where)
        node_versions = {row["id"]: row["row_version"] for row in node_rows}
        edge_versions = {(row["src_id"], row["tgt_id"]): row["row_version"] for row in edge_rows}
    else:
        node_versions = {row["id"]: row["row_version"] for row in await storage._fetch(_NODE_VERSIONS, *where)}
        edge_versions = {
            (row["src_id"], row["tgt_id"]): row["row_version"] for row in await storage._fetch(_EDGE_VERSIONS, *where)
        }
        nodes_changed = [name for name, row in node_versions.items() if kept.node_versions.get(name) != row]
        edges_changed = [pair for pair, row in edge_versions.items() if kept.edge_versions.get(pair) != row]
        node_rows = await storage._fetch(_NODES_NAMED, *where, nodes_changed) if nodes_changed else []
        edge_rows = (
            await storage._fetch(_EDGES_NAMED, *where, [pair[0] for pair in edges_changed], [pair[1] for pair in edges_changed])
            if edges_changed
            else []
        )
    refreshed: _Kept = await ctx.run_cpu(_patched, storage, version, kept, node_versions, edge_versions, node_rows, edge_rows)
    return refreshed


def _patched(
    storage: Any,
    version: str,
    kept: _Kept | None,
    node_versions: dict[str, int],
    edge_versions: dict[tuple[str, str], int],
    node_rows: list[dict[str, Any]],
    edge_rows: list[dict[str, Any]],
) -> _Kept:
    """`kept` (or nothing) with the rows read again, in the order a whole read gives: nodes by
    name, edges by (source, target).  A row changed and then deleted before it was read is gone."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str], Edge] = {}
    if kept is not None:
        unchanged = {name for name, row in kept.node_versions.items() if node_versions.get(name) == row}
        nodes = {name: attrs for name, attrs in kept.snapshot.nodes.items() if name in unchanged}  # bare ends are not stored
        edges = {pair: edge for pair, edge in kept.edges.items() if edge_versions.get(pair) == kept.edge_versions[pair]}
    for row in node_rows:
        name, attrs = node_entry(storage._node_output(row["id"], row["properties"]))
        if name is not None:
            nodes[name] = attrs
            node_versions[row["id"]] = row["row_version"]
    for row in edge_rows:
        raw = {**storage._json_loads(row["properties"]), "source": row["src_id"], "target": row["tgt_id"]}
        if (edge := edge_entry(raw)) is not None:
            edges[(row["src_id"], row["tgt_id"])] = edge
            edge_versions[(row["src_id"], row["tgt_id"])] = row["row_version"]
    node_versions = {name: row for name, row in node_versions.items() if name in nodes}
    edge_versions = {pair: row for pair, row in edge_versions.items() if pair in edges}
    edges = dict(sorted(edges.items()))
    snapshot = GraphSnapshot.assemble(dict(sorted(nodes.items())), edges.values())
    return _Kept(weakref.ref(storage), version, snapshot, time.monotonic(), node_versions, edge_versions, edges)


def forget_unused(unused_for: float = KEEP_UNUSED_S) -> int:
    """Let go of the snapshots no graph call used for `unused_for` seconds; how many."""
    since = time.monotonic() - unused_for
    stale = [key for key, kept in _KEPT.items() if kept.used <= since]
    for key in stale:
        del _KEPT[key]
    return len(stale)
