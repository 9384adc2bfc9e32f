"""One consistent read of a workspace's knowledge graph, indexed for the graph tools.

LightRAG's graph storages all answer `get_all_nodes()` / `get_all_edges()`; reading both once
per call gives every tool the same picture (degrees, edge orientation, types) whatever the
backend.  Building the indexes is CPU work and runs in a worker thread.

On LightRAG's PostgreSQL table graph (the embedded engine's) that read is the cost of every
graph tool: 0.65-1.9 s at 1,000 documents, most of it decoding each row's JSON.  There a
snapshot is kept (the last few workspaces') with the graph's version (`row_versions`: one
aggregate query over the two tables), and reused while the version is the same.  Entity search
reads there only the entities and their relation counts (`read_entities`), and a graph export
starts from every entity's type and relation count (`read_part`) and reads the relations its
selection asks for (`select_over`); an export of an unchanged graph starts from a copy of the
part the last one read (`keep_part`).  Whole snapshots and kept parts are read-only.

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
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

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

    @classmethod
    def read(cls, raw: dict[str, Any]) -> Edge | None:
        """A relation as a storage reports it (`source`, `target` and its properties); None without both ends."""
        attrs = dict(raw)
        source, target = str(attrs.pop("source", "")), str(attrs.pop("target", ""))
        if not source or not target:
            return None
        return cls(source, target, attrs, tuple(split_keywords(attrs.get("keywords"))), number_or_none(attrs.get("weight")))


class Entities(Protocol):
    """What entity search reads: entities by name, each one's type and number of relations, and
    the stored name a requested one stands for."""

    nodes: dict[str, dict[str, Any]]

    def degree(self, name: str) -> int: ...

    def node_type(self, name: str) -> str: ...

    def resolve(self, name: str) -> str | None: ...


def resolve_among(names: Collection[str], name: str) -> str | None:
    """The stored name for `name` among `names`: exact, else the one case-insensitive match."""
    if name in names:
        return name
    folded = name.strip().casefold()
    matches = [stored for stored in names if stored.casefold() == folded]
    return matches[0] if len(matches) == 1 else None


class _Named:
    """What entities by name (`self.nodes`) answer, with or without their relations."""

    nodes: dict[str, dict[str, Any]]

    def node_type(self, name: str) -> str:
        return entity_type(self.nodes.get(name, {}))

    def resolve(self, name: str) -> str | None:
        return resolve_among(self.nodes, name)

    def types(self) -> set[str]:
        return {entity_type(attrs).casefold() for attrs in self.nodes.values()}


@dataclass
class EntityDegrees(_Named):
    """Entities by name with their type, description and relation count, and the number of
    relations, without the relations (`read_entities`)."""

    nodes: dict[str, dict[str, Any]]
    degrees: dict[str, int]
    relations: int

    @classmethod
    def build(cls, rows: Iterable[Any], degrees: Iterable[Any], relations: int) -> EntityDegrees:
        nodes = {
            str(row["id"]): {"entity_id": str(row["id"])} | {key: row[key] for key in _READ if row[key] is not None}
            for row in rows
        }
        return cls(nodes, _degrees(degrees), relations)

    def degree(self, name: str) -> int:
        return self.degrees.get(name, 0)

    def part(self) -> GraphSnapshot:
        """A part of the graph to select from (`select_over`), holding no relation yet."""
        nodes = dict(self.nodes)
        return GraphSnapshot(nodes, [], {}, self.degrees, held=set(), totals=(len(nodes), self.relations))


def _degrees(rows: Iterable[Any]) -> dict[str, int]:
    return {str(row["id"]): int(row["degree"]) for row in rows}


def _nodes_by_name(raw_nodes: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    for raw in raw_nodes:
        attrs = dict(raw)
        name = attrs.pop("id", None) or attrs.get("entity_id")
        if name is not None:
            nodes[str(name)] = attrs
    return nodes


class MissingRelations(Exception):
    """A selection over a part of the graph (`read_part`) needs relations the part does not hold
    yet: every relation of `names`, or (`among`) those between them."""

    def __init__(self, names: list[str], among: bool) -> None:
        super().__init__(f"{len(names)} entities' relations{' among them' if among else ''}")
        self.names, self.among = names, among


@dataclass
class GraphSnapshot(_Named):
    """Nodes by name, edges in storage order, and each node's incident edges.

    A part of the graph also has each node's relation count in the whole graph (`degrees`).  A part
    to select from (`read_part`) holds every entity (with its type only, until a selection chose
    it), the whole graph's sizes (`totals`) and the relations read so far (their keywords and
    weight only): all those of the entities in `held`, and those between the entities of each set
    in `held_among`.  Its incident edges are in storage order too, so a selection over it is the
    one over the whole."""

    nodes: dict[str, dict[str, Any]]
    edges: list[Edge]
    adjacency: dict[str, list[int]] = field(default_factory=dict)
    degrees: dict[str, int] | None = None
    held: set[str] | None = None
    held_among: list[frozenset[str]] = field(default_factory=list)
    totals: tuple[int, int] | None = None
    version: str | None = None  # a part's: the graph's version when it was read (`keep_part`)
    _pairs: set[tuple[str, str]] = field(default_factory=set, repr=False)

    @classmethod
    def build(cls, raw_nodes: Iterable[dict[str, Any]], raw_edges: Iterable[dict[str, Any]]) -> GraphSnapshot:
        nodes = _nodes_by_name(raw_nodes)
        snapshot = cls(nodes, [], {name: [] for name in nodes})
        snapshot.add_edges(raw_edges)
        return snapshot

    def add_edges(self, raw_edges: Iterable[dict[str, Any]]) -> set[str]:
        """Index the relations not held yet; the entities that got one."""
        touched: set[str] = set()
        for raw in raw_edges:
            edge = Edge.read(raw)
            if edge is None:
                continue
            source, target = edge.source, edge.target
            pair = (source, target) if source <= target else (target, source)
            if pair in self._pairs:  # an undirected relation reported twice by a directed backend
                continue
            self._pairs.add(pair)
            for end in (source, target):
                if end not in self.nodes:
                    self.nodes[end] = {"entity_id": end}
                if end not in self.adjacency:
                    self.adjacency[end] = []
            index = len(self.edges)
            self.edges.append(edge)
            self.adjacency[source].append(index)
            touched.add(source)
            if target != source:
                self.adjacency[target].append(index)
                touched.add(target)
        return touched

    def hold(self, links: Iterable[dict[str, Any]], missing: MissingRelations) -> None:
        """Add the relations read for `missing` (ends, keywords, weight) to this part."""
        raw_edges = ({key: value for key, value in link.items() if value is not None} for link in links)
        for name in self.add_edges(raw_edges):
            self.adjacency[name].sort(key=lambda index: (self.edges[index].source, self.edges[index].target))
        if missing.among:
            self.held_among.append(frozenset(missing.names))
        elif self.held is not None:
            self.held.update(missing.names)

    def copy(self) -> GraphSnapshot:
        """This part with containers of its own: a selection over it adds relations and properties."""
        return replace(
            self,
            nodes=dict(self.nodes),
            edges=list(self.edges),
            adjacency={name: list(indices) for name, indices in self.adjacency.items()},
            held=None if self.held is None else set(self.held),
            held_among=list(self.held_among),
            _pairs=set(self._pairs),
        )

    def need_relations(self, names: Iterable[str], among: bool = False) -> None:
        """MissingRelations unless every relation of `names` (`among`: between them) is held."""
        if self.held is None:
            return
        wanted = list(names)
        missing = [name for name in wanted if name not in self.held]
        if not missing or (among and any(held >= set(wanted) for held in self.held_among)):
            return
        raise MissingRelations(wanted if among else missing, among)

    def __len__(self) -> int:
        return len(self.nodes)

    def size(self) -> tuple[int, int]:
        """The whole graph's numbers of entities and relations."""
        return self.totals or (len(self.nodes), len(self.edges))

    def degree(self, name: str) -> int:
        if self.degrees is not None:
            return self.degrees.get(name, 0)
        return len(self.adjacency.get(name, ()))

    def incident(self, name: str) -> list[Edge]:
        return [self.edges[index] for index in self.adjacency.get(name, ())]


