"""One user's knowledge base held by another server process (LibreChat beside VS Code):
health says so, and a call's error names the holding process — never another user."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.harness import running_server

pytestmark = pytest.mark.anyio


async def test_a_workspace_held_by_another_process_is_busy_in_health_and_calls(home: Path) -> None:
    env = {"LIGHTRAG_MCP_USER_ID": "dana", "WORKING_DIR": str(home / "shared-data")}
    async with running_server(home, **env) as first:
        holder = (await first.wait_ready())["components"]["worker"]["pid"]
        opened = await first.call("lightrag_list_documents", {})  # opens (and locks) dana's knowledge base
        assert not opened.is_error, opened.content
        async with running_server(home, **env) as second:
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
