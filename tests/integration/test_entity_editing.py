"""`lightrag_update_entity`: edits go through LightRAG's editing API, are validated before
anything is written, are atomic per call, serialized per workspace, and visible to queries.

The first group runs LightRAG in-process (built by `rag_worker.storage.lightrag_setup.new_lightrag`, as the
worker builds it) so a storage failure can be injected mid-edit; the second drives the real
server over stdio.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from config.settings import load_settings
from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.graph.entity_update import edit_lock, update_entity
from tests.integration.harness import Client, error_of, running_server

pytestmark = pytest.mark.anyio

DOC_A = "The ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin. Alice Johnson met Bob Stone."
DOC_B = "Bob Stone works at Acme Corporation in Paris. Acme Corporation sells rockets."


@pytest.fixture
async def rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A LightRAG instance with two small documents indexed by the built-in extractor."""
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    instance = await new_lightrag(tmp_path / "data", f"edit_{uuid.uuid4().hex[:8]}", components)
    await instance.ainsert([DOC_A, DOC_B], ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
    try:
        yield instance
    finally:
        await instance.finalize_storages()


async def graph_state(rag: Any) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """Every node and edge with its data (edges keyed by sorted endpoints)."""
    graph = rag.chunk_entity_relation_graph
    nodes = {label: await graph.get_node(label) for label in await graph.get_all_labels()}
    edges = {}
    for label in nodes:
        for src, tgt in await graph.get_node_edges(label) or []:
            edges[tuple(sorted((src, tgt)))] = await graph.get_edge(src, tgt)
    return nodes, edges


async def edit(rag: Any, **args: Any) -> Any:
    return await update_entity(rag, m.UPDATE_ENTITY.with_defaults(args), edit_lock(rag.workspace))


async def code_of(rag: Any, **args: Any) -> ErrorCode:
    with pytest.raises(RagError) as caught:
        await edit(rag, **args)
    return caught.value.code


async def test_invalid_requests_are_refused_with_their_code_and_change_nothing(rag: Any) -> None:
    before = await graph_state(rag)
    # unknown entity without create_if_missing → ENTITY_NOT_FOUND
    assert await code_of(rag, entity_id="Nobody Known", updates={"description": "x"}) == ErrorCode.ENTITY_NOT_FOUND
    # no change at all → INVALID_UPDATE
    assert await code_of(rag, entity_id="Bob Stone", updates={}) == ErrorCode.INVALID_UPDATE
    # relationship to an entity that does not exist → RELATIONSHIP_TARGET_NOT_FOUND (after a valid description)
    code = await code_of(
        rag,
        entity_id="Bob Stone",
        updates={"description": "changed", "add_relationships": [{"target": "Ghost Entity", "description": "x"}]},
    )
    assert code == ErrorCode.RELATIONSHIP_TARGET_NOT_FOUND
    # rename onto an existing entity without allow_merge → UPDATE_CONFLICT
    assert await code_of(rag, entity_id="Bob Stone", updates={"new_name": "Alice Johnson"}) == ErrorCode.UPDATE_CONFLICT
    # a merge source that does not exist → ENTITY_NOT_FOUND
    assert await code_of(rag, entity_id="Bob Stone", merge_entities=["Nope Inc"]) == ErrorCode.ENTITY_NOT_FOUND
    # reserved attribute as a property, control characters, removing a missing relationship → INVALID_UPDATE
    assert (
        await code_of(rag, entity_id="Bob Stone", updates={"properties": {"source_id": "x"}})
        == ErrorCode.INVALID_UPDATE
    )
    assert await code_of(rag, entity_id="Bob Stone", updates={"description": "bad\x00text"}) == ErrorCode.INVALID_UPDATE
    assert (
        await code_of(rag, entity_id="Berlin", updates={"remove_relationships": ["Paris"]}) == ErrorCode.INVALID_UPDATE
    )
    # a new entity without a description → INVALID_UPDATE
    code = await code_of(
        rag, entity_id="Brand New", updates={"entity_type": "x"}, update_options={"create_if_missing": True}
    )
    assert code == ErrorCode.INVALID_UPDATE
    assert await graph_state(rag) == before


async def test_a_storage_failure_mid_edit_restores_the_graph(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = await graph_state(rag)
    entity_vector_before = await rag.entities_vdb.get_by_id(_entity_vector_id("Bob Stone"))
    graph = rag.chunk_entity_relation_graph
    real_upsert_edge = graph.upsert_edge

    async def failing_upsert_edge(src: str, tgt: str, data: dict[str, Any]) -> None:
        if "Berlin" in (src, tgt) and data.get("description") == "Bob visits Berlin":
            raise OSError("simulated storage failure")
        await real_upsert_edge(src, tgt, data)

    monkeypatch.setattr(graph, "upsert_edge", failing_upsert_edge)
    with pytest.raises(RagError) as caught:
        await edit(
            rag,
            entity_id="Bob Stone",
            updates={
                "description": "Bob Stone is a rocket engineer.",
                "entity_type": "engineer",
                "properties": {"team": "propulsion"},
                "remove_relationships": ["Paris"],
                "add_relationships": [{"target": "Berlin", "description": "Bob visits Berlin"}],
                "new_name": "Robert Stone",
            },
        )
    assert caught.value.code == ErrorCode.GRAPH_ACCESS_ERROR
    assert "nothing was changed" in caught.value.message
    monkeypatch.setattr(graph, "upsert_edge", real_upsert_edge)
    assert await graph_state(rag) == before
    vector = await rag.entities_vdb.get_by_id(_entity_vector_id("Bob Stone"))
    assert vector is not None and vector["content"] == entity_vector_before["content"]


def _entity_vector_id(name: str) -> str:
    from lightrag.utils import compute_mdhash_id

    return compute_mdhash_id(name, prefix="ent-")


async def test_an_edit_changes_fields_relationships_and_name_and_reports_them(rag: Any) -> None:
    from rag_worker.handlers.editing import describe_outcome

    graph = rag.chunk_entity_relation_graph
    outcome = await edit(
        rag,
        entity_id="Bob Stone",
        updates={
            "description": "Bob Stone is a rocket engineer.",
            "properties": {"team": "propulsion"},
            "add_labels": ["staff"],
            "remove_relationships": ["Paris"],
            "add_relationships": [{"target": "Berlin", "description": "Bob visits Berlin", "keywords": "travel"}],
            "new_name": "Robert Stone",
        },
    )
    result = await describe_outcome(rag, outcome)
    assert result["entity_id"] == "Robert Stone" and result["renamed_from"] == "Bob Stone"
    assert result["changes"]["description"]["after"] == "Bob Stone is a rocket engineer."
    assert "Bob Stone works at Acme" in result["changes"]["description"]["before"]
    assert result["changes"]["properties.team"] == {"before": None, "after": "propulsion"}
    assert result["relationships_removed"] == ["Paris"] and result["relationships_added"][0]["target"] == "Berlin"
    assert not await graph.has_node("Bob Stone")
    node = await graph.get_node("Robert Stone")
    assert node["team"] == "propulsion" and node["labels"] == "staff"
    assert await graph.has_edge("Robert Stone", "Berlin") and not await graph.has_edge("Robert Stone", "Paris")
    assert await graph.has_edge("Robert Stone", "Acme Corporation")  # relationships follow a rename
    vector = await rag.entities_vdb.get_by_id(_entity_vector_id("Robert Stone"))
    assert vector is not None and "rocket engineer" in vector["content"]


async def test_merging_moves_relationships_and_removes_the_sources(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    outcome = await edit(rag, entity_id="Acme Corporation", merge_entities=["Berlin"])
    assert outcome.plan.merge_sources == ["Berlin"]
    assert not await graph.has_node("Berlin")
    node = await graph.get_node("Acme Corporation")
    assert "led by Alice Johnson" in node["description"]
    # Berlin's relationship with ZEBRA-7741's leader moved onto the target
    assert await graph.has_edge("Acme Corporation", "Alice Johnson")


async def test_create_if_missing_creates_a_searchable_entity(rag: Any) -> None:
    outcome = await edit(
        rag,
        entity_id="Nimbus Council",
        updates={
            "description": "The Nimbus Council approves budgets.",
            "entity_type": "organization",
            "add_relationships": [{"target": "Acme Corporation", "description": "funds Acme"}],
        },
        update_options={"create_if_missing": True},
    )
    assert outcome.steps.created
    node = await rag.chunk_entity_relation_graph.get_node("Nimbus Council")
    assert node["entity_type"] == "organization"
    assert await rag.chunk_entity_relation_graph.has_edge("Nimbus Council", "Acme Corporation")
    hits = await rag.entities_vdb.query("Who approves budgets?", top_k=3)
    assert any(hit["entity_name"] == "Nimbus Council" for hit in hits)


# ------------------------------------------------------------------ through the server


async def upload_text(client: Client, title: str, text: str) -> None:
    result = await client.call("lightrag_insert_text", {"text": text, "title": title})
    assert not result.is_error, result.content
    assert result.structured_content["status"] == "processed"


async def test_ten_concurrent_appends_to_one_entity_all_survive(home: Path) -> None:
    async with running_server(home) as client:
        await upload_text(client, "a", DOC_A)

        async def append(i: int) -> None:
            result = await client.call(
                "lightrag_update_entity",
                {
                    "entity_id": "Alice Johnson",
                    "updates": {"description": f"Note number {i}-QX."},
                    "update_options": {"merge_mode": "append"},
                },
            )
            assert not result.is_error, result.content

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(append, i)
        rels = await client.call(
            "lightrag_update_entity", {"entity_id": "Alice Johnson", "updates": {"properties": {"checked": "yes"}}}
        )
        description = rels.structured_content["entity"]["description"]
        assert all(f"Note number {i}-QX." in description for i in range(10)), description
        assert "led by Alice Johnson" in description  # the original text is kept in append mode


async def test_a_changed_description_is_found_by_a_local_query(home: Path) -> None:
    async with running_server(home) as client:
        await upload_text(client, "a", DOC_A)
        result = await client.call(
            "lightrag_update_entity",
            {"entity_id": "Bob Stone", "updates": {"description": "Bob Stone invented the QUOKKA-5150 telescope."}},
        )
        assert not result.is_error, result.content
        data = result.structured_content
        assert data["changes"]["description"]["after"] == "Bob Stone invented the QUOKKA-5150 telescope."
        assert "Bob Stone" in result.content[0].text
        query = await client.call(
            "lightrag_query",
            {"query": "Who invented the QUOKKA-5150 telescope?", "mode": "local", "only_context": True},
        )
        assert not query.is_error, query.content
        entities = query.structured_content["entities"]
        assert any("QUOKKA-5150 telescope" in entity["description"] for entity in entities)
        assert "QUOKKA-5150 telescope" in query.content[0].text  # type: ignore[union-attr]


async def test_server_errors_carry_the_codes(home: Path) -> None:
    async with running_server(home) as client:
        await upload_text(client, "a", DOC_A)
        missing = error_of(
            await client.call("lightrag_update_entity", {"entity_id": "Nobody", "updates": {"description": "x"}})
        )
        assert missing["error_code"] == "ENTITY_NOT_FOUND"
        conflict = error_of(
            await client.call("lightrag_update_entity", {"entity_id": "Bob Stone", "updates": {"new_name": "Berlin"}})
        )
        assert conflict["error_code"] == "UPDATE_CONFLICT"
        empty = error_of(await client.call("lightrag_update_entity", {"entity_id": "Bob Stone"}))
        assert empty["error_code"] == "INVALID_UPDATE"
        # schema violations are refused by the front before the worker: INVALID_PARAMETER
        bad = error_of(
            await client.call("lightrag_update_entity", {"entity_id": "Bob Stone", "updates": {"colour": "red"}})
        )
        assert bad["error_code"] == "INVALID_PARAMETER"


async def test_a_failure_after_a_merge_brings_the_merged_entity_back(rag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = await graph_state(rag)
    graph = rag.chunk_entity_relation_graph
    real_upsert_node = graph.upsert_node

    async def failing_upsert_node(name: str, data: dict[str, Any]) -> None:
        if data.get("team") == "propulsion":  # the properties step, after the merge
            raise OSError("simulated storage failure")
        await real_upsert_node(name, data)

    monkeypatch.setattr(graph, "upsert_node", failing_upsert_node)
    with pytest.raises(RagError):
        await edit(rag, entity_id="Bob Stone", merge_entities=["Paris"], updates={"properties": {"team": "propulsion"}})
    monkeypatch.setattr(graph, "upsert_node", real_upsert_node)
    assert await graph_state(rag) == before
    assert await rag.entities_vdb.get_by_id(_entity_vector_id("Paris")) is not None


async def test_renaming_onto_an_existing_entity_merges_only_when_allowed(rag: Any) -> None:
    graph = rag.chunk_entity_relation_graph
    assert await code_of(rag, entity_id="Paris", updates={"new_name": "Berlin"}) == ErrorCode.UPDATE_CONFLICT
    outcome = await edit(rag, entity_id="Paris", updates={"new_name": "Berlin"}, update_options={"allow_merge": True})
    assert outcome.steps.final_name == "Berlin"
    assert not await graph.has_node("Paris")
    assert "Paris" in (await graph.get_node("Berlin"))["description"]  # Paris's description merged in
