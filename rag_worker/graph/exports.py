"""A selected subgraph as JSON records, GraphML, GEXF, a Cypher load script or a Mermaid diagram.

Everything here is pure CPU work on a `Selection` and runs in a worker thread.

* GraphML and GEXF are written by NetworkX from attribute values normalised per key (a
  key holds one type across the file: numbers stay numbers, anything else becomes text with
  characters XML cannot carry removed); names GEXF reserves are prefixed `prop_`.
* Cypher: one statement per line; entities are `:Entity` nodes keyed by `name`, with a second
  label from their type; a relation's type comes from its primary keyword.  Labels, types
  and keys are sanitised, strings are single-quoted with backslash escapes.
* Mermaid: node ids `n0, n1, ...`; labels and edge texts escaped with Mermaid's entity codes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import networkx as nx
import orjson

from rag_worker.graph.browse import Selection
from rag_worker.graph.snapshot import Edge, GraphSnapshot

EXTENSIONS = {"json": "json", "graphml": "graphml", "gexf": "gexf", "cypher": "cypher", "mermaid": "mmd"}
MERMAID_LABEL_CHARS = 60
MERMAID_EDGE_CHARS = 30
MERMAID_MAX_TEXT = 50_000  # mermaid's default maxTextSize: larger diagrams are refused by renderers
MERMAID_MAX_EDGES = 500  # mermaid's default maxEdges
MERMAID_PALETTE = (
    "fill:#dbeafe,stroke:#2563eb",
    "fill:#dcfce7,stroke:#16a34a",
    "fill:#fef9c3,stroke:#ca8a04",
    "fill:#fce7f3,stroke:#db2777",
    "fill:#ede9fe,stroke:#7c3aed",
    "fill:#ffedd5,stroke:#ea580c",
    "fill:#cffafe,stroke:#0891b2",
    "fill:#f1f5f9,stroke:#475569",
)
# Attribute names NetworkX's GEXF writer gives a meaning of its own.
RESERVED_NODE_KEYS = {"id", "label", "pid", "start", "end", "spells", "slices", "viz", "parents"}
RESERVED_EDGE_KEYS = {"id", "label", "weight", "type", "start", "end", "spells", "slices", "viz", "key"}
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'  # the files are written as UTF-8
XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ------------------------------------------------------------------------------------ records
def json_safe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return str(value)


def node_record(snapshot: GraphSnapshot, name: str, include_properties: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": name,
        "label": name,
        "type": snapshot.node_type(name),
        "degree": snapshot.degree(name),
    }
    if include_properties:
        record["properties"] = {key: json_safe(value) for key, value in snapshot.nodes[name].items()}
    return record


def edge_record(edge: Edge, include_properties: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": edge.id,
        "source": edge.source,
        "target": edge.target,
        "type": edge.type,
        "keywords": list(edge.keywords),
        "weight": edge.weight,
    }
    if include_properties:
        record["properties"] = {key: json_safe(value) for key, value in edge.attrs.items()}
    return record


def to_json(snapshot: GraphSnapshot, selection: Selection, include_properties: bool) -> str:
    payload = {
        "nodes": [node_record(snapshot, name, include_properties) for name in selection.nodes],
        "edges": [edge_record(edge, include_properties) for edge in selection.edges],
    }
    return orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()


# ----------------------------------------------------------------------------- GraphML / GEXF
def xml_text(value: Any) -> str:
    return XML_INVALID.sub("", str(value))


def _normalise(items: list[dict[str, Any]]) -> None:
    """Give each attribute key one type across all items (GraphML/GEXF declare a type per key)."""
    keys = {key for item in items for key in item}
    for key in keys:
        values = [item[key] for item in items if key in item]
        numeric = all(
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) for value in values
        )
        integral = numeric and all(isinstance(value, int) for value in values)
        for item in items:
            if key not in item:
                continue
            if item[key] is None:
                del item[key]
            elif integral:
                item[key] = int(item[key])
            elif numeric:
                item[key] = float(item[key])
            else:
                item[key] = xml_text(item[key])


def _safe_key(key: str, reserved: set[str]) -> str:
    key = xml_text(key) or "prop"
    return f"prop_{key}" if key in reserved else key


def _xml_graph(snapshot: GraphSnapshot, selection: Selection, include_properties: bool) -> nx.Graph:
    node_attrs: list[dict[str, Any]] = []
    for name in selection.nodes:
        attrs: dict[str, Any] = {}
        if include_properties:
            attrs.update({_safe_key(k, RESERVED_NODE_KEYS): v for k, v in snapshot.nodes[name].items()})
        attrs.update({"label": name, "entity_type": snapshot.node_type(name), "degree": snapshot.degree(name)})
        node_attrs.append(attrs)
    edge_attrs: list[dict[str, Any]] = []
    for edge in selection.edges:
        attrs = {}
        if include_properties:
            attrs.update({_safe_key(k, RESERVED_EDGE_KEYS): v for k, v in edge.attrs.items()})
        attrs.update(
            {
                "label": edge.type,
                "relation_type": edge.type,
                "keywords": ",".join(edge.keywords),
                "weight": edge.weight if edge.weight is not None else 1.0,
            }
        )
        edge_attrs.append(attrs)
    _normalise(node_attrs)
    _normalise(edge_attrs)
    graph = nx.Graph()
    for name, attrs in zip(selection.nodes, node_attrs, strict=True):
        graph.add_node(xml_text(name), **attrs)
    for edge, attrs in zip(selection.edges, edge_attrs, strict=True):
        graph.add_edge(xml_text(edge.source), xml_text(edge.target), **attrs)
    return graph


def to_graphml(snapshot: GraphSnapshot, selection: Selection, include_properties: bool) -> str:
    lines = nx.generate_graphml(_xml_graph(snapshot, selection, include_properties))
    return XML_DECLARATION + "\n".join(lines) + "\n"


def to_gexf(snapshot: GraphSnapshot, selection: Selection, include_properties: bool) -> str:
    lines = nx.generate_gexf(_xml_graph(snapshot, selection, include_properties))
    return XML_DECLARATION + "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------- Cypher
CYPHER_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CYPHER_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
# One translation table (a C-speed pass): the escapes above, other control characters, line
# separators and lone surrogates as \uXXXX.
CYPHER_TABLE = {code: f"\\u{code:04x}" for code in (*range(0x20), 0x2028, 0x2029, *range(0xD800, 0xE000))} | {
    ord(char): escaped for char, escaped in CYPHER_ESCAPES.items()
}


def cypher_string(text: str) -> str:
    """`text` as a Cypher single-quoted string literal."""
    return "'" + text.translate(CYPHER_TABLE) + "'"


def cypher_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return cypher_string(str(value))


def cypher_key(key: str) -> str:
    return key if CYPHER_IDENTIFIER.match(key) else "`" + key.replace("`", "``") + "`"


def _words(text: str) -> list[str]:
    return [word for word in re.split(r"[^0-9A-Za-z]+", text) if word]


def cypher_label(entity_type: str) -> str:
    """An entity type as a node label: `organization` → `Organization`, `code symbol` → `CodeSymbol`."""
    label = "".join(word[:1].upper() + word[1:] for word in _words(entity_type))
    if not label:
        return "Untyped"
    return f"T{label}" if label[0].isdigit() else label


def cypher_relationship_type(keyword: str) -> str:
    """A keyword as a relationship type: `co-occurrence` → `CO_OCCURRENCE`."""
    rel_type = "_".join(word.upper() for word in _words(keyword))
    if not rel_type:
        return "RELATED_TO"
    return f"R_{rel_type}" if rel_type[0].isdigit() else rel_type


def _assignments(variable: str, properties: dict[str, Any]) -> list[str]:
    return [
        f"{variable}.{cypher_key(key)} = {cypher_value(value)}"
        for key, value in properties.items()
        if value is not None
    ]


def to_cypher(snapshot: GraphSnapshot, selection: Selection, include_properties: bool) -> str:
    lines = [
        f"// LightRAG knowledge graph: {len(selection.nodes)} entities, {len(selection.edges)} relations",
        "CREATE CONSTRAINT lightrag_entity_name IF NOT EXISTS FOR (n:Entity) REQUIRE n.name IS UNIQUE;",
    ]
    for name in selection.nodes:
        entity_type = snapshot.node_type(name)
        properties: dict[str, Any] = {"entity_type": entity_type, "degree": snapshot.degree(name)}
        if include_properties:
            properties.update({k: v for k, v in snapshot.nodes[name].items() if k not in ("name", "entity_type")})
        sets = [f"n:{cypher_label(entity_type)}", *_assignments("n", properties)]
        lines.append(f"MERGE (n:Entity {{name: {cypher_string(name)}}}) SET {', '.join(sets)};")
    for edge in selection.edges:
        properties = {"keywords": ",".join(edge.keywords), "weight": edge.weight}
        if include_properties:
            properties.update({k: v for k, v in edge.attrs.items() if k not in properties})
        lines.append(
            f"MATCH (a:Entity {{name: {cypher_string(edge.source)}}}), (b:Entity {{name: {cypher_string(edge.target)}}}) "
            f"MERGE (a)-[r:{cypher_relationship_type(edge.type)}]->(b) SET {', '.join(_assignments('r', properties))};"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------- Mermaid
MERMAID_CODES = {
    '"': "#quot;",
    "#": "#35;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "[": "#91;",
    "]": "#93;",
    "(": "#40;",
    ")": "#41;",
    "{": "#123;",
    "}": "#125;",
    "|": "#124;",
    "`": "#96;",
    ";": "#59;",
    "\\": "#92;",
}


def mermaid_text(text: str, limit: int) -> str:
    """Text safe inside a quoted Mermaid label: one line, bounded, special characters as entity codes."""
    flat = " ".join("".join(" " if ord(c) < 0x20 or c in "\u2028\u2029" else c for c in text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return "".join(MERMAID_CODES.get(char, char) for char in flat)


def to_mermaid(snapshot: GraphSnapshot, selection: Selection, direction: str = "LR") -> str:
    ids = {name: f"n{index}" for index, name in enumerate(selection.nodes)}
    lines = [f"graph {direction if direction in ('LR', 'TD') else 'LR'}"]
    classes: dict[str, list[str]] = {}
    for name in selection.nodes:
        entity_type = snapshot.node_type(name)
        label = f"{mermaid_text(name, MERMAID_LABEL_CHARS)} · {mermaid_text(entity_type, 24)}"
        lines.append(f'  {ids[name]}["{label}"]')
        classes.setdefault(entity_type.casefold(), []).append(ids[name])
    for edge in selection.edges:
        text = mermaid_text(", ".join(edge.keywords[:2]) or edge.type, MERMAID_EDGE_CHARS)
        lines.append(f'  {ids[edge.source]} -->|"{text}"| {ids[edge.target]}')
    for index, (_, members) in enumerate(sorted(classes.items(), key=lambda item: -len(item[1]))):
        if index >= len(MERMAID_PALETTE):
            break
        lines.append(f"  classDef t{index} {MERMAID_PALETTE[index]},color:#111")
        lines.append(f"  class {','.join(members)} t{index}")
    centers = [ids[name] for name in selection.centers if name in ids]
    if centers:
        lines.append("  classDef center stroke-width:3px")
        lines.append(f"  class {','.join(centers)} center")
    return "\n".join(lines) + "\n"


def mermaid_warnings(text: str, edges: int) -> list[str]:
    warnings = []
    if len(text) > MERMAID_MAX_TEXT:
        warnings.append(
            f"the diagram has {len(text)} characters; Mermaid renders at most {MERMAID_MAX_TEXT} by default"
        )
    if edges > MERMAID_MAX_EDGES:
        warnings.append(f"the diagram has {edges} edges; Mermaid renders at most {MERMAID_MAX_EDGES} by default")
    return warnings


Renderer = Callable[[GraphSnapshot, Selection, bool], str]
RENDERERS: dict[str, Renderer] = {"json": to_json, "graphml": to_graphml, "gexf": to_gexf, "cypher": to_cypher}


def render(
    output_format: str, snapshot: GraphSnapshot, selection: Selection, include_properties: bool, direction: str
) -> str:
    if output_format == "mermaid":
        return to_mermaid(snapshot, selection, direction)
    return RENDERERS[output_format](snapshot, selection, include_properties)
