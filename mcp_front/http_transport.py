"""Streamable HTTP for a team: the same front and ONE supervised worker behind the SDK's
session manager, for every session and every user.

    GET  /healthz                                  {"status": "ok"|"degraded"|"unhealthy"}, no auth
    GET  /.well-known/oauth-protected-resource...  (OAuth mode) RFC 9728 metadata, from the SDK
    *    LIGHTRAG_MCP_HTTP_PATH                    Origin/Host check ─▶ bearer auth (401) ─▶
                                                   identity gate (403) ─▶ SDK session manager
                                                   (body limit 413, stateful sessions, SSE)

The Server's lifespan (it starts and stops the worker supervisor) is entered once, by the
session manager, when the application starts; it ends at shutdown, so no worker outlives us.
Imported only when the HTTP transport is chosen (uvicorn, Starlette and the auth modules stay
out of a stdio front).
"""

from __future__ import annotations

import collections
import itertools
import logging
import secrets
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server import Server
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamableHTTPServerTransport,
    StreamId,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import JSONRPCMessage
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from config.settings import Settings
from mcp_front.auth import FrontTokenVerifier, IdentityGate, JwksCache, JwtVerifier, SessionOwners, TokenTable
from mcp_front.call_stats import STUCK_WINDOW_S
from mcp_front.http_guard import BodyGuard, StrictHeaders, body_limit_bytes
from mcp_front.restart_policy import WorkerState
from mcp_front.startup import http_authentication_configured
from protocol import ErrorCode

if TYPE_CHECKING:
    from mcp_front.server import FrontApp

log = logging.getLogger("mcp_front.http")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MAX_EVENTS = 2048  # resumable SSE: the most recent events of all sessions kept for replay ...
MAX_EVENT_BYTES = 32 * 2**20  # ... and the most bytes they may hold (oldest dropped first)
GRACEFUL_SHUTDOWN_S = 5  # open SSE streams are cut after this long at shutdown
HEALTH_BY_STATE = {
    WorkerState.READY: "ok",
    WorkerState.STARTING: "degraded",
    WorkerState.RESTARTING: "degraded",
    WorkerState.CIRCUIT_OPEN: "unhealthy",
    WorkerState.STOPPED: "unhealthy",
}


