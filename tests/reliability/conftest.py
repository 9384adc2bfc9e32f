"""A raw newline-delimited JSON-RPC client for the reliability suite.

`RawServer` spawns `python -m mcp_front` itself and writes bytes to its stdin, so tests can
send what the SDK client refuses to (NaN, lone surrogate escapes, garbage, 50 MB lines,
duplicate ids). Every line the server writes to stdout is parsed: a line that is not a
JSON-RPC 2.0 object is kept in `bad_lines` (stdout must carry only protocol frames).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil

from tests.conftest import PYTHON, client_env

READ_LIMIT = 256 * 1024 * 1024  # a response line may be large (tools/list, an echoed error)
PROTOCOL_VERSION = "2025-06-18"


class RawServer:
    def __init__(self, process: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.messages: list[dict[str, Any]] = []  # every JSON-RPC message read, in order
        self.bad_lines: list[bytes] = []  # stdout lines that are not JSON-RPC messages
        self._responses: dict[Any, list[dict[str, Any]]] = {}
        self._arrived = asyncio.Condition()
        self._next_id = 1_000_000
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.returncode is None

    def rss_mb(self) -> float:
        return psutil.Process(self.pid).memory_info().rss / 1e6

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while True:
            try:
                line = await self.process.stdout.readline()
            except ValueError:  # longer than READ_LIMIT: certainly not a protocol frame we expect
                self.bad_lines.append(b"<line over READ_LIMIT>")
                continue
            if not line:
                return
            try:
                message = json.loads(line)
            except ValueError:
                self.bad_lines.append(line[:500])
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.bad_lines.append(line[:500])
                continue
            self.messages.append(message)
            if "id" in message and "method" not in message:
                async with self._arrived:
                    self._responses.setdefault(message["id"], []).append(message)
                    self._arrived.notify_all()

    async def send(self, payload: bytes | str | dict[str, Any] | list[Any]) -> None:
        """Write one line (a dict/list is JSON-encoded, bytes/str are sent as they are)."""
        if isinstance(payload, dict | list):
            payload = json.dumps(payload)
        data = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        await self.process.stdin.drain()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def responses(self, request_id: Any, count: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
        """The responses for `request_id` once `count` have arrived, or those that did within `timeout`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._arrived:
                await self._arrived.wait_for(lambda: len(self._responses.get(request_id, [])) >= count)
        return list(self._responses.get(request_id, []))

    async def response(self, request_id: Any, timeout: float = 60) -> dict[str, Any] | None:
        got = await self.responses(request_id, 1, timeout)
        return got[0] if got else None

    async def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any] | None:
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(request_id, timeout)

    async def initialize(self) -> dict[str, Any]:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw-reliability-client", "version": "1"},
        }
        answer = await self.request("initialize", params)
        assert answer is not None and "result" in answer, answer
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    async def call_tool(self, name: str, arguments: Any, timeout: float = 60) -> dict[str, Any] | None:
        return await self.request("tools/call", {"name": name, "arguments": arguments}, timeout)

    async def health(self) -> dict[str, Any]:
        answer = await self.call_tool("lightrag_health_check", {})
        assert answer is not None and "result" in answer, answer
        assert not answer["result"].get("isError"), answer
        return answer["result"]["structuredContent"]

    async def wait_ready(self, timeout: float = 90) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                health = await self.health()
                if health["components"]["worker"]["state"] == "ready":
                    return health
                await asyncio.sleep(0.2)

    def stderr_tail(self, size: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    async def close(self) -> int | None:
        """Close stdin (the client going away) and wait for the front to exit; kill it if it hangs."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            async with asyncio.timeout(30):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        return self.process.returncode


@contextlib.asynccontextmanager
async def raw_server(home: Path, **env: str) -> AsyncIterator[RawServer]:
    """`python -m mcp_front` over raw pipes (stderr goes to a log file in `home`)."""
    stderr_path = home / "front-stderr.log"
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            PYTHON,
            "-m",
            "mcp_front",
            cwd=str(home),
            env=client_env(home, **env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            limit=READ_LIMIT,
        )
    server = RawServer(process, stderr_path)
    try:
        yield server
    finally:
        if server.alive():
            await server.close()
