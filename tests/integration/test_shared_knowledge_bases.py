"""Shared knowledge bases through the real server (SPEC §3): a handbook every user reads and
only its editors write, over stdio with one process per user on one data directory (as
LibreChat runs them) and over HTTP behind a gateway."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.openai_server import FakeLLMServer
from tests.integration.harness import Client, error_of, running_server
from tests.integration.http_harness import bearer, http_server, mcp_client
from tests.integration.test_llm_mode import KEY, llm_env

pytestmark = pytest.mark.anyio

SHARED = json.dumps(
    {
        "handbook": {"read": ["*"], "write": ["alice", "role:ADMIN"], "search_by_default": True},
        "board": {"read": ["email:ceo@example.org"], "write": ["email:ceo@example.org"]},
    }
)
HANDBOOK_MD = "# Leave policy\n\nEvery employee of Quistcorp gets 31 days of ORCHID-leave per year.\n"
PRIVATE_MD = "# Notes\n\nMy private locker code is KESTREL-4417.\n"
QUESTION = {"query": "How many days of ORCHID-leave does an employee get?", "mode": "naive"}
SEEN_WITHIN_S = 20.0  # a reader sees a committed document within seconds; generous on a shared machine


def upload(filename: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"filename": filename, "content": base64.b64encode(text.encode()).decode(), **extra}


def text_of(result: Any) -> str:
    return str(result.content[0].text)


def user_env(home: Path, user: str, **extra: str) -> dict[str, str]:
    return {"LIGHTRAG_MCP_USER_ID": user, "WORKING_DIR": str(home / "data"), "LIGHTRAG_MCP_SHARED_KBS": SHARED, **extra}


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call(tool, arguments)
    assert not result.is_error, result.content
    return result


async def until_seen(client: Client, arguments: dict[str, Any], wanted: str, present: bool = True) -> float:
    """Seconds until the reader's answer does (or no longer does) contain `wanted`."""
    started = anyio.current_time()
    with anyio.fail_after(SEEN_WITHIN_S):
        while (wanted in text_of(await ok(client, "lightrag_query", arguments))) != present:
            await anyio.sleep(0.25)
    return anyio.current_time() - started


async def test_readers_in_other_processes_read_while_the_writer_holds_it_and_see_its_writes(home: Path) -> None:
    async with running_server(home, **user_env(home, "alice")) as alice, running_server(home, **user_env(home, "bob")) as bob:
        await alice.wait_ready()
        await bob.wait_ready()
        stored = await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
        assert stored.structured_content["status"] == "processed"
        # alice's process still holds the handbook (its writer lets go only once idle): bob reads anyway.
        await until_seen(bob, {**QUESTION, "workspace": "handbook"}, "31 days")
        found = await ok(bob, "lightrag_query", QUESTION)  # no workspace: the handbook is searched too
        assert "31 days" in text_of(found)
        assert any(s["knowledge_base"] == "handbook" for s in found.structured_content["sources"])

        refused = error_of(await bob.call("upload_to_lightrag", upload("mine.md", PRIVATE_MD, workspace="handbook")))
        assert refused["error_code"] == "FORBIDDEN"
        assert "handbook: writing needs one of: alice, role:ADMIN" in refused["error_message"]

        document = stored.structured_content["document_id"]
        await ok(alice, "lightrag_delete_documents", {"document_ids": [document], "workspace": "handbook"})
        await until_seen(bob, {**QUESTION, "workspace": "handbook"}, "31 days", present=False)


