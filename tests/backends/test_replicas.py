"""Replicas on one PostgreSQL database (issue 15, part 3): two servers with data directories of
their own serve the same user from the same database.  A workspace is held by one replica at a
time (a PostgreSQL advisory lock); the other waits briefly, then answers WORKSPACE_BUSY naming
the holder, and takes the workspace once the holder lets go of it (idle sweep).  Nothing
acknowledged is lost, nothing is indexed twice.  A replica whose lock connection is killed
closes the workspace rather than write it unprotected, and reopens it under a new lock.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.backends.servers import PostgresServer
from tests.fixtures.documents import large_pdf_page_text
from tests.integration.harness import Client, error_of, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.backends]

USER = "alice"
SHORT_NOTES = 6
RETRY_S = 0.5


def replica_env(root: Path, database: dict[str, str], **extra: str) -> dict[str, str]:
    root.mkdir(exist_ok=True)  # the replica's HOME and working directory
    return {
        **database,
        "WORKING_DIR": str(root / "data"),  # each replica its own local directory
        "LIGHTRAG_MCP_USER_ID": USER,
        "LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS": "1",
        "LIGHTRAG_MCP_WAIT_SECONDS": "120",  # an acknowledged upload answers once indexed
        **extra,
    }


def note(index: int) -> str:
    return (
        f"# Inspection note {index}\n\nThe QX-{index:04d} valve at Pumping Station {index} was inspected by "
        f"Engineer Mara Lind{index}. Mara Lind{index} replaced the QX-{index:04d} seal in week {index + 10}.\n"
    )


def long_report() -> str:
    rnd = random.Random(5)
    return "\n\n".join("\n".join(large_pdf_page_text(rnd, page)) for page in range(1, 31))


async def upload_until_acknowledged(
    client: Client, filename: str, text: str, other_worker_pid: int, refusals: list[dict[str, Any]]
) -> dict[str, Any]:
    """Upload; while the other replica holds the knowledge base, the refusal must name it: retry."""
    arguments = {"filename": filename, "content": base64.b64encode(text.encode()).decode(), "mimeType": "text/markdown"}
    with anyio.fail_after(600):
        while True:
            result = await client.call("upload_to_lightrag", arguments)
            if not result.is_error:
                assert result.structured_content is not None
                return result.structured_content
            refused = error_of(result)
            assert refused["error_code"] == "WORKSPACE_BUSY", refused
            assert f"pid {other_worker_pid}" in refused["error_message"] and "replica" in refused["error_message"]
            assert "X-User-Id" in refused["suggested_action"] and refused["retryable"]
            refusals.append(refused)
            await anyio.sleep(RETRY_S)


async def list_until_served(client: Client) -> dict[str, dict[str, Any]]:
    """The replica's listing, once the other replica has let go of the knowledge base."""
    with anyio.fail_after(300):
        while True:
            result = await client.call("lightrag_list_documents", {"limit": 200})
            if not result.is_error:
                assert result.structured_content is not None
                documents = result.structured_content["documents"]
                names = [document["filename"] for document in documents]
                assert len(names) == len(set(names)), names  # each document once
                return {document["filename"]: document for document in documents}
            assert error_of(result)["error_code"] == "WORKSPACE_BUSY"
            await anyio.sleep(RETRY_S)


def rows(server: PostgresServer, database: str, sql: str) -> list[str]:
    return server.psql(database, sql).split()


async def test_two_replicas_serving_one_user_lose_nothing_and_index_nothing_twice(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    database = postgres_server.new_database()
    env = postgres_server.env(database)
    async with (
        running_server(tmp_path / "one", **replica_env(tmp_path / "one", env)) as one,
        running_server(tmp_path / "two", **replica_env(tmp_path / "two", env)) as two,
    ):
        pid_one, pid_two = await one.worker_pid(), await two.worker_pid()
        documents = {f"note-{index}.md": note(index) for index in range(SHORT_NOTES)}
        documents["report.md"] = long_report()
        acknowledged: dict[str, dict[str, Any]] = {}
        refusals: list[dict[str, Any]] = []

        async def upload(client: Client, other_pid: int, filename: str) -> None:
            acknowledged[filename] = await upload_until_acknowledged(
                client, filename, documents[filename], other_pid, refusals
            )

        async with anyio.create_task_group() as tg:
            # Replica one takes the knowledge base with a long upload; the rest go to both at once.
            tg.start_soon(upload, one, pid_two, "report.md")
            await anyio.sleep(1)
            for index in range(SHORT_NOTES):
                client, other = (one, pid_two) if index % 2 else (two, pid_one)
                tg.start_soon(upload, client, other, f"note-{index}.md")

        assert sorted(acknowledged) == sorted(documents)
        assert all(result["status"] == "processed" for result in acknowledged.values()), acknowledged
        assert refusals, "replica two was never refused while replica one held the knowledge base"

        for client in (one, two):
            listed = await list_until_served(client)
            assert sorted(listed) == sorted(documents)
            assert all(document["status"] == "processed" for document in listed.values()), listed

    # The database holds each document once, and each chunk once.
    workspace = rows(postgres_server, database, "SELECT DISTINCT workspace FROM lightrag_doc_status")
    assert len(workspace) == 1, workspace
    statuses = rows(postgres_server, database, "SELECT status FROM lightrag_doc_status")
    assert sorted(statuses) == ["processed"] * len(documents)
    chunks = int(rows(postgres_server, database, "SELECT count(*) FROM lightrag_doc_chunks")[0])
    assert chunks == sum(int(result["chunks"]) for result in acknowledged.values()), chunks
    repeated = rows(postgres_server, database, "SELECT 1 FROM lightrag_doc_chunks GROUP BY content HAVING count(*) > 1")
    assert repeated == []


async def test_a_replica_whose_lock_connection_is_killed_closes_the_workspace_and_reopens_it_under_a_new_lock(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    database = postgres_server.new_database()
    env = postgres_server.env(database)
    lock_sessions = "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'lightrag-mcp %'"
    held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
    async with running_server(tmp_path / "one", **replica_env(tmp_path / "one", env, LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS="0")) as client:
        pid = await client.worker_pid()
        first = await upload_until_acknowledged(client, "note-1.md", note(1), pid, [])
        assert first["status"] == "processed"
        assert (await client.health())["worker_details"]["workspaces_open"] == 1
        [session] = rows(postgres_server, database, lock_sessions)
        assert rows(postgres_server, database, held) == ["1"]

        postgres_server.psql(database, f"SELECT pg_terminate_backend({session})")
        with anyio.fail_after(30):
            while (await client.health())["worker_details"]["workspaces_open"] != 0:  # closed, not written unprotected
                await anyio.sleep(0.2)

        second = await upload_until_acknowledged(client, "note-2.md", note(2), pid, [])
        assert second["status"] == "processed"
        [new_session] = rows(postgres_server, database, lock_sessions)
        assert new_session != session and rows(postgres_server, database, held) == ["1"]
        listed = await list_until_served(client)
        assert sorted(listed) == ["note-1.md", "note-2.md"]
