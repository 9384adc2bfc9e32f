"""Hostile clients over Streamable HTTP, each holding a valid credential (issue 24): what they try,
what each gets, and a counted row per attack in the reliability report (suite "attacks").

One server for the module: a gateway token (LibreChat), person tokens `ann` and `alice`, OAuth
JWTs of a local issuer, an allowed folder, small per-user session limit. Every attack is refused
or bounded, and the server keeps serving the others.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psutil
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from mcp_front.auth import token_digest
from tests.fakes.oauth_issuer import OAuthIssuer
from tests.integration.harness import Client, error_of
from tests.integration.http_harness import INITIALIZE, MCP_ACCEPT, HttpServer, bearer, free_port, http_server
from tests.reliability.recorder import record

pytestmark = [pytest.mark.slow, pytest.mark.reliability, pytest.mark.anyio]

GATEWAY_TOKEN = "librechat-gateway-token-hostile-1"
ANN_TOKEN = "ann-personal-token-hostile-2"
ALICE_TOKEN = "alice-personal-token-hostile-3"
SESSIONS_PER_USER = 4
MAX_FRONT_RSS_MB = 300


@dataclass
class Deployment:
    server: HttpServer
    issuer: OAuthIssuer
    allowed: Path
    port: int

    def credentials(self) -> dict[str, dict[str, str]]:
        """One request header set per credential kind, all for a user called alice."""
        return {
            "token": bearer(ALICE_TOKEN),
            "gateway": bearer(GATEWAY_TOKEN, "alice"),
            "oauth": bearer(self.issuer.mint(sub="alice", aud=self.server.url)),
        }

    def front_rss_mb(self) -> float:
        return psutil.Process(self.server.process.pid).memory_info().rss / 2**20

    def worker_rss_mb(self) -> float:
        children = psutil.Process(self.server.process.pid).children()
        return max((child.memory_info().rss for child in children), default=0) / 2**20


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    home = tmp_path_factory.mktemp("hostile-http")
    allowed = home / "shared-docs"
    allowed.mkdir()
    (allowed / "handbook.md").write_text("# Handbook\n\nThe KESTREL-7 pump is serviced every March.\n")
    port = free_port()
    tokens = ",".join(
        f"{kind}:{name}:{token_digest(token)}"
        for kind, name, token in [("gateway", "librechat", GATEWAY_TOKEN), ("user", "ann", ANN_TOKEN), ("user", "alice", ALICE_TOKEN)]
    )
    with OAuthIssuer() as issuer, http_server(
        home,
        LIGHTRAG_MCP_HTTP_PORT=str(port),
        LIGHTRAG_MCP_HTTP_TOKENS=tokens,
        LIGHTRAG_MCP_OAUTH_ISSUER=issuer.url,
        LIGHTRAG_MCP_PUBLIC_URL=f"http://127.0.0.1:{port}/mcp",
        LIGHTRAG_MCP_ALLOWED_DIRS=str(allowed),
        LIGHTRAG_MCP_HTTP_MAX_SESSIONS_PER_USER=str(SESSIONS_PER_USER),
        LIGHTRAG_MCP_DEBUG_METHODS="1",
        LIGHTRAG_MCP_CALL_TIMEOUT="3",
    ) as server:
        yield Deployment(server, issuer, allowed, port)


@contextlib.asynccontextmanager
async def client(url: str, headers: dict[str, str], roots: list[str] | None = None) -> AsyncIterator[Client]:
    """The SDK's HTTP client; with `roots`, it offers them as MCP roots (`file:///` = the whole disk)."""

    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in roots or []])  # type: ignore[arg-type]

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, list_roots_callback=list_roots if roots is not None else None) as session,
    ):
        await session.initialize()
        yield Client(session)


