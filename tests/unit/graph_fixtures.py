"""Graphs for the graph-tool tests, in the shape LightRAG's graph storages return them
(`get_all_nodes()` / `get_all_edges()` dictionaries with <SEP>-joined multi-values), and
checkers for the Cypher and Mermaid we emit (the grammar of the subset, statement by statement)."""

from __future__ import annotations

import html
import re
from typing import Any

from rag_worker.graph.snapshot import GraphSnapshot

HOSTILE_NAMES = [
    'Alice "The Boss" O\'Neil',
    "C:\\Program Files\\tool",
    "line one\nline two",
    "Ünïcødé 北京 🚀",
    "a|b[c]{d}(e)#f;g<h>&i`j",
    "end",
    "'; MATCH (n) DETACH DELETE n; //",
    "\\'",
    "tab\there\rreturn",
    "#quot; already coded",
]


def node(name: str, entity_type: str = "person", description: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "id": name,
        "entity_id": name,
        "entity_type": entity_type,
        "description": description or f"{name} is mentioned.",
        "source_id": "doc-aaa-chunk-000<SEP>doc-bbb-chunk-001",
        "file_path": "a.md<SEP>b.pdf",
        "created_at": 1_700_000_000,
        **extra,
    }


def edge(
    source: str, target: str, keywords: str = "co-occurrence", weight: float = 1.0, **extra: Any
) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "keywords": keywords,
        "weight": weight,
        "description": f"{source} relates to {target}.",
        "source_id": "doc-aaa-chunk-000",
        "file_path": "a.md",
        "created_at": 1_700_000_000,
        **extra,
    }


def snapshot(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> GraphSnapshot:
    return GraphSnapshot.build(nodes, edges)


def hostile_snapshot() -> GraphSnapshot:
    """Every hostile name as an entity of an awkward type, chained by relations with awkward keywords."""
    types = ["organization", "code symbol", "3d-model", "人物", "", "person", "concept", "other", "x'y", "event"]
    keywords = ["co-occurrence,led", "'; DROP", "", "中文关系", "a|b", "x\ny", "weird `key`", "led", "#35;", "z"]
    nodes = [node(name, types[i], description=f'said "{name}" \\ ok') for i, name in enumerate(HOSTILE_NAMES)]
    edges = [
        edge(HOSTILE_NAMES[i], HOSTILE_NAMES[(i + 1) % len(HOSTILE_NAMES)], keywords[i], weight=float(i + 1))
        for i in range(len(HOSTILE_NAMES))
    ]
    return snapshot(nodes, edges)


def people_snapshot() -> GraphSnapshot:
    """A small graph: a triangle (Alice, Bob, Carol), a chain Carol-Dave-Erin-Frank, an isolated Zed."""
    nodes = [
        node("Alice Johnson", "person"),
        node("Bob Stone", "person"),
        node("Carol King", "person"),
        node("Dave Acme Corp", "organization"),
        node("Erin Labs", "organization"),
        node("Frank Street", "location"),
        node("Helena Vargas", "person", description="Helena Vargas commissioned the reactor."),
        node("Zed", "concept"),
    ]
    edges = [
        edge("Alice Johnson", "Bob Stone", "co-occurrence,friends", 2.0),
        edge("Bob Stone", "Carol King", "co-occurrence,colleagues", 1.0),
        edge("Carol King", "Alice Johnson", "co-occurrence,friends", 3.0),
        edge("Carol King", "Dave Acme Corp", "works at", 1.0),
        edge("Dave Acme Corp", "Erin Labs", "owns", 1.0),
        edge("Erin Labs", "Frank Street", "located in", 1.0),
        edge("Helena Vargas", "Alice Johnson", "co-occurrence", 1.0),
    ]
    return snapshot(nodes, edges)


# ------------------------------------------------------------------------------ Cypher checker
IDENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
STRING = r"'(?:[^'\\\n\r]|\\[\\'\"ntrbf]|\\u[0-9a-fA-F]{4})*'"
NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
VALUE = rf"(?:{STRING}|{NUMBER}|true|false)"
SET_ITEM = rf"(?:n:[A-Za-z_][A-Za-z0-9_]*|[nr]\.{IDENT} = {VALUE})"
SHAPES = {
    "comment": re.compile(r"//[^\n]*"),
    "constraint": re.compile(r"CREATE CONSTRAINT [a-z_]+ IF NOT EXISTS FOR \(n:Entity\) REQUIRE n\.name IS UNIQUE;"),
    "node": re.compile(rf"MERGE \(n:Entity \{{name: (?P<name>{STRING})\}}\) SET {SET_ITEM}(?:, {SET_ITEM})*;"),
    "relation": re.compile(
        rf"MATCH \(a:Entity \{{name: (?P<a>{STRING})\}}\), \(b:Entity \{{name: (?P<b>{STRING})\}}\) "
        rf"MERGE \(a\)-\[r:(?P<type>[A-Z_][A-Z0-9_]*)\]->\(b\) SET {SET_ITEM}(?:, {SET_ITEM})*;"
    ),
}
UNESCAPE = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def cypher_unquote(literal: str) -> str:
    """The value of a Cypher single-quoted literal (the escapes Neo4j defines)."""
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] == "u":
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(UNESCAPE[body[i + 1]])
            i += 2
            continue
        out.append(body[i])
        i += 1
    return "".join(out)