def entity_type(attrs: dict[str, Any]) -> str:
    parts = split_multi(attrs.get("entity_type"))
    return parts[0] if parts else UNKNOWN_TYPE


#: What was read of a graph, by graph storage (its workspace) and kind ("graph": a `GraphSnapshot`,
#: "entities": an `EntityDegrees`, "part": the part of the graph an export read), most recent
#: last: (storage, version, what was read, when last used).  At most KEPT_SNAPSHOTS, none unused
#: for KEEP_UNUSED_S: a whole snapshot holds about 65 MB per 1,000 documents, for the burst of
#: graph calls a conversation makes.
_KEPT: OrderedDict[tuple[int, str], tuple[weakref.ref[Any], str, Any, float]] = OrderedDict()
KEPT_SNAPSHOTS = 6
KEEP_UNUSED_S = 300.0
_VERSION_SQL = version_sql(
    ("lightrag_graph_nodes", "workspace = $1 AND namespace = $2"),
    ("lightrag_graph_edges", "workspace = $1 AND namespace = $2"),
)


def _degrees_sql(among: str = "") -> str:
    """Each entity's number of relations, as `GraphSnapshot.degree` counts them (LightRAG keeps one
    row per relation, a self-relation counted once); `among` restricts the ends (`{end}` = ANY($3))."""
    where = "workspace = $1 AND namespace = $2"
    return (
        f"SELECT id, count(*) AS degree FROM ("
        f"SELECT src_id AS id FROM lightrag_graph_edges WHERE {where}{among.format(end='src_id')} UNION ALL "
        f"SELECT tgt_id FROM lightrag_graph_edges WHERE {where}{among.format(end='tgt_id')} AND tgt_id <> src_id"
        f") ends GROUP BY id"
    )


