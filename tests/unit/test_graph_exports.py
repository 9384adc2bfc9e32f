"""Graph exports are read back by real parsers (NetworkX for GraphML and GEXF) or by checkers
that mirror the grammar of the subset we emit (Cypher statements, Mermaid flowcharts), with
hostile entity names: quotes, backslashes, newlines, brackets, pipes, #, unicode."""

from __future__ import annotations

import io
import re

import networkx as nx
import orjson
import pytest

from rag_worker.graph.browse import GraphFilters, select_whole
from rag_worker.graph.exports import (
    cypher_label,
    cypher_relationship_type,
    cypher_string,
    mermaid_text,
    render,
    to_cypher,
    to_mermaid,
)
from tests.unit.graph_fixtures import (
    HOSTILE_NAMES,
    check_cypher,
    check_mermaid,
    cypher_unquote,
    edge,
    hostile_snapshot,
    mermaid_decode,
    node,
    snapshot,
)

XML_SAFE = [name for name in HOSTILE_NAMES if not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", name)]


def whole(graph):  # type: ignore[no-untyped-def]
    return select_whole(graph, GraphFilters(), 1000, 2000)


# ------------------------------------------------------------------------------ GraphML / GEXF
@pytest.mark.parametrize("include_properties", [True, False])
def test_graphml_is_read_back_by_networkx_with_every_name_and_relation(include_properties: bool) -> None:
    graph = hostile_snapshot()
    selection = whole(graph)
    text = render("graphml", graph, selection, include_properties, "LR")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<graphml ')
    parsed = nx.read_graphml(io.BytesIO(text.encode()))
    assert parsed.number_of_nodes() == len(HOSTILE_NAMES) and parsed.number_of_edges() == len(selection.edges)
    for name in XML_SAFE:  # XML keeps these characters exactly (tabs/CR included, as character references)
        assert name in parsed.nodes, name
    first = parsed.nodes[HOSTILE_NAMES[0]]
    assert first["label"] == HOSTILE_NAMES[0] and first["entity_type"] == "organization"
    assert isinstance(first["degree"], int) and first["degree"] == 2
    weights = sorted(data["weight"] for _, _, data in parsed.edges(data=True))
    assert weights == [float(i) for i in range(1, len(HOSTILE_NAMES) + 1)]
    if include_properties:
        assert first["description"] == f'said "{HOSTILE_NAMES[0]}" \\ ok'
        assert first["source_id"] == "doc-aaa-chunk-000<SEP>doc-bbb-chunk-001"
        assert isinstance(first["created_at"], int)
    else:
        assert "description" not in first


def test_gexf_is_read_back_by_networkx_with_labels_types_and_weights() -> None:
    graph = hostile_snapshot()
    selection = whole(graph)
    text = render("gexf", graph, selection, True, "LR")
    parsed = nx.read_gexf(io.BytesIO(text.encode()))
    assert parsed.number_of_nodes() == len(HOSTILE_NAMES) and parsed.number_of_edges() == len(selection.edges)
    labels = {data["label"] for _, data in parsed.nodes(data=True)}
    assert set(XML_SAFE) <= labels
    by_label = {data["label"]: data for _, data in parsed.nodes(data=True)}
    assert by_label["Ünïcødé 北京 🚀"]["entity_type"] == "人物"
    assert by_label["Ünïcødé 北京 🚀"]["degree"] == 2
    weights = sorted(float(data["weight"]) for _, _, data in parsed.edges(data=True))
    assert weights == [float(i) for i in range(1, len(HOSTILE_NAMES) + 1)]
    relation_types = {data["relation_type"] for _, _, data in parsed.edges(data=True)}
    assert "co-occurrence" in relation_types and "中文关系" in relation_types


def test_xml_exports_survive_properties_gexf_reserves_and_mixed_value_types() -> None:
    nodes = [
        node("A", label="not the name", start="x", weight="heavy", id="A"),
        node("B", score=3),
        node("C", score="high", flag=True),
        node("D\x01control", description="bell\x07inside"),
    ]
    edges = [edge("A", "B", type="directed?", id="e1"), edge("B", "C"), edge("C", "D\x01control", weight=float("nan"))]
    graph = snapshot(nodes, edges)
    selection = whole(graph)
    for output_format, reader in (("graphml", nx.read_graphml), ("gexf", nx.read_gexf)):
        parsed = reader(io.BytesIO(render(output_format, graph, selection, True, "LR").encode()))
        assert parsed.number_of_nodes() == 4 and parsed.number_of_edges() == 3, output_format
    parsed = nx.read_graphml(io.BytesIO(render("graphml", graph, selection, True, "LR").encode()))
    assert parsed.nodes["A"]["label"] == "A" and parsed.nodes["A"]["prop_label"] == "not the name"
    assert parsed.nodes["B"]["score"] == "3" and parsed.nodes["C"]["score"] == "high"  # one type per key
    assert "Dcontrol" in parsed.nodes and parsed.nodes["Dcontrol"]["description"] == "bellinside"


def test_json_export_parses_and_keeps_properties_as_plain_values() -> None:
    graph = hostile_snapshot()
    data = orjson.loads(render("json", graph, whole(graph), True, "LR"))
    assert {n["id"] for n in data["nodes"]} == set(HOSTILE_NAMES)
    assert all(set(n) >= {"id", "label", "type", "degree", "properties"} for n in data["nodes"])
    assert all(set(e) >= {"source", "target", "type", "keywords", "weight"} for e in data["edges"])


# ----------------------------------------------------------------------------------- Cypher
def test_cypher_statements_parse_and_literals_decode_back_to_the_names() -> None:
    graph = hostile_snapshot()
    selection = whole(graph)
    found = check_cypher(to_cypher(graph, selection, True))
    assert len(found["constraint"]) == 1
    assert sorted(cypher_unquote(m["name"]) for m in found["node"]) == sorted(HOSTILE_NAMES)
    pairs = {(cypher_unquote(m["a"]), cypher_unquote(m["b"])) for m in found["relation"]}
    assert pairs == {(e.source, e.target) for e in selection.edges}
    assert {m["type"] for m in found["relation"]} >= {"CO_OCCURRENCE", "DROP", "RELATED_TO", "LED"}


def test_cypher_without_properties_still_sets_type_label_and_weight() -> None:
    graph = hostile_snapshot()
    script = to_cypher(graph, whole(graph), False)
    found = check_cypher(script)
    assert all(", n.degree = " in m.group(0) for m in found["node"])
    assert "description" not in script


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("O'Neil", "'O\\'Neil'"),
        ("C:\\dir", "'C:\\\\dir'"),
        ("a\nb", "'a\\nb'"),
        ("\\'", "'\\\\\\''"),
        ("bell\x07", "'bell\\u0007'"),
        ("北京 🚀", "'北京 🚀'"),
    ],
)
def test_cypher_string_escaping(text: str, literal: str) -> None:
    assert cypher_string(text) == literal
    assert cypher_unquote(literal) == text


