"""Run the real server over stdio with the SDK's `ClientSession` (the path real clients use)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.types as types
import psutil
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import PYTHON, client_env


class CallWithUserParams(types.CallToolRequestParams):
    """`tools/call` params with `userId` beside `name`, as patched LibreChat sends them."""

    userId: str


class CallWithUser(types.Request[CallWithUserParams, Literal["tools/call"]]):
    method: Literal["tools/call"] = "tools/call"
    params: CallWithUserParams


@dataclass
class Client:
    session: ClientSession

    async def call(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> types.CallToolResult:
        return await self.session.call_tool(name, arguments or {}, **kw)

    async def call_as(self, user_id: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        request = CallWithUser(params=CallWithUserParams(name=name, arguments=arguments, userId=user_id))
        return await self.session.send_request(request, types.CallToolResult)

    async def health(self, **arguments: Any) -> dict[str, Any]:
        result = await self.call("lightrag_health_check", arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    async def wait_ready(self, timeout: float = 60, not_pid: int | None = None) -> dict[str, Any]:
        """Health once the worker is ready (and, with not_pid, is a different process)."""
        with anyio.fail_after(timeout):
            while True:
                health = await self.health()
                worker = health["components"]["worker"]
                if worker["state"] == "ready" and worker["pid"] and worker["pid"] != not_pid:
                    return health
                await anyio.sleep(0.1)

    async def worker_pid(self) -> int:
        return int((await self.wait_ready())["components"]["worker"]["pid"])


@contextlib.asynccontextmanager
async def running_server(
    home: Path, cwd: Path | None = None, roots: list[Path] | None = None, **env: str
) -> AsyncIterator[Client]:
    """The server over stdio; with `roots`, the client offers them as MCP roots (like VS Code)."""
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "mcp_front"], env=client_env(home, **env), cwd=str(cwd or home)
    )
    callback = None
    if roots is not None:

        async def callback(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=path.as_uri(), name=path.name) for path in roots])

    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, list_roots_callback=callback) as session,
    ):
        await session.initialize()
        yield Client(session)


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content["error_code"] in text  # the model sees the code in text too
    return result.structured_content


def process_gone(pid: int, timeout: float = 20) -> bool:
    """True once `pid` has exited (or is a zombie waiting for its reaper)."""
    try:
        process = psutil.Process(pid)
        process.wait(timeout)
        return True
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return process.status() == psutil.STATUS_ZOMBIE