async def test_a_role_from_the_environment_writes_and_an_outsider_is_refused_by_rule(home: Path) -> None:
    admin = user_env(home, "carol", LIGHTRAG_MCP_USER_ROLE="ADMIN")
    async with running_server(home, **admin) as carol, running_server(home, **user_env(home, "dave")) as dave:
        await carol.wait_ready()
        await dave.wait_ready()
        before = await ok(carol, "lightrag_query", {**QUESTION, "workspace": "handbook"})  # a read-only copy opens
        assert "31 days" not in text_of(before)
        await ok(carol, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))  # ...gives way
        assert "31 days" in text_of(await ok(carol, "lightrag_query", {**QUESTION, "workspace": "handbook"}))
        board = error_of(await dave.call("lightrag_query", {**QUESTION, "workspace": "board"}))
        assert board["error_code"] == "FORBIDDEN" and "board: reading needs one of: email:ceo@example.org" in board["error_message"]
        listed = (await ok(dave, "lightrag_list_knowledge_bases", {})).structured_content["knowledge_bases"]
        assert [(row["name"], row.get("rights")) for row in listed] == [("default", None), ("handbook", ["read"])]
        listed = (await ok(carol, "lightrag_list_knowledge_bases", {})).structured_content["knowledge_bases"]
        assert ("handbook", ["read", "write"]) in [(row["name"], row.get("rights")) for row in listed]


async def test_every_write_to_a_shared_knowledge_base_is_audited_with_its_writer(home: Path) -> None:
    async with running_server(home, **user_env(home, "alice")) as alice:
        await alice.wait_ready()
        await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
        logs = list((home / "data").glob("shared_handbook_*/mcp_audit.jsonl"))
        assert logs, sorted(p.name for p in (home / "data").iterdir())
        entries = [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]
        assert [(e["user"], e["tool"], e["result"]) for e in entries] == [("alice", "upload_to_lightrag", "ok")]


async def test_writers_in_two_processes_take_turns_and_a_reader_writes_nothing(home: Path) -> None:
    admin = user_env(home, "carol", LIGHTRAG_MCP_USER_ROLE="ADMIN")
    async with running_server(home, **user_env(home, "alice")) as alice, running_server(home, **admin) as carol:
        await alice.wait_ready()
        await carol.wait_ready()
        await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
        second = await ok(carol, "upload_to_lightrag", upload("travel.md", "# Travel\n\nTrains beat ZEPHYR-planes.\n", workspace="handbook"))
        assert second.structured_content["status"] == "processed"  # waited for alice's process to let go
    shared = next((home / "data").glob("shared_handbook_*"))
    before = {path.name: path.stat().st_mtime_ns for path in shared.iterdir()}
    async with running_server(home, **user_env(home, "bob")) as bob:
        await bob.wait_ready()
        for question in (QUESTION, {"query": "What beats ZEPHYR-planes?", "mode": "mix"}):
            assert "leave.md" in text_of(await ok(bob, "lightrag_query", question)) or "travel.md" in text_of(
                await ok(bob, "lightrag_query", {**question, "workspace": "handbook"})
            )
        await ok(bob, "lightrag_list_documents", {"workspace": "handbook"})
    assert {path.name: path.stat().st_mtime_ns for path in shared.iterdir()} == before


async def test_over_http_a_gateways_role_header_grants_writing_and_a_person_token_cannot_forge_one(home: Path) -> None:
    gateway, ann = "shared-gateway-secret", "ann-person-token-secret"
    tokens = f"gateway:librechat:{hashlib.sha256(gateway.encode()).hexdigest()},user:ann:{hashlib.sha256(ann.encode()).hexdigest()}"
    env = {"LIGHTRAG_MCP_HTTP_TOKENS": tokens, "LIGHTRAG_MCP_SHARED_KBS": SHARED, "LIGHTRAG_MCP_HTTP_ROLE_HEADER": "X-User-Role"}
    with http_server(home, **env) as server:
        forged = server.post(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"Authorization": f"Bearer {ann}", "X-User-Role": "ADMIN"},
        )
        assert forged.status_code == 403 and "only with a gateway token" in forged.text
        async with mcp_client(server.url, {**bearer(gateway, "erin"), "X-User-Role": "ADMIN"}) as erin:
            assert not (await erin.call("lightrag_insert_text", {"text": HANDBOOK_MD, "workspace": "handbook"})).is_error
        async with mcp_client(server.url, bearer(gateway, "frank")) as frank:
            refused = error_of(await frank.call("lightrag_insert_text", {"text": PRIVATE_MD, "workspace": "handbook"}))
            assert refused["error_code"] == "FORBIDDEN" and "role:ADMIN" in refused["error_message"]
            found = await frank.call("lightrag_query", QUESTION)  # one worker serves all: erin's write is there
            assert "31 days" in text_of(found)
        async with mcp_client(server.url, bearer(ann)) as person:
            mine = await person.call("lightrag_query", {**QUESTION, "workspace": "handbook"})
            assert "31 days" in text_of(mine)  # everyone reads; ann's namespace is token:ann


