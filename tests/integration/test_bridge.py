"""The front and the worker over real stdio: listing, routing, validation, identity,
progress, cancellation and timeouts."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from mcp_front.identity import META_USER_KEY, workspace_for
from tests.integration.harness import error_of, running_server

pytestmark = pytest.mark.anyio
DEBUG = {"LIGHTRAG_MCP_DEBUG_METHODS": "1"}


async def test_tools_are_listed_before_the_worker_is_ready(home: Path) -> None:
    # A worker that takes its time to start: initialize and tools/list must not wait for it.
    slow = f"sh -c 'sleep 30; exec {__import__('sys').executable} -m rag_worker'"
    async with running_server(home, LIGHTRAG_MCP_WORKER_COMMAND=slow) as client:
        tools = await client.session.list_tools()
        assert "lightrag_health_check" in [tool.name for tool in tools.tools]
        health = await client.health()
        assert health["status"] == "starting"  # not "degraded": nothing has failed
        assert health["components"]["worker"]["state"] == "starting"


async def test_health_reports_a_ready_worker_with_its_versions(home: Path) -> None:
    async with running_server(home) as client:
        health = await client.wait_ready()
        worker = health["components"]["worker"]
        assert health["status"] == "healthy"
        assert worker["versions"]["lightrag"] == "1.5.7"
        assert worker["rss_mb"] > 0 and health["components"]["front"]["rss_mb"] > 0
        assert health["worker_details"]["pid"] == worker["pid"]
        alias = await client.call("health_check", {})
        assert not alias.is_error and alias.structured_content["status"] == "healthy"


async def test_unknown_tool_is_a_protocol_error_and_the_server_keeps_serving(home: Path) -> None:
    async with running_server(home) as client:
        with pytest.raises(MCPError) as caught:
            await client.call("no_such_tool", {})
        assert caught.value.code == -32602 and "Unknown tool" in caught.value.message
        assert (await client.health())["version"]


async def test_schema_violations_are_tool_errors_naming_the_field(home: Path) -> None:
    async with running_server(home) as client:
        error = error_of(await client.call("lightrag_health_check", {"include_detailed": "yes"}))
        assert error["error_code"] == "INVALID_PARAMETER"
        assert "include_detailed" in error["error_message"]
        error = error_of(await client.call("lightrag_health_check", {"userId": "x"}))
        assert "unknown field(s) userId" in error["error_message"]


async def test_a_stray_print_in_the_worker_does_not_break_a_frame(home: Path) -> None:
    async with running_server(home, **DEBUG) as client:
        pid = await client.worker_pid()
        result = await client.call("lightrag_debug", {"action": "print", "text": '{"jsonrpc": "2.0", "id": 1}'})
        assert not result.is_error and result.structured_content["pid"] == pid
        health = await client.health()
        assert health["components"]["worker"]["pid"] == pid and health["components"]["worker"]["bad_frames"] == 0


async def test_identity_from_meta_param_and_environment(home: Path) -> None:
    async with running_server(home) as client:
        await client.wait_ready()
        by_meta = await client.call("lightrag_health_check", {}, meta={META_USER_KEY: "alice"})
        assert by_meta.structured_content["workspace"] == workspace_for("alice", "default")
        assert by_meta.structured_content["identity_source"] == "meta"
        by_param = await client.call_as("bob", "lightrag_health_check", {})
        assert by_param.structured_content["workspace"] == workspace_for("bob", "default")
        assert by_param.structured_content["identity_source"] == "param"
    async with running_server(home, LIGHTRAG_MCP_USER_ID="carol") as client:
        mine = await client.call("lightrag_health_check", {})
        assert mine.structured_content["workspace"] == workspace_for("carol", "default")
        assert error_of(await client.call_as("mallory", "lightrag_health_check", {}))["error_code"] == "FORBIDDEN"
        other = await client.call("lightrag_health_check", {}, meta={META_USER_KEY: "mallory"})
        assert error_of(other)["error_code"] == "FORBIDDEN"


async def test_progress_notifications_reach_a_client_that_asked(home: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with running_server(home, **DEBUG) as client:
        await client.wait_ready()
        result = await client.call("lightrag_debug", {"action": "sleep", "seconds": 0.3}, progress_callback=on_progress)
        assert not result.is_error
        assert [p for p, _, _ in seen] == [0, 1] and seen[-1][2] == "done"


async def test_a_timed_out_call_is_cancelled_in_the_worker(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_CALL_TIMEOUT="1", **DEBUG) as client:
        pid = await client.worker_pid()
        error = error_of(await client.call("lightrag_debug", {"action": "sleep", "seconds": 30}))
        assert error["error_code"] == "PROCESSING_TIMEOUT" and error["retryable"] is True
        with anyio.fail_after(10):
            while (await client.health())["worker_details"]["requests_cancelled"] < 1:
                await anyio.sleep(0.1)
        assert (await client.health())["components"]["worker"]["pid"] == pid


async def test_client_cancellation_is_forwarded_to_the_worker(home: Path) -> None:
    async with running_server(home, **DEBUG) as client:
        pid = await client.worker_pid()
        with anyio.move_on_after(1):
            await client.call("lightrag_debug", {"action": "sleep", "seconds": 60})
        with anyio.fail_after(10):
            while (await client.health())["worker_details"]["requests_cancelled"] < 1:
                await anyio.sleep(0.1)
        health = await client.health()
        assert health["components"]["worker"]["pid"] == pid and health["components"]["worker"]["in_flight"] == 0


async def test_cpu_work_in_threads_leaves_pings_answered(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_PING_INTERVAL="0.2", LIGHTRAG_MCP_PING_TIMEOUT="0.5", **DEBUG) as client:
        pid = await client.worker_pid()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(client.call, "lightrag_debug", {"action": "cpu", "seconds": 2})
        health = await client.health()
        assert health["components"]["worker"]["pid"] == pid and health["components"]["worker"]["restarts"] == 0


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"LIGHTRAG_MCP_TOOLS": "lightrag_health_check,nope"}, "LIGHTRAG_MCP_TOOLS"),
        ({"WORKING_DIR": "{home}/a-file/data"}, "WORKING_DIR"),  # not writable: a file is in the way
        ({"LIGHTRAG_KV_STORAGE": "PGKVStorage"}, "POSTGRES_USER"),
        ({"LIGHTRAG_VECTOR_STORAGE": "MilvusVectorDBStorage", "MILVUS_URI": "http://127.0.0.1:9"}, "MILVUS_URI"),
    ],
    ids=["tools", "data-dir", "storage-variables", "storage-unreachable"],
)
def test_bad_configuration_stops_the_front_with_one_line(home: Path, env: dict[str, str], named: str) -> None:
    import subprocess

    from tests.conftest import PYTHON, client_env

    (home / "a-file").write_text("not a directory")
    done = subprocess.run(
        [PYTHON, "-m", "mcp_front"],
        env=client_env(home, **{key: value.format(home=home) for key, value in env.items()}),
        cwd=home,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines


async def test_health_with_dependencies_opens_the_callers_lightrag_offline(home: Path) -> None:
    async with running_server(home) as client:
        await client.wait_ready()
        health = await client.health(check_dependencies=True)
        workspace = health["components"]["workspace"]
        assert workspace["status"] == "connected" and workspace["workspace"] == "default"
        assert workspace["storages"] == {  # the default: the embedded engine, started by the server
            "kv": "PGKVStorage",
            "vector": "PGVectorStorage",
            "graph": "PGTableGraphStorage",
            "doc_status": "PGDocStatusStorage",
        }
        assert workspace["embedding_dim"] == 384
        assert any("LLM_BINDING" in note for note in health["notes"])  # says how to get answers
        assert (home / ".local/share/lightrag-mcp/default").is_dir()


async def test_storage_fallback_is_opt_in_loud_and_serves_new_knowledge_bases_locally(home: Path) -> None:
    import base64

    env = {
        "LIGHTRAG_VECTOR_STORAGE": "MilvusVectorDBStorage",
        "MILVUS_URI": "http://127.0.0.1:9",  # nothing listens there
        "LIGHTRAG_MCP_STORAGE_FALLBACK": "true",
    }
    async with running_server(home, **env) as client:
        health = await client.wait_ready()
        assert health["status"] == "degraded", health
        assert any("STORAGE FALLBACK" in note for note in health["notes"])
        upload = await client.call(
            "upload_to_lightrag",
            {"filename": "kiwi.md", "content": base64.b64encode(b"# Kiwi\n\nThe KIWI-3 rover maps caves.").decode()},
        )
        assert not upload.is_error and upload.structured_content["status"] == "processed"
    marker = next(home.rglob("storage.json"))
    assert '"fallback": true' in marker.read_text()  # it stays local, never split across stores
