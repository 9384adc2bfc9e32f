"""The knowledge-graph read tools end to end through both processes, on a graph LightRAG built
from uploaded documents with the built-in extractor: exports read back by real parsers,
the Mermaid view for a chat, entity search of every kind, relationship walks, large exports
written to a file, and per-user isolation (issue 6, items 1-4)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import mcp.types as types
import networkx as nx
import pytest

from tests.integration.harness import Client, error_of, running_server
from tests.integration.test_core_flow import b64
from tests.unit.graph_fixtures import check_cypher, check_mermaid, cypher_unquote

pytestmark = pytest.mark.anyio

REACTOR_MD = (
    "# Reactor Review\n\n"
    "The QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. Helena Vargas chose a molten salt "
    "design because it runs at atmospheric pressure.\n\n"
    "## Safety\n\nThe Nimbus Council approved the QUASAR-5521 safety case after Marco Ricci inspected the "
    "cooling loops in Lisbon.\n"
)
ZEBRA_MD = (
    "# Zebra Project\n\nThe ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin.\n\n"
    "## Budget\n\nThe ZEBRA-7741 budget was 42 million euros, approved by the Nimbus Council.\n"
)
# A long identifier: the regex (\w|\w\w)+\d backtracks exponentially on it.
LONG_IDENTIFIER = "compute_the_annual_engineering_budget_for_every_reactor_site"
CODE_MD = (
    "# Budget Tool\n\nThe budget tool computes reactor budgets.\n\n"
    f"```python\ndef {LONG_IDENTIFIER}(sites):\n    return BudgetPlanner(sites).total()\n```\n"
)


async def upload(client: Client, filename: str, text: str, user: str | None = None) -> dict[str, Any]:
    arguments = {"filename": filename, "content": b64(text), "mimeType": "text/markdown"}
    result = await (
        client.call_as(user, "upload_to_lightrag", arguments) if user else client.call("upload_to_lightrag", arguments)
    )
    assert not result.is_error, result.content
    assert result.structured_content is not None and result.structured_content["status"] == "processed"
    return result.structured_content


async def ok(client: Client, tool: str, arguments: dict[str, Any], user: str | None = None) -> dict[str, Any]:
    result = await (client.call_as(user, tool, arguments) if user else client.call(tool, arguments))
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert text_of(result).startswith(result.structured_content["message"])  # the chat sees the summary
    return result.structured_content


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


def node_names(graph: dict[str, Any]) -> set[str]:
    return {node["id"] for node in graph["nodes"]}


async def test_graph_export_search_and_relationships_over_indexed_documents(home: Path) -> None:
    async with running_server(home) as client:
        pid = await client.worker_pid()
        empty = await ok(client, "lightrag_get_graph", {})
        assert empty["nodes"] == [] and "no entities yet" in empty["message"]
        empty_search = await ok(client, "lightrag_search_entities", {"query": "anything"})
        assert empty_search["entities"] == [] and "no entities yet" in empty_search["message"]
        reactor = await upload(client, "reactor.md", REACTOR_MD)
        await upload(client, "zebra.md", ZEBRA_MD)
        await upload(client, "budget-tool.md", CODE_MD)

        # --- the whole graph as JSON
        graph = await ok(client, "lightrag_get_graph", {"max_nodes": 1000})
        names = node_names(graph)
        assert {"Helena Vargas", "QUASAR-5521", "Alice Johnson", "ZEBRA-7741", LONG_IDENTIFIER} <= names
        stats = graph["statistics"]
        assert stats["total_nodes"] == stats["knowledge_base_nodes"] == len(names) and not graph["truncated"]
        assert stats["total_edges"] == len(graph["edges"]) > 0 and sum(stats["node_types"].values()) == len(names)
        assert 0 < stats["density"] <= 1 and stats["connected_components"] >= 1
        helena = next(node for node in graph["nodes"] if node["id"] == "Helena Vargas")
        assert helena["degree"] >= 1 and "reactor.md" in helena["properties"]["file_path"]
        assert all(edge["source"] in names and edge["target"] in names for edge in graph["edges"])
        small = await ok(client, "lightrag_get_graph", {"max_nodes": 3, "include_properties": False})
        assert len(small["nodes"]) == 3 and small["truncated"] and "properties" not in small["nodes"][0]
        people = await ok(client, "lightrag_get_graph", {"label_filter": "person"})
        assert people["scope"]["mode"] == "entity_type" and people["nodes"]
        assert {node["type"] for node in people["nodes"]} == {"person"}

        # --- exports read back by real parsers
        graphml = await ok(client, "lightrag_get_graph", {"output_format": "graphml", "max_nodes": 1000})
        parsed = nx.read_graphml(io.BytesIO(graphml["export"].encode()))
        assert set(parsed.nodes) == names and parsed.number_of_edges() == stats["total_edges"]
        gexf = await ok(client, "lightrag_get_graph", {"output_format": "gexf", "max_nodes": 1000})
        parsed = nx.read_gexf(io.BytesIO(gexf["export"].encode()))
        assert {data["label"] for _, data in parsed.nodes(data=True)} == names
        cypher = await ok(client, "lightrag_get_graph", {"output_format": "cypher", "max_nodes": 1000})
        statements = check_cypher(cypher["export"])
        assert {cypher_unquote(m["name"]) for m in statements["node"]} == names
        assert len(statements["relation"]) == stats["total_edges"]

        # --- the chat view: a Mermaid diagram around an entity, or around a question's entities
        around = await client.call("lightrag_visualize_subgraph", {"entity": "Helena Vargas"})
        assert not around.is_error, around.content
        view = around.structured_content
        assert (
            view is not None and view["format"] == "mermaid" and view["metadata"]["filters_applied"]["max_nodes"] == 30
        )
        assert "```mermaid\ngraph LR\n" in text_of(around)
        labels, edges = check_mermaid(view["export"])
        assert any(label.startswith("Helena Vargas · ") for label in labels.values()) and edges
        assert view["scope"]["centers"] == ["Helena Vargas"] and "QUASAR-5521" in {
            label.rsplit(" · ", 1)[0] for label in labels.values()
        }
        asked = await client.call(
            "lightrag_visualize_subgraph", {"query": "Who commissioned the QUASAR-5521 reactor?", "max_depth": 1}
        )
        assert not asked.is_error and asked.structured_content is not None
        assert "QUASAR-5521" in asked.structured_content["scope"]["query_entities"]
        check_mermaid(asked.structured_content["export"])
        unknown = error_of(await client.call("lightrag_get_graph", {"entity": "Nobody Special Here"}))
        assert unknown["error_code"] == "ENTITY_NOT_FOUND" and "lightrag_search_entities" in unknown["suggested_action"]
        unknown_label = error_of(await client.call("lightrag_get_graph", {"label_filter": "Helena Vargs"}))
        assert unknown_label["error_code"] == "ENTITY_NOT_FOUND" and "Helena Vargas" in unknown_label["error_message"]

        # --- search of every kind
        for typo in ("Helena Varga", "Hlena Vargas"):
            found = await ok(client, "lightrag_search_entities", {"query": typo})
            top = found["entities"][0]
            assert top["name"] == "Helena Vargas" and top["score"] >= 0.7 and "«" in top["highlighted"]
            assert {"document_id": reactor["document_id"], "filename": "reactor.md"} in top["source_documents"]
        exact = await ok(
            client, "lightrag_search_entities", {"query": "quasar-5521", "search_options": {"search_type": "exact"}}
        )
        assert [e["name"] for e in exact["entities"]] == ["QUASAR-5521"]
        strict = await ok(
            client,
            "lightrag_search_entities",
            {"query": "quasar-5521", "search_options": {"search_type": "exact", "case_sensitive": True}},
        )
        assert strict["entities"] == [] and strict["total_matches"] == 0
        semantic = await ok(
            client,
            "lightrag_search_entities",
            {"query": "nuclear reactor", "search_options": {"search_type": "semantic"}},
        )
        assert "QUASAR-5521" in [e["name"] for e in semantic["entities"][:3]]
        assert all(0 < e["score"] <= 1 and "cosine" in e["match_reason"] for e in semantic["entities"])
        pattern = await ok(
            client, "lightrag_search_entities", {"query": r"^[A-Z]+-\d{4}$", "search_options": {"search_type": "regex"}}
        )
        assert sorted(e["name"] for e in pattern["entities"]) == ["QUASAR-5521", "ZEBRA-7741"]
        typed = await ok(
            client,
            "lightrag_search_entities",
            {"query": "Helena Vargas", "search_options": {"entity_types": ["location"]}},
        )
        assert "Helena Vargas" not in [e["name"] for e in typed["entities"]]
        paged = await ok(
            client,
            "lightrag_search_entities",
            {"query": ".", "limit": 2, "offset": 1, "search_options": {"search_type": "regex"}},
        )
        assert len(paged["entities"]) == 2 and paged["pagination"]["has_more"] and paged["total_matches"] == len(names)
        bad = error_of(
            await client.call(
                "lightrag_search_entities", {"query": "(unclosed", "search_options": {"search_type": "regex"}}
            )
        )
        assert bad["error_code"] == "INVALID_PARAMETER" and "regular expression" in bad["error_message"]
        stalled = await client.call(
            "lightrag_search_entities", {"query": r"(\w|\w\w)+\d", "search_options": {"search_type": "regex"}}
        )
        if stalled.is_error:  # stopped on the long identifier
            assert error_of(stalled)["error_code"] == "PROCESSING_TIMEOUT"
        else:  # or answered within the time budget, saying it is partial
            assert stalled.structured_content is not None and stalled.structured_content["search_metadata"]["partial"]
        health = await client.health()
        assert health["status"] != "unhealthy" and health["components"]["worker"]["pid"] == pid

        # --- an entity and its relationships
        details = await ok(client, "lightrag_get_entity_relationships", {"entity_id": "helena vargas"})
        entity = details["entity"]
        assert entity["name"] == "Helena Vargas" and entity["description"] and entity["source_chunks"] >= 1
        assert entity["source_documents"] == [{"document_id": reactor["document_id"], "filename": "reactor.md"}]
        counts = details["relationship_counts"]
        assert counts["total"] == entity["degree"] == len(details["relationships"])
        assert sum(counts["by_direction"].values()) == counts["total"] and counts["by_depth"] == {"1": counts["total"]}
        outgoing = await ok(
            client,
            "lightrag_get_entity_relationships",
            {"entity_id": "Helena Vargas", "relationship_filters": {"direction": "outgoing"}},
        )
        incoming = await ok(
            client,
            "lightrag_get_entity_relationships",
            {"entity_id": "Helena Vargas", "relationship_filters": {"direction": "incoming"}},
        )
        assert outgoing["relationship_counts"]["total"] + incoming["relationship_counts"]["total"] == counts["total"]
        assert all(r["source"] == "Helena Vargas" for r in outgoing["relationships"])
        assert all(r["target"] == "Helena Vargas" for r in incoming["relationships"])
        deeper = await ok(client, "lightrag_get_entity_relationships", {"entity_id": "Helena Vargas", "max_depth": 3})
        assert (
            deeper["relationship_counts"]["total"] > counts["total"]
            and "2" in deeper["relationship_counts"]["by_depth"]
        )
        assert all(
            len(r["path"]) == r["path_length"] + 1 and r["path"][0] == "Helena Vargas" for r in deeper["relationships"]
        )
        only_places = await ok(
            client,
            "lightrag_get_entity_relationships",
            {
                "entity_id": "Helena Vargas",
                "max_depth": 3,
                "relationship_filters": {"target_entity_types": ["location"]},
            },
        )
        assert only_places["relationships"] and {
            r["connected_entity"]["type"] for r in only_places["relationships"]
        } == {"location"}
        none_of_type = await ok(
            client,
            "lightrag_get_entity_relationships",
            {"entity_id": "Helena Vargas", "relationship_filters": {"relationship_types": ["no-such-keyword"]}},
        )
        assert none_of_type["relationships"] == [] and none_of_type["relationship_counts"]["total"] == 0
        alias = await client.call("lightrag_get_entity", {"entity_id": "QUASAR-5521"})
        assert not alias.is_error and alias.structured_content is not None
        assert (
            alias.structured_content["entity"]["name"] == "QUASAR-5521"
            and alias.structured_content["pagination"]["limit"] == 20
        )
        missing = error_of(await client.call("lightrag_get_entity", {"entity_id": "Nobody Special Here"}))
        assert missing["error_code"] == "ENTITY_NOT_FOUND"
        too_deep = error_of(
            await client.call("lightrag_get_entity_relationships", {"entity_id": "QUASAR-5521", "max_depth": 4})
        )
        assert too_deep["error_code"] == "INVALID_PARAMETER"
        too_many = error_of(await client.call("lightrag_get_graph", {"max_nodes": 1001}))
        assert too_many["error_code"] == "INVALID_PARAMETER"


async def test_users_see_only_their_own_graph_and_large_exports_go_to_a_file(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_EXPORT_INLINE_KB="1") as client:
        await upload(client, "reactor.md", REACTOR_MD, user="ann")
        await upload(client, "zebra.md", ZEBRA_MD, user="bob")
        for tool, arguments in (
            ("lightrag_search_entities", {"query": "Helena Vargas", "search_options": {"search_type": "exact"}}),
            ("lightrag_search_entities", {"query": "Helena Vargas", "search_options": {"search_type": "semantic"}}),
        ):
            assert [e["name"] for e in (await ok(client, tool, arguments, user="ann"))["entities"]][:1] == [
                "Helena Vargas"
            ]
            assert "Helena Vargas" not in [
                e["name"] for e in (await ok(client, tool, arguments, user="bob"))["entities"]
            ]
        crossed = await client.call_as("bob", "lightrag_get_entity_relationships", {"entity_id": "Helena Vargas"})
        assert error_of(crossed)["error_code"] == "ENTITY_NOT_FOUND"
        crossed_graph = await client.call_as("bob", "lightrag_visualize_subgraph", {"entity": "Helena Vargas"})
        assert error_of(crossed_graph)["error_code"] == "ENTITY_NOT_FOUND"
        asked = await ok(
            client, "lightrag_get_graph", {"query": "Who commissioned the QUASAR-5521 reactor?"}, user="bob"
        )
        assert "QUASAR-5521" not in asked["scope"]["query_entities"]
        assert "Helena Vargas" not in str(asked["nodes"]) and "QUASAR-5521" not in str(asked["nodes"])

        # A GraphML export over 1 KB is written to ann's exports folder, named without any server path.
        exported = await ok(client, "lightrag_get_graph", {"output_format": "graphml"}, user="ann")
        export_file = exported["export_file"]
        assert exported["export"] is None and export_file["format"] == "graphml" and export_file["size_bytes"] > 1024
        assert "/" not in export_file["name"] and str(home) not in exported["message"]
        assert export_file["name"] in exported["message"] and exported["export_preview"].startswith("<?xml")
        files = list(home.rglob(export_file["name"]))
        assert len(files) == 1 and files[0].parent.name == "exports"
        assert files[0].stat().st_size == export_file["size_bytes"]
        parsed = nx.read_graphml(files[0])
        assert "Helena Vargas" in parsed.nodes and "Alice Johnson" not in parsed.nodes
        bob_export = await ok(client, "lightrag_get_graph", {"output_format": "graphml"}, user="bob")
        bob_file = list(home.rglob(bob_export["export_file"]["name"]))
        assert len(bob_file) == 1 and bob_file[0].parent != files[0].parent  # each user's own folder
        bob_graph = nx.read_graphml(bob_file[0])
        assert "Alice Johnson" in bob_graph.nodes and "Helena Vargas" not in bob_graph.nodes
        as_json = await ok(client, "lightrag_get_graph", {}, user="ann")
        assert as_json["export_file"]["format"] == "json" and "export file has them all" in as_json["notes"][0]
        assert "properties" not in (as_json["nodes"] or [{}])[0]
