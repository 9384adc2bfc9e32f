"""Run the real server over Streamable HTTP (`python -m mcp_front --transport http`) on a free
127.0.0.1 port, and talk to it: the Python SDK's streamable HTTP client, the TypeScript SDK's
(tests/clients/ts_http_client.mjs), the Inspector CLI, and plain HTTP for what clients refuse
to send.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import PROJECT_ROOT, PYTHON, client_env
from tests.integration.harness import Client

CLIENTS_DIR = PROJECT_ROOT / "tests" / "clients"
NODE = shutil.which("node")
START_TIMEOUT = 120.0
RUN_TIMEOUT = 120.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
MCP_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:<port>
    url: str  # the MCP endpoint
    home: Path
    log: Path

    @property
    def data_dir(self) -> Path:
        return self.home / ".local" / "share" / "lightrag-mcp"

    def workspaces(self) -> set[str]:
        """The knowledge-base directories under the data directory."""
        return {path.name for path in self.data_dir.iterdir() if path.is_dir() and path.name != "run"}

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def post(self, body: Any = None, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        """One raw POST to the MCP endpoint (an `initialize` unless told otherwise)."""
        return httpx.post(self.url, json=INITIALIZE if body is None else body, headers={**MCP_ACCEPT, **(headers or {})}, timeout=30, **kw)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).json().get("status") == "ok"
    except (httpx.HTTPError, ValueError):
        return False


@contextlib.contextmanager
def http_server(home: Path, **env: str) -> Iterator[HttpServer]:
    """The server on a free port, its worker ready (/healthz says ok); stopped with SIGTERM."""
    port = int(env.pop("LIGHTRAG_MCP_HTTP_PORT", 0)) or free_port()
    base = f"http://127.0.0.1:{port}"
    environment = client_env(home, LIGHTRAG_MCP_TRANSPORT="http", LIGHTRAG_MCP_HTTP_PORT=str(port), **env)
    log = home / "http-server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [PYTHON, "-m", "mcp_front"], env=environment, cwd=home, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr
        )
    server = HttpServer(process, base, f"{base}{env.get('LIGHTRAG_MCP_HTTP_PATH', '/mcp')}", home, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(base):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the HTTP server did not become healthy (exit {process.poll()}):\n{server.stderr()}")
            time.sleep(0.2)
        yield server
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    return int(process.returncode)


@contextlib.asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The Python SDK's streamable HTTP client, initialized (`Client` as over stdio)."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield Client(session)


def bearer(token: str, user: str | None = None, header: str = "X-User-Id") -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if user is not None:
        headers[header] = user
    return headers


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"command: {proc.args!r}\nexit code: {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"


def node_env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1"}


def ts_http(home: Path, url: str, headers: dict[str, str], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Run tests/clients/ts_http_client.mjs; its JSON document."""
    assert NODE is not None
    spec = {"url": url, "headers": headers, "timeout_ms": 60_000, "steps": steps}
    proc = subprocess.run(
        [NODE, str(CLIENTS_DIR / "ts_http_client.mjs")],
        input=json.dumps(spec),
        cwd=CLIENTS_DIR,
        env=node_env(home),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    try:
        doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(f"ts_http_client printed no JSON document\n{describe(proc)}") from None
    doc["exit_code"] = proc.returncode
    return doc


def inspector_http(
    home: Path, url: str, headers: dict[str, str], method: str, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """`inspector --cli --transport http --server-url URL --header ... --method METHOD ...`."""
    assert NODE is not None
    package = CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "inspector"
    binary = package / json.loads((package / "package.json").read_text())["bin"]["mcp-inspector"]
    flags = [arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")]
    cmd = [
        NODE, str(binary), "--cli", "--format", "json", "-q", "--transport", "http", "--server-url", url,
        "--stored-auth-only", "--method", method, *extra, *flags,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=home, env=node_env(home), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return proc, doc


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")


def step(doc: dict[str, Any], label: str) -> dict[str, Any]:
    for entry in doc["steps"]:
        if entry["label"] == label:
            return entry
    raise AssertionError(f"no step {label!r} in {[entry['label'] for entry in doc['steps']]}")