def test_cypher_labels_and_relationship_types_are_sanitised() -> None:
    assert cypher_label("organization") == "Organization"
    assert cypher_label("code symbol") == "CodeSymbol"
    assert cypher_label("3d-model") == "T3dModel"
    assert cypher_label("人物") == "Untyped" and cypher_label("") == "Untyped"
    assert cypher_relationship_type("co-occurrence") == "CO_OCCURRENCE"
    assert cypher_relationship_type("'; DROP") == "DROP"
    assert cypher_relationship_type("2nd order") == "R_2ND_ORDER"
    assert cypher_relationship_type("中文") == "RELATED_TO"


# ---------------------------------------------------------------------------------- Mermaid
def test_mermaid_passes_the_flowchart_check_and_shows_every_name() -> None:
    graph = hostile_snapshot()
    selection = whole(graph)
    nodes, edges = check_mermaid(to_mermaid(graph, selection, "TD"))
    shown = sorted(label.rsplit(" · ", 1)[0] for label in nodes.values())
    assert shown == sorted(" ".join(name.split()) for name in HOSTILE_NAMES)
    assert len(edges) == len(selection.edges)
    assert any(label == "co-occurrence, led" for _, _, label in edges)


def test_mermaid_escapes_every_special_character_as_an_entity_code() -> None:
    escaped = mermaid_text('a"b#c[d]e(f)g{h}i|j<k>l;m`n\\o&p', 200)
    assert escaped == "a#quot;b#35;c#91;d#93;e#40;f#41;g#123;h#125;i#124;j#lt;k#gt;l#59;m#96;n#92;o#amp;p"
    assert mermaid_decode(escaped) == 'a"b#c[d]e(f)g{h}i|j<k>l;m`n\\o&p'
    assert mermaid_text("one\ntwo\r\tthree", 200) == "one two three"
    long = mermaid_text("x" * 100, 60)
    assert len(long) == 60 and long.endswith("…")


def test_mermaid_marks_the_center_and_colours_types() -> None:
    graph = hostile_snapshot()
    selection = whole(graph)
    selection.centers = [HOSTILE_NAMES[3]]
    diagram = to_mermaid(graph, selection, "LR")
    check_mermaid(diagram)
    assert "  classDef center stroke-width:3px" in diagram
    assert re.search(r"^  class n\d+ center$", diagram, re.MULTILINE)
    assert diagram.count("classDef t") == 8  # the palette's size; further types stay default