def public_url(settings: Settings) -> str:
    """The MCP endpoint as clients reach it: configured, else derived from where we listen."""
    if settings.public_url:
        return str(settings.public_url)
    host = settings.http_host if ":" not in settings.http_host else f"[{settings.http_host.strip('[]')}]"
    return f"http://{host}:{settings.http_port}{settings.http_path}"


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection, always on: loopback, the address we bind (unless a wildcard),
    the public URL and what is configured."""
    named = [*LOOPBACK_HOSTS]
    if settings.http_host not in {"0.0.0.0", "::", "[::]"}:
        named.append(f"[{settings.http_host.strip('[]')}]" if ":" in settings.http_host else settings.http_host)
    hosts = [*named, *(f"{host}:*" for host in named)]
    origins = [f"{scheme}://{host}{port}" for scheme in ("http", "https") for host in named for port in ("", ":*")]
    if settings.public_url:
        parsed = urllib.parse.urlparse(settings.public_url)
        hosts.append(parsed.netloc)
        origins.append(f"{parsed.scheme}://{parsed.netloc}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *settings.http_allowed_hosts],
        allowed_origins=[*origins, *settings.http_allowed_origins],
    )


# --- resumable SSE -----------------------------------------------------------------------


@dataclass
class _Event:
    session: int
    stream_id: StreamId
    message: JSONRPCMessage | None
    size: int


class EventLog:
    """The recent SSE events of every session, bounded in count and bytes (oldest dropped first).

    Event ids are random, so one cannot name another session's events; each session reads the
    log through its own `SessionEvents`, since stream ids (the client's request ids) repeat in
    every session."""

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self._events: collections.OrderedDict[EventId, _Event] = collections.OrderedDict()
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._bytes = 0
        self._sessions = itertools.count(1)

    def for_new_session(self) -> SessionEvents:
        return SessionEvents(self, next(self._sessions))

    def store(self, session: int, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = secrets.token_hex(12)
        size = len(message.model_dump_json(by_alias=True, exclude_unset=True)) if message is not None else 0
        if size > self._max_bytes:  # never replayable: a client resuming past it gets what follows
            return event_id
        self._events[event_id] = _Event(session, stream_id, message, size)
        self._bytes += size
        while len(self._events) > self._max_events or self._bytes > self._max_bytes:
            _, dropped = self._events.popitem(last=False)
            self._bytes -= dropped.size
        return event_id

    def after(self, session: int, last_event_id: EventId) -> tuple[StreamId, list[EventMessage]] | None:
        """The stream of `last_event_id` and its later events, if that event is this session's."""
        start = self._events.get(last_event_id)
        if start is None or start.session != session:
            return None
        later: list[EventMessage] = []
        seen = False
        for event_id, event in self._events.items():
            if seen and event.session == session and event.stream_id == start.stream_id and event.message is not None:
                later.append(EventMessage(event.message, event_id))
            seen = seen or event_id == last_event_id
        return start.stream_id, later


class SessionEvents(EventStore):
    """One session's view of the `EventLog` (the SDK's `EventStore` interface)."""

    def __init__(self, log: EventLog, session: int) -> None:
        self._log = log
        self._session = session

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self._log.store(self._session, stream_id, message)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        found = self._log.after(self._session, last_event_id)
        if found is None:
            return None
        stream_id, events = found
        for event in events:
            await send_callback(event)
        return stream_id


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with each session's own view of one bounded event log and a
    per-identity session limit.

    The SDK hands `self.event_store` to every session it opens: reading it here gives each
    new session a fresh `SessionEvents` instead of one store shared by all sessions.

    The SDK's only session limit is server-wide: one token opening 10,000 sessions locked every
    other user out until they expired (30 min). An authenticated principal (a token, a gateway's
    user, an OAuth subject) may hold `max_sessions_per_user`; its next session replaces its own
    oldest, so it never reaches the server-wide limit and never locks itself out either."""

    def __init__(self, app: Server[Any], event_log: EventLog, max_sessions_per_user: int, **options: Any) -> None:
        self.event_log = event_log
        self.max_sessions_per_user = max_sessions_per_user
        super().__init__(app, **options)

    @property
    def event_store(self) -> EventStore:
        return self.event_log.for_new_session()

    @event_store.setter
    def event_store(self, value: EventStore | None) -> None:
        """The SDK's constructor assigns None here; the log set in our constructor stands."""

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if requestor is not None:
            owned = [sid for sid, owner in self._session_owners.items() if owner == requestor]
            for session_id in owned[: max(0, len(owned) - self.max_sessions_per_user + 1)]:
                self._evict(session_id)
        return super()._admit_session(requestor)

    def _evict(self, session_id: str) -> None:
        """Forget the session now (its id answers 404 at once) and end its transport soon."""
        transport = self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        log.info("closed session %s: its user opened more than %d sessions", session_id[:8], self.max_sessions_per_user)
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session_id, transport)


# --- the application -----------------------------------------------------------------------


def token_verifier(settings: Settings) -> FrontTokenVerifier:
    jwt_verifier = None
    if settings.oauth_issuer:
        keys = JwksCache(settings.oauth_issuer, settings.oauth_jwks_url)
        audience = settings.oauth_audience or public_url(settings)
        jwt_verifier = JwtVerifier(
            keys,
            audience,
            settings.oauth_user_claim or "sub",
            role_claim=settings.oauth_role_claim,
            email_claim=settings.oauth_email_claim,
        )
    return FrontTokenVerifier(TokenTable(settings.http_tokens), jwt_verifier)