def raw_request(port: int, head: str, body: bytes = b"", read_timeout: float = 60) -> tuple[int, bytes]:
    """Send exactly these header lines (no client library tidying them), return (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < _expected_length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data.partition(b"\r\n\r\n")[2]


def _expected_length(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(head) + 4 + int(line.split(b":", 1)[1])
    return len(data) + 1 if b"\r\n\r\n" not in data else len(data)


def head(port: int, *lines: str, body: bytes = b"") -> str:
    return "\r\n".join(
        ["POST /mcp HTTP/1.1", *lines, "Content-Type: application/json", "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}", ""]
    )


INIT_BODY = json.dumps(INITIALIZE).encode()


# --- 1: client roots never widen what an HTTP client may read ----------------------------------


async def test_client_roots_never_widen_access_over_http(deployment: Deployment) -> None:
    """`roots/list` → `file:///` let any authenticated client index /etc files and other users'
    knowledge-base files. Over HTTP only LIGHTRAG_MCP_ALLOWED_DIRS counts, for every credential."""
    async with client(deployment.server.url, bearer(GATEWAY_TOKEN, "bob")) as bob:
        assert not (await bob.call("lightrag_insert_text", {"text": "Bob's private note: the vault code is 4471."})).is_error
    data_file = next(path for path in sorted(deployment.server.data_dir.rglob("*.json")) if path.is_file())
    targets = ["/etc/hostname", "/etc/ld.so.conf", str(data_file), "/etc"]
    attempts = accepted = 0
    for kind, headers in deployment.credentials().items():
        async with client(deployment.server.url, headers, roots=["file:///"]) as session:
            for target in targets:
                attempts += 1
                result = await session.call("lightrag_insert_file", {"file_path": target})
                if not result.is_error:
                    accepted += 1
                    continue
                error = error_of(result)
                assert error["error_code"] == "FORBIDDEN", (kind, target, error)
                assert str(deployment.allowed) not in json.dumps(error), "a refusal names the server's folders"
            inside = await session.call("lightrag_insert_file", {"file_path": str(deployment.allowed / "handbook.md")})
            assert not inside.is_error, (kind, inside.content)  # the configured folder still works
    record("hostile", "client roots over HTTP", attempts=attempts, refused=attempts - accepted, accepted=accepted,
           server_up=deployment.server.process.poll() is None, max_rss_front_mb=deployment.front_rss_mb())  # fmt: skip
    assert accepted == 0


# --- 3: one identity cannot exhaust the sessions ----------------------------------------------


def open_session(deployment: Deployment, headers: dict[str, str]) -> httpx.Response:
    return deployment.server.post(INITIALIZE, headers=headers)


def test_one_user_opening_many_sessions_never_locks_out_another(deployment: Deployment) -> None:
    """9,999 sessions of one token exhausted the SDK's server-wide limit for 30 minutes. Now each
    user holds at most LIGHTRAG_MCP_HTTP_MAX_SESSIONS_PER_USER; a new one closes its own oldest."""
    ann = bearer(ANN_TOKEN)
    opened = [open_session(deployment, ann) for _ in range(60)]
    assert all(response.status_code == 200 for response in opened)
    ids = [response.headers["mcp-session-id"] for response in opened]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    alive = [
        sid for sid in ids
        if deployment.server.post(ping, headers={**ann, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}).status_code == 200
    ]  # fmt: skip
    assert alive == ids[-SESSIONS_PER_USER:]
    other = open_session(deployment, bearer(GATEWAY_TOKEN, "bob"))
    assert other.status_code == 200
    record("hostile", "session flood by one token", attempts=len(ids), refused=len(ids) - len(alive),
           accepted=0 if other.status_code == 200 else 1, server_up=deployment.server.process.poll() is None,
           max_rss_front_mb=deployment.front_rss_mb())  # fmt: skip


# --- 4: a body is bounded before it is parsed -------------------------------------------------


def hostile_body(megabytes: int) -> bytes:
    empties = b",".join([b"{}"] * (megabytes * 2**20 // 3))
    prefix = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lightrag_list_documents","arguments":{},"junk":['
    return prefix + empties + b"]}}"


class PeakRss:
    """The largest RSS of a process, sampled every 20 ms in a thread while the block runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self.process.memory_info().rss / 2**20)
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_a_body_of_millions_of_values_is_refused_before_it_is_parsed(deployment: Deployment) -> None:
    """A 15 MB `tools/call` with 5 M empty objects took 508 MB per request (4 GB for 8). Now it is
    counted, not parsed: 400, and 8 at once keep the front under MAX_FRONT_RSS_MB."""
    body = hostile_body(15)
    headers = {**MCP_ACCEPT, **bearer(ANN_TOKEN)}
    statuses: list[int] = []

    def send() -> None:
        response = httpx.post(deployment.server.url, content=body, headers=headers, timeout=120)
        statuses.append(response.status_code)
        assert "JSON values" in response.json()["error"]["message"]

    with PeakRss(deployment.server.process.pid) as peak:
        threads = [threading.Thread(target=send) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert statuses == [400] * 8
    assert httpx.get(f"{deployment.server.base}/healthz", timeout=10).json()["status"] == "ok"
    record("hostile", "15 MB of empty objects, 8 at once", attempts=8, refused=statuses.count(400),
           accepted=8 - statuses.count(400), server_up=deployment.server.process.poll() is None,
           max_rss_front_mb=round(peak.peak_mb, 1))  # fmt: skip
    assert peak.peak_mb < MAX_FRONT_RSS_MB


async def test_an_oversized_upload_is_answered_file_too_large(deployment: Deployment) -> None:
    """12–16 MB uploads got a bare 413; now they reach the tool and get FILE_TOO_LARGE. A body over
    the HTTP limit gets 413 whose message names the upload limit."""
    content = base64.b64encode(b"x" * (12 * 2**20)).decode()
    async with client(deployment.server.url, bearer(ANN_TOKEN)) as session:
        result = await session.call("upload_to_lightrag", {"filename": "big.txt", "content": content, "mimeType": "text/plain"})
    assert error_of(result)["error_code"] == "FILE_TOO_LARGE"
    huge = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload_to_lightrag","arguments":{"content":"' + b"A" * (40 * 2**20) + b'"}}}'
    response = httpx.post(deployment.server.url, content=huge, headers={**MCP_ACCEPT, **bearer(ANN_TOKEN)}, timeout=120)
    assert response.status_code == 413
    assert "FILE_TOO_LARGE" in response.json()["error"]["message"]
    assert "10 MB" in response.json()["error"]["message"]


def test_a_body_sent_too_slowly_is_cut(deployment: Deployment) -> None:
    """No timeout for a slowly sent body: a client could hold a request open for ever. Now a body
    that stops arriving for BODY_IDLE_TIMEOUT_S is answered 408."""
    lines = head(deployment.port, f"Host: 127.0.0.1:{deployment.port}", f"Authorization: Bearer {ANN_TOKEN}", body=INIT_BODY)
    with socket.create_connection(("127.0.0.1", deployment.port), timeout=60) as sock:
        sock.sendall(lines.encode() + b"\r\n" + INIT_BODY[:10])  # the rest never comes
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]