_DEGREES_SQL = _degrees_sql()


#: A walk whose entities to expand hold more relations than this walks over a part of the graph
#: that reads their relations' keywords and weight only (`read_part`): the relations around an
#: entity, read with all their properties (chunk ids, file names), cost more than the whole
#: graph's read past this (at 2,000 documents two hops from an entity every report names are
#: 38,000 of the 56,000 relations, read in 1.0 s against 0.9 s whole).
PART_MOST_EDGES = 5_000
_NODES_NAMED_SQL = "SELECT id, properties FROM lightrag_graph_nodes WHERE workspace = $1 AND namespace = $2 AND id = ANY($3)"
_EDGES_OF_SQL = (
    "SELECT src_id, tgt_id, properties FROM lightrag_graph_edges "
    "WHERE workspace = $1 AND namespace = $2 AND (src_id = ANY($3) OR tgt_id = ANY($3))"
)
_DEGREES_OF_SQL = _degrees_sql(" AND {end} = ANY($3)")
#: What a selection reads of a relation until it chose it: its ends, keywords and weight.
_LINKS_SQL = (
    "SELECT src_id AS source, tgt_id AS target, properties->>'keywords' AS keywords, properties->>'weight' AS weight "
    "FROM lightrag_graph_edges WHERE workspace = $1 AND namespace = $2 AND "
)
_LINKS_OF_SQL = _LINKS_SQL + "(src_id = ANY($3) OR tgt_id = ANY($3))"
_LINKS_AMONG_SQL = _LINKS_SQL + "src_id = ANY($3) AND tgt_id = ANY($3)"
_EDGES_NAMED_SQL = (
    "SELECT e.src_id, e.tgt_id, e.properties FROM unnest($3::text[], $4::text[]) AS named(src_id, tgt_id) "
    "JOIN lightrag_graph_edges e ON e.workspace = $1 AND e.namespace = $2 AND e.src_id = named.src_id AND e.tgt_id = named.tgt_id"
)
#: What is read of every entity: its type and description (the rest, most of all the chunk ids and
#: file names, only for the entities shown).
_READ = ("entity_type", "description")
_ENTITIES_SQL = (
    f"SELECT id, {', '.join(f'properties->>{key!r} AS {key}' for key in _READ)} "
    "FROM lightrag_graph_nodes WHERE workspace = $1 AND namespace = $2"
)
_NAMES_SQL = "SELECT id FROM lightrag_graph_nodes WHERE workspace = $1 AND namespace = $2"
_RELATIONS_SQL = "SELECT count(*) AS relations FROM lightrag_graph_edges WHERE workspace = $1 AND namespace = $2"


