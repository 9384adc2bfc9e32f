"""A storage outage with everything on PostgreSQL (issue 7): PostgreSQL is stopped mid-run
(`pg_ctl stop -m fast`) and started again on the same port and data directory.

While it is down, calls that need the store answer STORAGE_ERROR (retryable, a message a person
can act on: no traceback, no server paths) within a bounded time, in every workspace; the front
keeps answering lightrag_health_check and the worker neither crashes nor restarts.  When the
server is back, the same calls succeed by themselves (no restart of ours), the document indexed
before the outage is there, and an upload acknowledged during the outage is not lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.backends.conftest import Backend
from tests.backends.servers import PostgresServer
from tests.backends.test_backend_behaviour import (
    REACTOR_TEXT,
    b64,
    listed,
    ok,
    processed,
    server_env,
    sources,
    wait_processed,
)
from tests.integration.harness import Client, error_of, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.backends]

QUESTION = "Who commissioned the QUASAR-5521 reactor?"
# Generous bounds against a hang (the shared machine is slow at times), not timing assertions.
ANSWER_WITHIN = 90
RECOVER_WITHIN = 180


def clear_storage_error(result: types.CallToolResult, home: Path) -> dict[str, Any]:
    error = error_of(result)
    assert error["error_code"] == "STORAGE_ERROR", error
    assert error["retryable"] is True, error
    message = error["error_message"]
    for leak in ("Traceback", str(home), "site-packages", ".py", "asyncpg", "password"):
        assert leak not in message, (leak, message)
    return error


async def bounded(call: Any) -> types.CallToolResult:
    with anyio.fail_after(ANSWER_WITHIN):
        return await call  # type: ignore[no-any-return]


async def until_ok(client: Client, tool: str, arguments: dict[str, Any], user: str | None = None) -> dict[str, Any]:
    """The first successful answer once the store is back (no restart or reconnect of ours)."""
    with anyio.fail_after(RECOVER_WITHIN):
        while True:
            result = await (client.call_as(user, tool, arguments) if user else client.call(tool, arguments))
            if not result.is_error:
                assert result.structured_content is not None
                return result.structured_content
            assert error_of(result)["error_code"] == "STORAGE_ERROR", result.content
            await anyio.sleep(1)


async def test_postgres_outage_is_a_clear_error_and_recovers_by_itself(
    home: Path, private_postgres: PostgresServer
) -> None:
    pg = private_postgres
    backend = Backend("postgres", pg.env(pg.new_database()), postgres=pg)
    async with running_server(home, None, None, **server_env(home, backend)) as client:
        reactor = await ok(client, "lightrag_insert_text", {"text": REACTOR_TEXT, "title": "reactor"})
        assert reactor["status"] == "processed"
        await ok(client, "lightrag_list_documents", {}, "carol")  # a second workspace, open before the outage
        pid = await client.worker_pid()
        assert backend.stored(home / "data")["doc_status"] == 1

        pg.stop("fast")
        query = await bounded(client.call("lightrag_query", {"query": QUESTION, "mode": "mix"}))
        clear_storage_error(query, home)
        clear_storage_error(await bounded(client.call("lightrag_list_documents", {})), home)
        clear_storage_error(await bounded(client.call_as("carol", "lightrag_list_documents", {})), home)
        clear_storage_error(await bounded(client.call_as("dave", "lightrag_query", {"query": QUESTION})), home)
        # An upload during the outage is either refused clearly or acknowledged and then kept.
        during = await bounded(
            client.call(
                "upload_to_lightrag",
                {
                    "filename": "outage.md",
                    "content": b64("The HERON-77 buoy was anchored by Lars Nilsson."),
                    "mimeType": "text/markdown",
                },
            )
        )
        acknowledged = None if during.is_error else during.structured_content
        if acknowledged is None:
            clear_storage_error(during, home)

        health = await bounded(client.call("lightrag_health_check", {}))
        assert not health.is_error and health.structured_content is not None
        worker = health.structured_content["components"]["worker"]
        assert worker["pid"] == pid and worker["state"] == "ready", worker  # no crash, no restart loop

        pg.start()
        recovered = await until_ok(client, "lightrag_query", {"query": QUESTION, "mode": "mix"})
        assert any(
            "Helena Vargas" in s["content"] and s["document_id"] == reactor["document_id"] for s in recovered["sources"]
        )
        documents = await listed(client)
        assert reactor["document_id"] in documents
        await until_ok(client, "lightrag_list_documents", {}, "carol")
        await until_ok(client, "lightrag_list_documents", {}, "dave")
        if acknowledged is not None:  # nothing acknowledged is lost
            assert (await wait_processed(client, acknowledged["track_id"], RECOVER_WITHIN))["status"] == "processed"
            found = await sources(client, "Who anchored the HERON-77 buoy?", "naive")
            assert any("Lars Nilsson" in s["content"] for s in found)
        after = await processed(client, "zebra.md", "The ZEBRA-7741 project was led by Alice Johnson in Berlin.")
        assert after["document_id"] in await listed(client)
        final = await client.health()
        assert final["components"]["worker"]["pid"] == pid and final["status"] != "unhealthy", final
        assert backend.stored(home / "data")["doc_status"] == 2 + (acknowledged is not None)
