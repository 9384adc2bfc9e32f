"""The client side of the wire: every line that arrives gets an answer.

The MCP SDK's stdio reader hands a line it cannot read (not JSON, not a JSON-RPC 2.0
message: batches, non-object params, bad ids, over-deep nesting) to the server as an
exception, which the server then drops — and a client that sent an id would wait for its
own timeout.  `answer_unreadable_lines` sits between the reader and the server and answers
such a line as JSON-RPC says: -32700 Parse error or -32600 Invalid Request, with the
line's id when one can be recovered, else null.  The line itself is never echoed.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
from mcp.shared.message import SessionMessage

log = logging.getLogger("mcp_front.wire")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# The id of a line that is not valid JSON, read only where clients put it: first, or right
# after "jsonrpc" (the SDKs serialise in that order).  Anywhere else it could be an "id"
# inside params, and answering that id would complete some other request of the client.
_LEADING_ID = re.compile(r'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*,')


def unreadable_line_error(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error for a line the reader could not turn into a message; None for a
    notification (a method without an id), which is never answered, even when malformed."""
    errors: list[dict[str, Any]] = []
    with contextlib.suppress(Exception):
        errors = list(exc.errors())  # type: ignore[attr-defined]  # pydantic's ValidationError
    parsed = next((e.get("input") for e in errors if isinstance(e.get("input"), dict)), None)
    if isinstance(parsed, dict) and isinstance(parsed.get("method"), str) and "id" not in parsed:
        return None
    if any(e.get("type") == "json_invalid" for e in errors) or not errors:
        code, message = PARSE_ERROR, "Parse error: the line is not valid JSON (UTF-8, one message per line)."
    else:
        code, message = INVALID_REQUEST, "Invalid Request: the line is not a JSON-RPC 2.0 message this server accepts."
    request_id = parsed.get("id") if isinstance(parsed, dict) else _leading_id(errors)
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or len(str(request_id)) > 200:
        request_id = None
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _leading_id(errors: list[dict[str, Any]]) -> int | str | None:
    raw = next((e.get("input") for e in errors if isinstance(e.get("input"), str | bytes)), None)
    if raw is None:
        return None
    head = raw[:1000].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:1000]
    found = _LEADING_ID.match(head)
    if found is None:
        return None
    token = found.group(1)
    return token[1:-1] if token.startswith('"') else int(token)


@contextlib.asynccontextmanager
async def answer_unreadable_lines(read_stream: Any, write_stream: Any) -> AsyncIterator[Any]:
    """A read stream that carries only messages; unreadable lines are answered on `write_stream`."""
    sender, receiver = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def forward() -> None:
        async with sender:
            async for item in read_stream:
                if isinstance(item, Exception):
                    error = unreadable_line_error(item)
                    if error is None:
                        log.info("ignored a malformed notification")
                        continue
                    log.info("answered an unreadable line with %s", error.error.code)
                    await write_stream.send(SessionMessage(error))
                else:
                    await sender.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        try:
            yield receiver
        finally:
            tg.cancel_scope.cancel()