def _table_graph(storage: Any) -> bool:
    """LightRAG's PostgreSQL table graph (the embedded engine's): it answers version, degree and
    neighbourhood queries."""
    return type(storage).__name__ == "PGTableGraphStorage"


async def graph_version(storage: Any) -> str | None:
    """A value that changes whenever the graph does, or None where no cheap one exists."""
    if not _table_graph(storage):
        return None
    rows = await storage._fetch(_VERSION_SQL, storage.workspace, storage.namespace)
    return str(rows[0]["version"]) if rows else None


async def read_snapshot(ctx: Any, rag: Any) -> GraphSnapshot:
    """The whole graph of `rag` (the caller's workspace), indexed off the event loop; the kept
    snapshot when the graph has not changed since it was read."""
    storage = rag.chunk_entity_relation_graph
    with _graph_access():
        version = await graph_version(storage)
        kept = _kept(storage, "graph", version)
        if kept is not None:
            return cast(GraphSnapshot, kept)
        raw_nodes = await storage.get_all_nodes()
        raw_edges = await storage.get_all_edges()
    snapshot: GraphSnapshot = await ctx.run_cpu(GraphSnapshot.build, raw_nodes, raw_edges)
    _keep(storage, "graph", version, snapshot)
    return snapshot


async def read_entities(ctx: Any, rag: Any) -> EntityDegrees | GraphSnapshot:
    """What entity search reads of `rag`'s graph.  On LightRAG's PostgreSQL table graph: each
    entity's type and description and, counted by the engine,
    its number of relations (`entity_properties` reads the rest for the entities shown).  The
    relations are most of a whole read (at 10,000 documents 224,000 of them against 38,000
    entities: 4.5-6 s after each indexed document), and the other properties most of the
    entities' (14 of 19 MB at 5,000 documents, 10 MB of chunk ids and file names).  Elsewhere the
    whole snapshot."""
    storage = rag.chunk_entity_relation_graph
    if not _table_graph(storage):
        return await read_snapshot(ctx, rag)
    with _graph_access():
        version = await graph_version(storage)
    return await _entities_at(ctx, storage, version)


async def _entities_at(ctx: Any, storage: Any, version: str | None) -> EntityDegrees:
    kept = _kept(storage, "entities", version)
    if kept is not None:
        return cast(EntityDegrees, kept)
    where = (storage.workspace, storage.namespace)
    with _graph_access():
        rows = await storage._fetch(_ENTITIES_SQL, *where)
        degrees = await storage._fetch(_DEGREES_SQL, *where)
        relations = await storage._fetch(_RELATIONS_SQL, *where)
    entities: EntityDegrees = await ctx.run_cpu(EntityDegrees.build, rows, degrees, int(relations[0]["relations"]))
    _keep(storage, "entities", version, entities)
    return entities


def reads_parts(rag: Any) -> bool:
    """Whether `rag`'s graph is read in parts (`read_part`, `read_neighbourhood`, `resolve_name`),
    not only whole."""
    return _table_graph(rag.chunk_entity_relation_graph)


async def resolve_name(ctx: Any, rag: Any, name: str) -> str | None:
    """The stored name of the entity `name` stands for (`resolve_among`), from the entities' names
    alone (`reads_parts`).  At 5,000 documents a name asked in another case read every entity's
    type and description after each change to the graph: 500-630 ms."""
    storage = rag.chunk_entity_relation_graph
    with _graph_access():
        rows = await storage._fetch(_NAMES_SQL, storage.workspace, storage.namespace)

    def resolve() -> str | None:  # off the event loop: 29,000 names at 5,000 documents
        return resolve_among({str(row["id"]) for row in rows}, name)

    return cast(str | None, await ctx.run_cpu(resolve))