async def test_the_listing_counts_a_shared_knowledge_bases_documents_for_its_writer_and_its_readers(home: Path) -> None:
    async with running_server(home, **user_env(home, "alice")) as alice, running_server(home, **user_env(home, "bob")) as bob:
        await alice.wait_ready()
        await bob.wait_ready()
        await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
        await ok(alice, "upload_to_lightrag", upload("travel.md", "# Travel\n\nTrains beat ZEPHYR-planes.\n", workspace="handbook"))
        for client in (alice, bob):  # alice's process holds it open; bob's reads the committed files
            listed = await ok(client, "lightrag_list_knowledge_bases", {})
            rows = {row["name"]: row for row in listed.structured_content["knowledge_bases"]}
            assert (rows["handbook"]["documents"], rows["default"]["documents"]) == (2, 0)
            assert "- handbook: 2 documents, shared, you may read" in text_of(listed)


@pytest.mark.slow
async def test_with_an_llm_a_question_without_workspace_is_answered_from_the_merged_passages(home: Path) -> None:
    with FakeLLMServer(api_key=KEY, embedding_dim=64) as fake:
        async with running_server(home, **user_env(home, "alice", **llm_env(fake))) as alice:
            await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
            await ok(alice, "upload_to_lightrag", upload("notes.md", "# Notes\n\nI took 4 days of ORCHID-leave in May.\n"))
            fake.reset()
            result = await ok(alice, "lightrag_query", QUESTION)
        data = result.structured_content
        # alice's own knowledge base holds only her 4 days: the answer quotes the handbook's passage
        assert data["status"] == "answered" and "31 days" in data["answer"], data
        written = fake.requests_for(prompt_kind="answer")
        assert len(written) == 1  # one answer, written from the merged passages (none per knowledge base)
        prompt = "\n".join(str(m["content"]) for m in written[0].body["messages"] if m["role"] == "system")
        assert "[1] handbook: leave.md" in prompt  # the sources in the prompt name their knowledge base
        assert all(json.dumps(s["content"], ensure_ascii=False)[1:-1] in prompt for s in data["sources"]), data["sources"]


@pytest.mark.slow
async def test_with_an_llm_a_streamed_question_without_workspace_streams_the_one_merged_answer(home: Path) -> None:
    pieces: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message:
            pieces.append(message)

    with FakeLLMServer(api_key=KEY, embedding_dim=64) as fake:
        async with running_server(home, **user_env(home, "alice", **llm_env(fake))) as alice:
            await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
            result = await alice.call("lightrag_stream_query", QUESTION, progress_callback=on_progress)
    answer = result.structured_content["answer"]
    assert "31 days" in answer and "".join(pieces) == answer  # only the answer's pieces: no passages per knowledge base


async def test_without_an_llm_a_streamed_question_without_workspace_streams_the_merged_passages(home: Path) -> None:
    pieces: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message:
            pieces.append(message)

    async with running_server(home, **user_env(home, "alice")) as alice:
        await ok(alice, "upload_to_lightrag", upload("leave.md", HANDBOOK_MD, workspace="handbook"))
        result = await alice.call("lightrag_stream_query", QUESTION, progress_callback=on_progress)
    sources = result.structured_content["sources"]
    assert result.structured_content["status"] == "context_only" and sources[0]["knowledge_base"] == "handbook"
    assert len(pieces) == len(sources) and pieces[0].startswith("[1] leave.md: # Leave policy")
