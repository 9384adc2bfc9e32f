"""The deployment as configured: `python -m mcp_front --transport http` started with the compose
file's environment for the lightrag-mcp service (over the Dockerfile's), reached EXACTLY as
deploy/librechat.yaml says — its URL, its headers expanded the LibreChat way — by the Python
SDK client and by the pinned TypeScript SDK's StreamableHTTPClientTransport (the stack
LibreChat is built on, tests/clients/ts_http_client.mjs).

No docker here: the service's volumes become temporary folders and it binds 127.0.0.1 on a
free port. The Python client resolves the service name (`lightrag-mcp:8765`) to that port the
way Docker's network would, its Host header staying the service's, so the allowed hosts are
tested as configured; the TypeScript client sends the same headers to the loopback address.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import shlex
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp.types as types
import pytest
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import PROJECT_ROOT, PYTHON, client_env
from tests.integration.http_harness import NODE, free_port, stop, ts_http
from tests.integration.http_harness import text_of as text_of_json
from tests.unit.test_deploy_files import SERVICE, compose, dockerfile_env, instructions

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SDK_PKG = PROJECT_ROOT / "tests" / "clients" / "node_modules" / "@modelcontextprotocol" / "sdk"
LIBRECHAT = yaml.safe_load((PROJECT_ROOT / "deploy" / "librechat.yaml").read_text())["mcpServers"]["lightrag"]
FILE_ID = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"


def user_id() -> str:
    """A fresh LibreChat-style user id (a 24-hex-digit ObjectId)."""
    return secrets.token_hex(12)


# --- the service as compose would run it ---------------------------------------------------------


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` (an unset required one fails)."""

    def one(match: re.Match[str]) -> str:
        name, operator, argument = match.group(1), match.group(2) or "", match.group(3) or ""
        if variables.get(name):
            return variables[name]
        assert operator != ":?", f"compose would stop: {argument}"
        return argument if operator == ":-" else ""

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:[-?])?([^}]*)\}", one, value)


def service_environment(variables: dict[str, str], volumes: dict[str, Path], port: int) -> dict[str, str]:
    """The server's variables in the container (Dockerfile ENV, then the compose service's), with
    each mounted path mapped to its temporary folder, bound to 127.0.0.1:`port`."""
    env = {k: v for k, v in dockerfile_env().items() if k.startswith("LIGHTRAG_") or k == "WORKING_DIR"}
    env.update({str(k): interpolate(str(v), variables) for k, v in compose()["services"][SERVICE]["environment"].items()})
    for name, value in env.items():
        parts = value.split(os.pathsep) if name == "LIGHTRAG_MCP_ALLOWED_DIRS" else [value]
        for target, folder in volumes.items():
            parts = [str(folder) + part[len(target) :] if part == target or part.startswith(target + "/") else part for part in parts]
        env[name] = os.pathsep.join(parts)
    env.update(LIGHTRAG_MCP_HTTP_HOST="127.0.0.1", LIGHTRAG_MCP_HTTP_PORT=str(port))
    return env


def server_command() -> list[str]:
    """The image's CMD, with this interpreter as its `python`."""
    command = json.loads(instructions("CMD")[0])
    assert command[0] == "python"
    return [PYTHON, *command[1:]]