async def entity_properties(rag: Any, entities: Entities, names: list[str]) -> dict[str, dict[str, Any]]:
    """All the stored properties of the entities `names` (as `entities` holds them, where it holds them all)."""
    if not isinstance(entities, EntityDegrees) or not names:
        return {name: entities.nodes[name] for name in names}
    return await _properties(rag.chunk_entity_relation_graph, names)


async def _properties(storage: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """The table graph's entities `names` by name, with all their properties."""
    with _graph_access():
        rows = await storage._fetch(_NODES_NAMED_SQL, storage.workspace, storage.namespace, names)
    return _nodes_by_name(storage._node_output(row["id"], row["properties"]) for row in rows)


async def read_neighbourhood(ctx: Any, rag: Any, name: str, depth: int, most_edges: int = PART_MOST_EDGES) -> GraphSnapshot | None:
    """The graph around the entity `name` for a walk of `depth` hops: on LightRAG's PostgreSQL table
    graph, the relations of each entity fewer than `depth` hops away, the entities they reach, and
    each one's relation count in the whole graph, read with a few queries instead of the whole
    graph (4.5-6 s after each indexed document at 10,000 documents); a walk from `name` finds over
    it what it finds over the whole graph.  Where the entities to expand hold more than
    `most_edges` relations (two hops from an entity every document names reach most of the
    graph), a part to walk over with `run_selection` (`read_part`).  None where the graph is
    another storage or has no entity named exactly `name`."""
    storage = rag.chunk_entity_relation_graph
    if not _table_graph(storage):
        return None
    where = (storage.workspace, storage.namespace)
    with _graph_access():
        if not await storage._fetch(_NODES_NAMED_SQL, *where, [name]):
            return None
        reached, frontier, degrees, raw_edges = {name}, [name], {}, {}
        for _ in range(depth):
            degrees.update(_degrees(await storage._fetch(_DEGREES_OF_SQL, *where, frontier)))
            expand = sum(degrees.get(entity, 0) for entity in frontier)
            if expand > most_edges:
                return await read_part(ctx, rag)
            for row in await storage._fetch(_EDGES_OF_SQL, *where, frontier):
                raw_edges[(row["src_id"], row["tgt_id"])] = row
            frontier = list(dict.fromkeys(end for pair in raw_edges for end in pair if end not in reached))
            reached.update(frontier)
            if not frontier:
                break
        names = list(reached)
        unknown = [entity for entity in names if entity not in degrees]
        if unknown:
            degrees.update(_degrees(await storage._fetch(_DEGREES_OF_SQL, *where, unknown)))
        raw_nodes = await storage._fetch(_NODES_NAMED_SQL, *where, names)
    nodes = [storage._node_output(row["id"], row["properties"]) for row in raw_nodes]
    part: GraphSnapshot = await ctx.run_cpu(GraphSnapshot.build, nodes, _edges(storage, raw_edges.values()))
    part.degrees = degrees
    return part


async def read_part(ctx: Any, rag: Any) -> GraphSnapshot:
    """What a graph export or a wide walk selects from.  On LightRAG's PostgreSQL table graph: a
    part holding every entity with its type and relation count and no relation (`run_selection`
    reads what the selection asks for), instead of the whole graph (3-4 s after each indexed
    document at 5,000 documents); while the graph is unchanged, a copy of the part the last export
    read (`keep_part`), with the relations and properties it read.  Elsewhere the whole snapshot."""
    storage = rag.chunk_entity_relation_graph
    if not _table_graph(storage):
        return await read_snapshot(ctx, rag)
    with _graph_access():
        version = await graph_version(storage)
    kept = _kept(storage, "part", version)
    if kept is not None:
        return cast(GraphSnapshot, await ctx.run_cpu(kept.copy))
    part = (await _entities_at(ctx, storage, version)).part()
    part.version = version
    return part


def keep_part(rag: Any, graph: GraphSnapshot) -> None:
    """Keep the part an export has finished with (`read_part`) for the next export of the same
    graph: at 5,000 documents an unchanged graph's export read its part's relations again, 450-670 ms."""
    if graph.held is not None and graph.version is not None:
        _keep(rag.chunk_entity_relation_graph, "part", graph.version, graph)


class Chosen(Protocol):
    nodes: list[str]
    edges: list[Edge]


ChosenT = TypeVar("ChosenT", bound=Chosen)
T = TypeVar("T")


async def select_over(ctx: Any, rag: Any, graph: GraphSnapshot, select: Callable[..., ChosenT], *args: Any) -> ChosenT:
    """`run_selection`, then over a part the chosen entities' and relations' properties read."""
    chosen = await run_selection(ctx, rag, graph, select, *args)
    chosen.edges = await chosen_properties(rag, graph, chosen.nodes, chosen.edges)
    return chosen


async def run_selection(ctx: Any, rag: Any, graph: GraphSnapshot, select: Callable[..., T], *args: Any) -> T:
    """`select(graph, *args)` run in a worker thread.  Over a part (`read_part`): run again with the
    relations each run asked for (`MissingRelations`) read into the part (their keywords and
    weight), however many: reading the whole graph instead, as this did once a level's relations
    were over half of all, took 2.9-3.0 s for two hops from an entity every report names at 5,000
    documents, against 1.8 s, and kept 300 MB more in the worker."""
    storage = rag.chunk_entity_relation_graph
    where = (storage.workspace, storage.namespace)
    while True:
        try:
            return cast(T, await ctx.run_cpu(select, graph, *args))
        except MissingRelations as missing:
            with _graph_access():
                rows = await storage._fetch(_LINKS_AMONG_SQL if missing.among else _LINKS_OF_SQL, *where, missing.names)
            await ctx.run_cpu(graph.hold, rows, missing)


async def chosen_properties(rag: Any, graph: GraphSnapshot, names: list[str], edges: list[Edge]) -> list[Edge]:
    """Over a part: the stored properties of the entities `names` (into the part) and `edges` with
    theirs, in order.  Elsewhere `edges`, which have them."""
    if graph.held is None:
        return edges
    storage = rag.chunk_entity_relation_graph
    graph.nodes.update(await _properties(storage, names) if names else {})
    with _graph_access():
        ends = ([edge.source for edge in edges], [edge.target for edge in edges])
        rows = await storage._fetch(_EDGES_NAMED_SQL, storage.workspace, storage.namespace, *ends) if edges else []
    read = {(edge.source, edge.target): edge for edge in map(Edge.read, _edges(storage, rows)) if edge is not None}
    return [read.get((edge.source, edge.target), edge) for edge in edges]


def _edges(storage: Any, rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Relation rows of the table graph as its `get_all_edges` reports them."""
    return [{**storage._json_loads(row["properties"]), "source": row["src_id"], "target": row["tgt_id"]} for row in rows]


@contextmanager
def _graph_access() -> Iterator[None]:
    """A failed read of the graph storage is GRAPH_ACCESS_ERROR (logged with its cause)."""
    try:
        yield
    except RagError:
        raise
    except Exception:
        log.exception("reading the knowledge graph failed")
        raise RagError(ErrorCode.GRAPH_ACCESS_ERROR) from None


def _kept(storage: Any, kind: str, version: str | None) -> Any:
    """What was kept of `storage`'s graph as `kind` when it is still at `version` (marked used), else None."""
    key = (id(storage), kind)
    kept = _KEPT.get(key)
    if version is None or kept is None or kept[0]() is not storage or kept[1] != version:
        return None
    _KEPT[key] = (*kept[:3], time.monotonic())
    _KEPT.move_to_end(key)
    return kept[2]


def _keep(storage: Any, kind: str, version: str | None, value: Any) -> None:
    if version is None:
        return
    key = (id(storage), kind)
    _KEPT[key] = (weakref.ref(storage), version, value, time.monotonic())
    _KEPT.move_to_end(key)
    while len(_KEPT) > KEPT_SNAPSHOTS:
        _KEPT.popitem(last=False)


def forget_unused(unused_for: float = KEEP_UNUSED_S) -> int:
    """Let go of the snapshots no graph call used for `unused_for` seconds; how many."""
    since = time.monotonic() - unused_for
    stale = [key for key, kept in _KEPT.items() if kept[3] <= since]
    for key in stale:
        del _KEPT[key]
    return len(stale)