# --- 6: credential kinds are namespaces -------------------------------------------------------


async def test_each_credential_kind_names_its_own_people(deployment: Deployment) -> None:
    """Gateway user `alice`, token `alice` and OAuth subject `alice` all landed in one knowledge
    base. Now each kind is its own namespace (LIGHTRAG_MCP_HTTP_SAME_USERS maps kinds together)."""
    workspaces = {}
    for kind, headers in deployment.credentials().items():
        async with client(deployment.server.url, headers) as session:
            health = await session.health()
            workspaces[kind] = health["workspace"]
    assert len(set(workspaces.values())) == 3, workspaces
    record("hostile", "same name, other credential kind", attempts=2, refused=2, accepted=0,
           server_up=deployment.server.process.poll() is None)  # fmt: skip


# --- 7 and 9: ambiguous headers, hidden characters --------------------------------------------


def test_ambiguous_or_foreign_headers_are_refused(deployment: Deployment) -> None:
    port = deployment.port
    host = f"Host: 127.0.0.1:{port}"
    auth = f"Authorization: Bearer {ANN_TOKEN}"
    cases = {
        "two Authorization headers": ([host, auth, "Authorization: Bearer someone-elses-token"], 400),
        "Host with user info": ([f"Host: 127.0.0.1:{port}@evil.com", auth], 400),
        "Host list": ([f"Host: 127.0.0.1:{port}, evil.com", auth], 400),
        "empty Host": (["Host: ", auth], 400),
        "foreign Host": (["Host: evil.com", auth], 421),
        "Host with a longer name": ([f"Host: 127.0.0.1.evil.com:{port}", auth], 421),
        "two Origin headers": ([host, auth, f"Origin: http://127.0.0.1:{port}", "Origin: http://evil.com"], 400),
        "foreign Origin": ([host, auth, "Origin: http://evil.com"], 403),
        "Origin extending an allowed one": ([host, auth, f"Origin: http://127.0.0.1:{port}.evil.com"], 403),
        "user id with DEL": ([host, f"Authorization: Bearer {GATEWAY_TOKEN}", "X-User-Id: carol\x7f"], 403),
    }
    accepted = []
    for name, (lines, expected) in cases.items():
        status, _ = raw_request(port, head(port, *lines, body=INIT_BODY), INIT_BODY)
        if status != expected:
            accepted.append(f"{name}: {status}")
    status, _ = raw_request(port, head(port, host, auth, body=INIT_BODY), INIT_BODY)
    assert status == 200  # the same request, unambiguous, is served
    record("hostile", "ambiguous headers", attempts=len(cases), refused=len(cases) - len(accepted),
           accepted=len(accepted), server_up=deployment.server.process.poll() is None)  # fmt: skip
    assert accepted == []


# --- health while calls are stuck -------------------------------------------------------------


async def test_health_turns_degraded_while_calls_time_out(deployment: Deployment) -> None:
    async with client(deployment.server.url, bearer(ANN_TOKEN)) as session:
        result = await session.call("lightrag_debug", {"action": "sleep", "seconds": 10})
        assert error_of(result)["error_code"] == "PROCESSING_TIMEOUT"
    assert httpx.get(f"{deployment.server.base}/healthz", timeout=10).json()["status"] == "degraded"


# --- client disconnects are not errors --------------------------------------------------------


def test_a_client_that_hangs_up_mid_call_is_logged_without_a_traceback(deployment: Deployment) -> None:
    port = deployment.port
    initialized = deployment.server.post(INITIALIZE, headers=bearer(ANN_TOKEN))
    sid = initialized.headers["mcp-session-id"]
    call = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": {"name": "lightrag_debug", "arguments": {"action": "sleep", "seconds": 1}}}).encode()  # fmt: skip
    lines = head(port, f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {ANN_TOKEN}", f"mcp-session-id: {sid}",
                 "mcp-protocol-version: 2025-06-18", body=call)  # fmt: skip
    before = deployment.server.log.read_text(errors="replace")
    for sent in (call, call, call[: len(call) // 2]):  # hung up before the answer; and mid-body
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(lines.encode() + b"\r\n" + sent)
            time.sleep(0.3)
    time.sleep(3)
    added = deployment.server.log.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in added, added[-3000:]
    assert " ERROR " not in added, added[-3000:]
    assert deployment.server.post(INITIALIZE, headers=bearer(ANN_TOKEN)).status_code == 200