def build_http_app(settings: Settings, server: Server[Any], front: FrontApp) -> Starlette:
    """The ASGI application for `build_server`'s server and front: the MCP endpoint behind its
    checks, health, OAuth metadata."""
    security = transport_security(settings)
    max_body = body_limit_bytes(settings.http_max_body_mb, settings.max_file_mb)
    manager = SessionManager(
        server,
        EventLog(),
        settings.http_max_sessions_per_user,
        security_settings=security,
        max_request_body_size=max_body,
    )
    authenticated = http_authentication_configured(settings)
    guarded = BodyGuard(manager.asgi_app, max_body, settings.max_file_mb)
    endpoint: ASGIApp = IdentityGate(
        guarded,
        settings.http_user_header,
        authenticated,
        SessionOwners(),
        role_header=settings.http_role_header,
        email_header=settings.http_email_header,
    )
    routes: list[BaseRoute] = [Route("/healthz", health_endpoint(front), methods=["GET"])]
    if authenticated:
        endpoint, metadata_routes = with_authentication(endpoint, settings)
        routes += metadata_routes
    routes.append(Route(settings.http_path, endpoint=StrictHeaders(endpoint, security.allowed_hosts, security.allowed_origins)))
    return Starlette(routes=routes, lifespan=lambda _: manager.run())


def with_authentication(endpoint: ASGIApp, settings: Settings) -> tuple[ASGIApp, list[BaseRoute]]:
    """The SDK's bearer stack around `endpoint` (401 + WWW-Authenticate), and in OAuth mode the
    protected-resource metadata (RFC 9728) its challenge points to."""
    metadata_url = None
    routes: list[BaseRoute] = []
    if settings.oauth_issuer:
        # AuthSettings keeps the URLs as configured (an issuer is compared character for character)
        oauth = AuthSettings.model_validate(
            {"issuer_url": settings.oauth_issuer, "resource_server_url": public_url(settings), "validate_token_resource": False}
        )
        assert oauth.resource_server_url is not None
        metadata_url = build_resource_metadata_url(oauth.resource_server_url)
        routes += create_protected_resource_routes(oauth.resource_server_url, [oauth.issuer_url])
    stack = AuthenticationMiddleware(
        AuthContextMiddleware(RequireAuthMiddleware(endpoint, [], metadata_url)),
        backend=BearerAuthBackend(token_verifier(settings)),
    )
    return stack, routes


def health_endpoint(front: FrontApp) -> Any:
    """GET /healthz for load balancers and orchestrators: the worker's state, and `degraded`
    while calls are stuck (a call timed out within the last STUCK_WINDOW_S)."""

    async def healthz(request: Request) -> JSONResponse:
        status = HEALTH_BY_STATE.get(front.supervisor.snapshot().state, "unhealthy")
        if status == "ok" and front.call_stats.recent(ErrorCode.PROCESSING_TIMEOUT, STUCK_WINDOW_S):
            status = "degraded"
        return JSONResponse({"status": status}, status_code=503 if status == "unhealthy" else 200)

    return healthz


async def serve_http(settings: Settings, server: Server[Any], front: FrontApp) -> None:
    """Serve until SIGINT/SIGTERM; the worker is stopped before we return."""
    import uvicorn

    app = build_http_app(settings, server, front)
    log.info(
        "serving MCP over Streamable HTTP at http://%s:%s%s (%s)",
        settings.http_host,
        settings.http_port,
        settings.http_path,
        describe_authentication(settings),
    )
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_config=None,  # our logging: stderr, our format
        access_log=False,
        server_header=False,
        ws="none",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    await uvicorn.Server(config).serve()


def describe_authentication(settings: Settings) -> str:
    parts = []
    if settings.http_tokens:
        parts.append(f"{len(settings.http_tokens)} bearer token(s)")
    if settings.oauth_issuer:
        parts.append(f"OAuth JWTs of {settings.oauth_issuer}")
    return ", ".join(parts) or "no authentication: loopback only"
