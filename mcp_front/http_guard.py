"""What an HTTP request must be before anything is parsed or allocated for it (issue 24).

    request ─▶ StrictHeaders ─▶ (authentication) ─▶ IdentityGate ─▶ BodyGuard ─▶ SDK session manager
               one Host, one Origin,                               body read once, bounded in
               one Authorization, each                             bytes, time and JSON structure
               matched exactly                                     before the SDK parses it

The SDK's own checks match Host and Origin by prefix (`127.0.0.1:8765@evil.com` passed) and parse
a body whole before looking at it (a 15 MB body of 5 M empty objects became 500 MB of dicts).
Everything here works on the raw bytes: counting, never building.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import anyio
from mcp.types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("mcp_front.http")

#: `{`, `[` and `,` outside strings: every value of a JSON text but its first needs one. The
#: largest tool call (100 batch items with metadata) has a few thousand; past this a body is
#: refused before it is parsed.
MAX_JSON_TOKENS = 20_000
#: A body must keep arriving: at most this long between two of its parts ...
BODY_IDLE_TIMEOUT_S = 15.0
#: ... and, in all, this long plus its size at this slowest acceptable rate.
BODY_BASE_TIMEOUT_S = 30.0
BODY_MIN_RATE = 256 * 1024  # bytes per second
_HOST = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<authority>[^/?#@\s]+)")
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_STRUCTURE = (b"{", b"[", b",")


@dataclass(frozen=True)
class Authority:
    """A host and an optional port; a rule's port `*` matches any port (or none)."""

    host: str
    port: str | None

    @classmethod
    def parse(cls, text: str) -> Authority | None:
        """`text` as exactly `host[:port]` (no user info, no list, no path), else None."""
        match = _HOST.fullmatch(text)
        if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
            return None
        return cls(match["host"].lower().rstrip("."), match["port"])

    @classmethod
    def rule(cls, text: str) -> Authority | None:
        """A configured entry: `host`, `host:port` or `host:*`."""
        if text.endswith(":*"):
            base = cls.parse(text[:-2])
            return cls(base.host, "*") if base is not None and base.port is None else None
        return cls.parse(text)

    def allowed_by(self, rules: Iterable[Authority]) -> bool:
        return any(rule.host == self.host and rule.port in {self.port, "*"} for rule in rules)


