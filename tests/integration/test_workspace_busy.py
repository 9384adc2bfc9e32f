"""One user's knowledge base held by another server process (LibreChat's racing connections, or
VS Code beside LibreChat): an idle holder lets go within seconds and the second process serves the
call; a holder that stays busy longer than the call may wait leaves it WORKSPACE_BUSY, naming the
holding process — never another user. Health says the knowledge base is held, and by whom."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.documents import make_large_pdf
from tests.integration.harness import running_server
from tests.integration.test_core_flow import upload

pytestmark = pytest.mark.anyio


async def test_a_second_process_of_the_same_user_is_served_once_the_idle_holder_lets_go(home: Path) -> None:
    env = {"LIGHTRAG_MCP_USER_ID": "dana", "WORKING_DIR": str(home / "shared-data")}
    async with running_server(home, **env) as first:
        await first.wait_ready()
        added = await first.call("lightrag_insert_text", {"text": "The Kestrel bridge is teal.", "title": "a.md"})
        assert not added.is_error, added.content  # dana's knowledge base is open (and locked) here
        async with running_server(home, **env) as second:
            await second.wait_ready()
            listed = await second.call("lightrag_list_documents", {})
            assert not listed.is_error, listed.content  # not WORKSPACE_BUSY: the first let go of it
            assert [d["filename"] for d in listed.structured_content["documents"]] == ["a.md"]  # type: ignore[index]
        again = await first.call("lightrag_list_documents", {})  # and the first gets it back
        assert not again.is_error, again.content


async def test_a_workspace_busy_in_another_process_is_busy_in_health_and_calls(home: Path) -> None:
    env = {"LIGHTRAG_MCP_USER_ID": "dana", "WORKING_DIR": str(home / "shared-data")}
    async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="1", **env) as first:
        holder = (await first.wait_ready())["components"]["worker"]["pid"]
        # ~100 pages: the first process indexes for minutes, answering after 1 s with a track id.
        started = await upload(first, "annual-report.pdf", make_large_pdf(1.0, seed=17), "application/pdf")
        assert started["status"] != "processed", started
        async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="3", **env) as second:
            health = await second.wait_ready()
            assert health["status"] == "degraded", health
            assert health["components"]["workspace"]["status"] == "busy"
            assert health["components"]["workspace"]["pid"] == holder
            assert any("held by another server process" in note for note in health["notes"]), health["notes"]

            refused = await second.call("lightrag_list_documents", {})
            assert refused.is_error
            error = refused.structured_content
            assert error["error_code"] == "WORKSPACE_BUSY" and error["retryable"] is True
            assert f"pid {holder}" in error["error_message"] and "dana" not in error["error_message"]