def check_cypher(script: str) -> dict[str, list[re.Match[str]]]:
    """Every line is one statement of a known shape; returns the matches by shape."""
    found: dict[str, list[re.Match[str]]] = {shape: [] for shape in SHAPES}
    for line in script.splitlines():
        matches = [(shape, pattern.fullmatch(line)) for shape, pattern in SHAPES.items()]
        hits = [(shape, match) for shape, match in matches if match]
        assert len(hits) == 1, f"not a statement we emit: {line!r}"
        found[hits[0][0]].append(hits[0][1])
    return found


# ----------------------------------------------------------------------------- Mermaid checker
MERMAID_ID = r"n\d+"
LABEL = r'"(?:[^"#\[\](){}|<>;`\\\n]|#\w+;)*"'
MERMAID_LINES = [
    re.compile(r"graph (?:LR|TD)"),
    re.compile(rf"  {MERMAID_ID}\[{LABEL}\]"),
    re.compile(rf"  {MERMAID_ID} -->\|{LABEL}\| {MERMAID_ID}"),
    re.compile(r"  classDef [A-Za-z_]\w* [a-z-]+:[#\w]+(?:,[a-z-]+:[#\w]+)*"),
    re.compile(rf"  class {MERMAID_ID}(?:,{MERMAID_ID})* [A-Za-z_]\w*"),
]


def mermaid_decode(label: str) -> str:
    """What Mermaid shows for a quoted label: its entity codes become characters."""
    return html.unescape(re.sub(r"#(\w+);", lambda m: f"&#{m[1]};" if m[1].isdigit() else f"&{m[1]};", label))


def check_mermaid(diagram: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Each line is a statement of the flowchart subset we emit; returns node labels and edges."""
    lines = diagram.rstrip("\n").split("\n")
    assert MERMAID_LINES[0].fullmatch(lines[0]), lines[0]
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    for line in lines[1:]:
        assert any(pattern.fullmatch(line) for pattern in MERMAID_LINES[1:]), f"not valid Mermaid: {line!r}"
        if match := re.fullmatch(rf'  ({MERMAID_ID})\["(.*)"\]', line):
            assert match[1] not in nodes, "node defined twice"
            nodes[match[1]] = mermaid_decode(match[2])
        elif match := re.fullmatch(rf'  ({MERMAID_ID}) -->\|"(.*)"\| ({MERMAID_ID})', line):
            edges.append((match[1], match[3], mermaid_decode(match[2])))
    for source, target, _ in edges:
        assert source in nodes and target in nodes, "edge to an undefined node"
    return nodes, edges
