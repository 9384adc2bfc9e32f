"""`python -m mcp_front --transport http`: the same front and one worker behind the SDK's
Streamable HTTP session manager, driven by real clients (the Python SDK's streamable HTTP
client, the TypeScript SDK's StreamableHTTPClientTransport, the Inspector CLI) — here without
authentication, on loopback; tests/integration/test_http_auth.py covers tokens and OAuth.

One server (real worker, embedded LightRAG) serves the whole module.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import PROJECT_ROOT, PYTHON, client_env
from tests.integration.harness import process_gone
from tests.integration.http_harness import (
    MCP_ACCEPT,
    NODE,
    HttpServer,
    describe,
    http_server,
    inspector_http,
    mcp_client,
    step,
    stop,
    text_of,
    ts_http,
)

pytestmark = [pytest.mark.slow]

needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the real-client tests need Node.js")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    home = tmp_path_factory.mktemp("http-home")
    with http_server(home) as running:
        yield running


@pytest.mark.anyio
async def test_the_python_sdk_client_inserts_and_queries_over_http(server: HttpServer) -> None:
    async with mcp_client(server.url) as client:
        tools = {tool.name for tool in (await client.session.list_tools()).tools}
        assert {"lightrag_insert_text", "lightrag_query", "lightrag_health_check"} <= tools
        inserted = await client.call(
            "lightrag_insert_text", {"text": "The OSPREY-31 drone was built by Nadia Karim in Oslo.", "title": "osprey"}
        )
        assert not inserted.is_error, inserted.content
        answer = await client.call("lightrag_query", {"query": "Who built the OSPREY-31 drone?", "mode": "naive"})
        text = answer.content[0].text  # type: ignore[union-attr]
        assert "Nadia Karim" in text and "osprey" in text
        health = await client.health()
        assert (health["identity_source"], health["workspace"]) == ("default", "default")


@needs_node
def test_the_typescript_sdk_streamable_http_client_uploads_and_queries(server: HttpServer) -> None:
    content = base64.b64encode(b"# Kestrel\n\nThe KESTREL-8 kite was sewn by Ivo Petrov in Varna.\n").decode()
    doc = ts_http(
        server.home,
        server.url,
        {},
        [
            {"op": "list_tools"},
            {"op": "call", "label": "upload", "name": "upload_to_lightrag",
             "arguments": {"filename": "kestrel.md", "content": content, "mimeType": "text/markdown"}},
            {"op": "call", "label": "query", "name": "lightrag_query",
             "arguments": {"query": "Who sewed the KESTREL-8 kite?", "mode": "naive"}},
            {"op": "ping"},
        ],  # fmt: skip
    )
    assert doc["ok"] and doc["exit_code"] == 0, json.dumps(doc)[:3000]
    assert doc["session_id"] and doc["server"]["name"] == "lightrag-mcp"
    assert "lightrag_query" in [tool["name"] for tool in step(doc, "list_tools")["result"]["tools"]]
    assert step(doc, "upload")["result"]["structuredContent"]["status"] == "processed"
    answer = text_of(step(doc, "query")["result"])
    assert "Ivo Petrov" in answer and "kestrel.md" in answer


@needs_node
def test_the_inspector_cli_over_http_lists_uploads_and_queries(server: HttpServer) -> None:
    proc, listed = inspector_http(server.home, server.url, {}, "tools/list")
    assert proc.returncode == 0 and listed is not None, describe(proc)
    assert "upload_to_lightrag" in {tool["name"] for tool in listed["result"]["tools"]}
    content = base64.b64encode(b"# Heron\n\nThe HERON-5 barge carries salt to Ghent.\n").decode()
    upload = json.dumps({"filename": "heron.md", "content": content, "mimeType": "text/markdown"})
    proc, uploaded = inspector_http(
        server.home, server.url, {}, "tools/call", "--tool-name", "upload_to_lightrag", "--tool-args-json", upload
    )
    assert proc.returncode == 0 and uploaded is not None, describe(proc)
    assert uploaded["result"]["structuredContent"]["status"] == "processed"
    query = json.dumps({"query": "Where does the HERON-5 barge carry salt?", "mode": "naive"})
    proc, answered = inspector_http(
        server.home, server.url, {}, "tools/call", "--tool-name", "lightrag_query", "--tool-args-json", query
    )
    assert proc.returncode == 0 and answered is not None, describe(proc)
    assert "Ghent" in text_of(answered["result"]) and "heron.md" in text_of(answered["result"])


def test_healthz_answers_the_status_only_without_authentication(server: HttpServer) -> None:
    response = httpx.get(f"{server.base}/healthz", timeout=10)
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.anyio
async def test_without_authentication_identity_follows_the_stdio_rules(server: HttpServer) -> None:
    from mcp_front.identity import workspace_for

    async with mcp_client(server.url) as client:
        result = await client.call_as("ann", "lightrag_health_check", {})
        assert result.structured_content is not None
        assert result.structured_content["identity_source"] == "param"
        assert result.structured_content["workspace"] == workspace_for("ann", "default")


def test_without_authentication_the_user_header_is_refused(server: HttpServer) -> None:
    # Anyone on loopback could write any user into it: 403, and no session is opened.
    response = server.post(headers={"X-User-Id": "ann"})
    assert response.status_code == 403 and "mcp-session-id" not in response.headers
    assert "X-User-Id header is accepted only with a gateway token" in response.json()["error"]["message"]


def _open_session(server: HttpServer) -> dict[str, str]:
    """A raw session on the 2025-11-25 protocol (resumable streams), initialized."""
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }  # fmt: skip
    opened = server.post(init)
    headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    assert server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    return headers


def _replay(server: HttpServer, headers: dict[str, str], last_event_id: str) -> list[dict[str, object]]:
    """The messages a GET with Last-Event-ID replays (the stream then stays open: read briefly)."""
    messages = []
    try:
        with httpx.stream(
            "GET",
            server.url,
            headers={**headers, "last-event-id": last_event_id, "accept": "text/event-stream"},
            timeout=httpx.Timeout(10, read=2),
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    messages.append(json.loads(line[6:]))
                    break
    except httpx.ReadTimeout:
        pass
    return messages


def test_a_dropped_stream_is_replayed_from_last_event_id_to_its_own_session_only(server: HttpServer) -> None:
    ann, bob = _open_session(server), _open_session(server)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lightrag_health_check", "arguments": {}}}
    answered = server.post(call, ann)
    event_ids = [line[4:] for line in answered.text.splitlines() if line.startswith("id: ")]
    assert len(event_ids) >= 2, answered.text[:500]  # a priming event, then the response
    replayed = _replay(server, ann, event_ids[0])
    assert [message["id"] for message in replayed] == [2]
    assert _replay(server, bob, event_ids[0]) == []  # another session's event id replays nothing


def test_the_front_refuses_a_body_over_the_limit_before_reading_it(server: HttpServer) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (30 * 2**20) + b'"}'
    response = httpx.post(server.url, content=body, headers=MCP_ACCEPT, timeout=60)
    assert response.status_code == 413


def test_ping_worker_reports_a_running_http_servers_worker(server: HttpServer) -> None:
    script = PROJECT_ROOT / "scripts" / "ping_worker.py"
    done = subprocess.run(
        [PYTHON, str(script), "--url", server.url, "--count", "3", "--json"],
        env=client_env(server.home), capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:] + done.stdout.decode()[-2000:]
    report = orjson.loads(done.stdout)
    assert report["healthy"] and report["pings"] == {"sent": 3, "answered": 3} and report["url"] == server.url
    assert report["versions"]["lightrag"] == "1.5.7" and report["status"]["pid"] == report["pid"]
    assert report["rtt_ms"]["min"] <= report["rtt_ms"]["median"] <= report["rtt_ms"]["max"]
    refused = subprocess.run(
        [PYTHON, str(script), "--url", f"{server.base}/nowhere", "--count", "1", "--json"],
        env=client_env(server.home), capture_output=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1 and orjson.loads(refused.stdout)["healthy"] is False


@pytest.mark.anyio
async def test_stopping_the_server_stops_its_worker(home: Path) -> None:
    with http_server(home) as running:
        async with mcp_client(running.url) as client:
            pid = await client.worker_pid()
        stop(running.process)
    assert process_gone(pid), f"worker {pid} outlived the HTTP server"


def test_a_network_bind_without_authentication_fails_at_start_up(home: Path) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "mcp_front", "--transport", "http"],
        env=client_env(home, LIGHTRAG_MCP_HTTP_HOST="0.0.0.0"), cwd=home, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "LIGHTRAG_MCP_HTTP_HOST" in lines[0] and "LIGHTRAG_MCP_HTTP_TOKENS" in lines[0]
