"""Named knowledge bases through the real server over stdio and HTTP (SPEC §3): a user keeps
"project-a" and "project-b" apart, lists them, and never reaches another user's by name."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Client, error_of, running_server
from tests.integration.http_harness import bearer, http_server, mcp_client

pytestmark = pytest.mark.anyio

PELICAN_MD = "# Gliders\n\nThe PELICAN-77 glider was built by Nora Quist in Tromsø.\n"
QUESTION = {"query": "Who built the PELICAN-77 glider?", "mode": "naive"}


async def call_ok(client: Client, user: str, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_as(user, tool, arguments)
    assert not result.is_error, result.content
    return result


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def listed(client: Client, user: str) -> dict[str, int | None]:
    result = await call_ok(client, user, "lightrag_list_knowledge_bases", {})
    rows = result.structured_content["knowledge_bases"]
    assert len(text_of(result).splitlines()) == len(rows) + 1  # a heading, then one line each
    return {row["name"]: row["documents"] for row in rows}


async def test_a_users_knowledge_bases_are_apart_listed_and_out_of_other_users_reach(home: Path) -> None:
    async with running_server(home) as client:
        await client.wait_ready()
        upload = {"filename": "pelican.md", "content": base64.b64encode(PELICAN_MD.encode()).decode()}
        stored = await call_ok(client, "alice", "upload_to_lightrag", {**upload, "workspace": "project-a"})
        assert stored.structured_content["status"] == "processed"

        await call_ok(client, "alice", "lightrag_insert_text", {"text": "Unrelated notes.", "workspace": "project-b"})
        elsewhere = await call_ok(client, "alice", "lightrag_query", {**QUESTION, "workspace": "project-b"})
        assert "PELICAN-77" not in text_of(elsewhere) and "pelican.md" not in text_of(elsewhere)
        default = await call_ok(client, "alice", "lightrag_query", QUESTION)
        assert "pelican.md" not in text_of(default)
        found = await call_ok(client, "alice", "lightrag_query", {**QUESTION, "workspace": "Project-A"})
        assert "Nora Quist" in text_of(found) and "pelican.md" in text_of(found)

        assert await listed(client, "alice") == {"default": 0, "project-a": 1, "project-b": 1}
        stats = await call_ok(
            client, "alice", "lightrag_get_system_stats", {"workspace": "project-a", "stat_categories": ["queries"]}
        )
        assert stats.structured_content["queries"]["total"] == 1  # that knowledge base's queries only

        assert await listed(client, "bob") == {"default": 0}
        for tool, arguments in [("lightrag_query", QUESTION), ("lightrag_list_documents", {})]:
            theirs = error_of(await client.call_as("bob", tool, {**arguments, "workspace": "project-a"}))
            assert theirs["error_code"] == "INVALID_PARAMETER"  # bob has no project-a: alice's is out of reach
            assert theirs["error_message"] == "You have no knowledge base named 'project-a'. Yours: default."
        assert await listed(client, "bob") == {"default": 0}  # reading created nothing
        assert await listed(client, "alice") == {"default": 0, "project-a": 1, "project-b": 1}

        health = (await call_ok(client, "alice", "lightrag_health_check", {"workspace": "project-a"})).structured_content
        assert "__kb_project_a_" in health["workspace"]


BAD_NAMES = {
    "../alice": "looks like a path",
    "x" * 41: "is 41 characters long; a knowledge base name has at most 40",
    "all": "is a reserved name",
    "my notes": "contains ' '",
}


async def test_bad_knowledge_base_names_get_clear_errors_and_the_server_keeps_serving(home: Path) -> None:
    async with running_server(home) as client:
        for workspace, fragment in BAD_NAMES.items():
            error = error_of(await client.call("lightrag_query", {"query": "anything", "workspace": workspace}))
            assert error["error_code"] == "INVALID_PARAMETER" and fragment in error["error_message"], error
            assert "lightrag_list_knowledge_bases" in error["suggested_action"]
        refused = error_of(await client.call("lightrag_list_knowledge_bases", {"workspace": "project-a"}))
        assert "unknown field(s) workspace" in refused["error_message"]
        assert (await client.wait_ready())["status"] in {"healthy", "degraded"}
        assert (await client.call("lightrag_list_knowledge_bases", {})).structured_content["knowledge_bases"] == [
            {"name": "default", "default": True, "documents": 0}
        ]


async def test_over_http_a_gateways_users_each_get_their_own_knowledge_bases(home: Path) -> None:
    """The same resolution behind Streamable HTTP: LibreChat's gateway token names the user in a header."""
    token = "kb-gateway-secret"
    digest = hashlib.sha256(token.encode()).hexdigest()
    with http_server(home, LIGHTRAG_MCP_HTTP_TOKENS=f"gateway:librechat:{digest}") as server:
        async with mcp_client(server.url, bearer(token, "alice")) as alice:
            note = {"text": "The HERON-9 kite was flown by Ivo Brandt.", "title": "heron", "workspace": "project-a"}
            assert not (await alice.call("lightrag_insert_text", note)).is_error
            found = await alice.call("lightrag_query", {"query": "Who flew the HERON-9 kite?", "mode": "naive", "workspace": "project-a"})
            assert "Ivo Brandt" in text_of(found)
            mine = (await alice.call("lightrag_list_knowledge_bases")).structured_content["knowledge_bases"]
            assert {row["name"]: row["documents"] for row in mine} == {"default": 0, "project-a": 1}
        async with mcp_client(server.url, bearer(token, "bob")) as bob:
            theirs = await bob.call("lightrag_query", {"query": "Who flew the HERON-9 kite?", "mode": "naive", "workspace": "project-a"})
            assert error_of(theirs)["error_code"] == "INVALID_PARAMETER" and "Ivo Brandt" not in text_of(theirs)
            listed_by_bob = (await bob.call("lightrag_list_knowledge_bases")).structured_content["knowledge_bases"]
            assert {row["name"]: row["documents"] for row in listed_by_bob} == {"default": 0}


async def test_read_only_calls_never_create_a_knowledge_base_and_writes_are_bounded_per_user(home: Path) -> None:
    """Issue 24 item 8: 300 listings with random names made 300 directories."""
    reads = [
        ("lightrag_list_documents", {}),
        ("lightrag_query", QUESTION),
        ("lightrag_get_status", {}),
        ("lightrag_get_graph", {}),
    ]
    async with running_server(home, LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES="2") as client:
        for number in range(10):
            tool, arguments = reads[number % len(reads)]
            error = error_of(await client.call_as("carol", tool, {**arguments, "workspace": f"random-{number}"}))
            assert error["error_code"] == "INVALID_PARAMETER", error
            assert error["error_message"] == f"You have no knowledge base named 'random-{number}'. Yours: default."
        assert not [path for path in home.rglob("*__kb_*") if path.is_dir()]
        for name in ("notes-1", "notes-2"):
            await call_ok(client, "carol", "lightrag_insert_text", {"text": f"The {name} list.", "workspace": name})
        over = error_of(await client.call_as("carol", "lightrag_insert_text", {"text": "x y z", "workspace": "notes-3"}))
        assert over["error_code"] == "QUOTA_EXCEEDED" and "LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES=2" in over["error_message"]
        assert str(home) not in over["error_message"]
        assert set(await listed(client, "carol")) == {"default", "notes-1", "notes-2"}
        await call_ok(client, "dave", "lightrag_insert_text", {"text": "Dave's own.", "workspace": "notes-3"})
        await call_ok(client, "carol", "lightrag_query", {**QUESTION, "workspace": "notes-1"})  # still served