@dataclass
class Deployment:
    port: int
    uploads: Path
    variables: dict[str, str]  # the deploy .env: the gateway token and its digest
    home: Path

    def headers(self, user: str) -> dict[str, str]:
        """librechat.yaml's headers as LibreChat sends them for `user`."""
        return {
            name: interpolate(
                value.replace("{{LIBRECHAT_USER_ID}}", user)
                .replace("{{LIBRECHAT_USER_ROLE}}", "USER")
                .replace("{{LIBRECHAT_USER_EMAIL}}", f"{user}@example.org"),
                self.variables,
            )
            for name, value in LIBRECHAT["headers"].items()
        }

    def attach(self, user: str, name: str, text: str) -> Path:
        """A chat attachment, stored the way LibreChat stores it."""
        folder = self.uploads / user
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{FILE_ID}__{name}"
        path.write_text(text)
        return path


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    base = tmp_path_factory.mktemp("deploy")
    mounts = [str(volume).split(":") for volume in compose()["services"][SERVICE]["volumes"]]
    volumes = {target: base / target.strip("/").replace("/", "_") for _, target, *_ in mounts}
    for folder in volumes.values():
        folder.mkdir()
    token = secrets.token_urlsafe(32)
    variables = {"LIGHTRAG_MCP_GATEWAY_TOKEN": token, "LIGHTRAG_MCP_GATEWAY_TOKEN_SHA256": hashlib.sha256(token.encode()).hexdigest()}
    port = free_port()
    home = base / "home"
    home.mkdir()
    stderr = base / "server.log"
    env = client_env(home, **service_environment(variables, volumes, port))
    with stderr.open("wb") as log:
        server = subprocess.Popen(server_command(), env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_healthy(port, server, stderr)
        yield Deployment(port, volumes["/app/uploads"], variables, home)
    finally:
        stop(server)


def wait_healthy(port: int, server: subprocess.Popen[bytes], stderr: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server exited ({server.returncode}):\n{stderr.read_text()[-4000:]}"
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                if json.loads(answer.read())["status"] == "ok":
                    return
        time.sleep(0.3)
    raise AssertionError(f"no healthy /healthz within {timeout} s:\n{stderr.read_text()[-4000:]}")


# --- the clients ---------------------------------------------------------------------------------


class ServiceNetwork(httpx2.AsyncHTTPTransport):
    """Docker's network for one service: requests to `lightrag-mcp:8765` reach 127.0.0.1:`port`,
    their Host header unchanged."""

    def __init__(self, service: tuple[str, int], port: int) -> None:
        super().__init__()
        self._service = service
        self._port = port

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if (request.url.host, request.url.port) == self._service:
            request.url = request.url.copy_with(host="127.0.0.1", port=self._port)
        return await super().handle_async_request(request)


@contextlib.asynccontextmanager
async def python_client(deployment: Deployment, user: str) -> AsyncIterator[ClientSession]:
    url = urlsplit(LIBRECHAT["url"])
    network = ServiceNetwork((str(url.hostname), int(url.port or 80)), deployment.port)
    timeout = httpx2.Timeout(30, read=LIBRECHAT["timeout"] / 1000)
    async with (
        httpx2.AsyncClient(headers=deployment.headers(user), transport=network, timeout=timeout) as http,
        streamable_http_client(LIBRECHAT["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def ts_client(deployment: Deployment, user: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The calls' results from the TypeScript SDK's client, with LibreChat's headers for `user`."""
    if NODE is None or not (SDK_PKG / "package.json").is_file():
        pytest.fail("the TypeScript SDK client needs node and `npm ci` in tests/clients", pytrace=False)
    url = urlsplit(LIBRECHAT["url"])._replace(netloc=f"127.0.0.1:{deployment.port}").geturl()
    steps = [{"op": "call", "name": name, "arguments": arguments} for name, arguments in calls]
    doc = ts_http(deployment.home, url, deployment.headers(user), steps)
    assert doc["ok"], doc
    return [step["result"] for step in doc["steps"]]


def text_of(result: types.CallToolResult | dict[str, Any]) -> str:
    if isinstance(result, dict):
        return text_of_json(result)
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def upload(name: str, text: str) -> dict[str, Any]:
    return {"filename": name, "content": base64.b64encode(text.encode()).decode(), "mimeType": "text/markdown"}


# --- the tests -----------------------------------------------------------------------------------


def test_the_images_health_check_passes_against_the_running_service(deployment: Deployment) -> None:
    [check] = instructions("HEALTHCHECK")
    command = check.split(" CMD ", 1)[1]
    env = {**os.environ, "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "LIGHTRAG_MCP_HTTP_PORT": str(deployment.port)}
    shell = f"python() {{ {shlex.quote(PYTHON)} \"$@\"; }}; {command}"  # the image's `python` is this one
    assert subprocess.run(["/bin/sh", "-c", shell], env=env, timeout=30).returncode == 0


async def test_two_librechat_users_each_see_only_their_own_documents(deployment: Deployment) -> None:
    alice, bob = user_id(), user_id()
    async with python_client(deployment, alice) as session:
        stored = await session.call_tool("upload_to_lightrag", upload("heron.md", "# Heron\n\nThe HERON-12 drone was built by Alice Moreau in Oslo.\n"))
        assert not stored.is_error and "Indexed 'heron.md'" in text_of(stored), text_of(stored)
    bobs = ts_client(
        deployment,
        bob,
        [
            ("upload_to_lightrag", upload("lynx.md", "# Lynx\n\nThe LYNX-40 rover was built by Bob Novak in Lisbon.\n")),
            ("query_lightrag", {"query": "Who built the LYNX-40 rover?"}),
            ("query_lightrag", {"query": "Who built the HERON-12 drone?"}),
            ("lightrag_list_documents", {}),
        ],
    )
    assert not any(result.get("isError") for result in bobs), bobs
    assert "Bob Novak" in text_of(bobs[1])
    assert "Alice Moreau" not in text_of(bobs[2]) and "heron.md" not in text_of(bobs[3])
    async with python_client(deployment, alice) as session:
        own = await session.call_tool("query_lightrag", {"query": "Who built the HERON-12 drone?"})
        other = await session.call_tool("query_lightrag", {"query": "Who built the LYNX-40 rover?"})
        listed = await session.call_tool("lightrag_list_documents", {})
    assert "Alice Moreau" in text_of(own)
    assert "Bob Novak" not in text_of(other) and "lynx.md" not in text_of(listed) and "heron.md" in text_of(listed)


async def test_a_users_attachment_is_indexed_by_path_for_them_and_nobody_else(deployment: Deployment) -> None:
    alice, bob = user_id(), user_id()
    attachment = deployment.attach(alice, "plan.md", "# Plan\n\nThe OSPREY-7 glider was built by Carla Dubois in Prague.\n")
    deployment.attach(bob, "notes.md", "# Notes\n\nNothing here.\n")
    async with python_client(deployment, alice) as session:
        indexed = await session.call_tool("lightrag_insert_file", {"file_path": "plan.md"})
        assert not indexed.is_error, text_of(indexed)
        assert indexed.structured_content is not None and indexed.structured_content["filename"] == "plan.md"  # the name the user knows
        answer = await session.call_tool("query_lightrag", {"query": "Who built the OSPREY-7 glider?"})
        assert "Carla Dubois" in text_of(answer)
    async with python_client(deployment, bob) as session:
        by_path = await session.call_tool("lightrag_insert_file", {"file_path": str(attachment)})
        by_name = await session.call_tool("lightrag_insert_file", {"file_path": "plan.md"})
    assert by_path.is_error and "FORBIDDEN" in text_of(by_path)
    assert by_name.is_error and "FILE_NOT_FOUND" in text_of(by_name)


async def test_a_request_without_the_gateway_token_is_refused(deployment: Deployment) -> None:
    url = urlsplit(LIBRECHAT["url"])
    network = ServiceNetwork((str(url.hostname), int(url.port or 80)), deployment.port)
    headers = {name: value for name, value in deployment.headers(user_id()).items() if name != "Authorization"}
    async with httpx2.AsyncClient(headers=headers, transport=network) as http:
        answer = await http.post(
            LIBRECHAT["url"],
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert answer.status_code == 401