class StrictHeaders:
    """Refuses a request whose Host, Origin or Authorization is ambiguous or not exactly allowed:
    400 for a repeated or malformed header, 421 for another host, 403 for another origin."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = [rule for rule in map(Authority.rule, allowed_hosts) if rule is not None]
        self.origins = [(scheme, rule) for scheme, rule in map(_origin_rule, allowed_origins) if rule is not None]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(Headers(scope=scope))
            if refusal is not None:
                status, reason = refusal
                log.warning("refused an HTTP request (%d): %s", status, reason)
                await json_rpc_error(send, status, reason)
                return
        await self.app(scope, receive, send)

    def refusal(self, headers: Headers) -> tuple[int, str] | None:
        """(status, one-line reason) for a request these headers make unacceptable, else None."""
        for name in ("host", "origin", "authorization"):
            if len(headers.getlist(name)) > 1:
                return 400, f"The {name.title()} header appears more than once."
        host = Authority.parse(headers.get("host", ""))
        if host is None:
            return 400, "The Host header is missing or is not a host name with an optional port."
        if not host.allowed_by(self.hosts):
            return 421, "This server does not answer for that Host."
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, "Requests from that Origin are not accepted."
        return None

    def _origin_allowed(self, origin: str) -> bool:
        scheme, authority = _origin_rule(origin)
        if authority is None or authority.port == "*":
            return False
        return any(scheme == allowed_scheme and authority.allowed_by([rule]) for allowed_scheme, rule in self.origins)


def _origin_rule(text: str) -> tuple[str, Authority | None]:
    match = _ORIGIN.fullmatch(text.strip().lower())
    if match is None:
        return "", None
    return match["scheme"], Authority.rule(match["authority"])


class BodyGuard:
    """Reads a POST body once, bounded in bytes, time and JSON structure, then hands it on.

    Refusals: 413 over `max_bytes` (declared or sent), 408 for a body sent too slowly, 400 for
    more JSON values than any tool call has. Only then may the SDK parse it."""

    def __init__(self, app: ASGIApp, max_bytes: int, max_file_mb: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_file_mb = max_file_mb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(Headers(scope=scope))
        if declared is not None and declared > self.max_bytes:
            await json_rpc_error(send, 413, self.too_large())
            return
        try:
            body = await self._read(receive, declared)
        except _Refusal as refusal:
            log.warning("refused an HTTP request body (%d): %s", refusal.status, refusal.reason)
            await json_rpc_error(send, refusal.status, refusal.reason)
            return
        if body is None:  # the client went away while sending
            return
        tokens = json_structure_tokens(body, MAX_JSON_TOKENS)
        if tokens > MAX_JSON_TOKENS:
            log.warning("refused an HTTP request body: more than %d JSON values", MAX_JSON_TOKENS)
            await json_rpc_error(send, 400, f"The request holds more than {MAX_JSON_TOKENS:,} JSON values; no tool call needs that many.")
            return
        await self.app(scope, _replay(bytes(body), receive), send)

    def too_large(self) -> str:
        return (
            f"FILE_TOO_LARGE: the request is over this server's limit of {self.max_bytes / 2**20:.0f} MB. "
            f"Files up to {self.max_file_mb:g} MB may be uploaded; split the document or upload a smaller file."
        )

    async def _read(self, receive: Receive, declared: int | None) -> bytearray | None:
        body = bytearray()
        expected = declared if declared is not None else self.max_bytes
        deadline = anyio.current_time() + BODY_BASE_TIMEOUT_S + expected / BODY_MIN_RATE
        while True:
            wait = min(BODY_IDLE_TIMEOUT_S, deadline - anyio.current_time())
            with anyio.move_on_after(max(wait, 0)) as scope:
                message = await receive()
            if scope.cancelled_caught:
                raise _Refusal(408, "The request body arrived too slowly; send it again in one go.")
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                raise _Refusal(413, self.too_large())
            if not message.get("more_body", False):
                return body


class _Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def json_structure_tokens(body: bytes | bytearray, limit: int) -> int:
    """How many `{`, `[` and `,` stand outside the strings of `body`, exactly when that is at most
    `limit`, else some number above `limit`. C-speed counting; strings are walked only when the
    plain count is over the limit, and at most `limit` of them (each string is a value too)."""
    total = sum(body.count(token) for token in _STRUCTURE)
    if total <= limit:
        return total
    for index, match in enumerate(_JSON_STRING.finditer(body)):
        if index > limit:
            return index
        start, end = match.span()
        total -= sum(body.count(token, start, end) for token in _STRUCTURE)
        if total <= limit:
            return total
    return total


def _declared_length(headers: Headers) -> int | None:
    raw = headers.get("content-length")
    if raw is None or not raw.isdigit():
        return None
    return int(raw)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app behind us: the whole body first, then the client's own messages."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def body_limit_bytes(http_max_body_mb: float, max_file_mb: float) -> int:
    """The HTTP body limit: as configured, else (0) room for a file of twice the upload limit in
    base64, so an oversized upload still reaches the tool and is answered FILE_TOO_LARGE."""
    if http_max_body_mb:
        return int(http_max_body_mb * 2**20)
    return int(math.ceil(2 * max_file_mb * 2**20 * 4 / 3) + 2**20)


async def json_rpc_error(send: Send, status: int, reason: str) -> None:
    """An HTTP error with a JSON-RPC error body (the SDK's clients surface its message)."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": reason}}
    body = json.dumps(error).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
