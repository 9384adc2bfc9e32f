"""MCP resources: each document of the caller's knowledge base as `lightrag://documents/{doc_id}`.

`resources/list` pages the worker's `documents/list` (oldest first, so a new document lands on
the last page); `resources/read` asks `documents/read` for the text LightRAG stored, with the
document's metadata in the contents' `_meta`; `resources/templates/list` names the URI form.
Every request is answered for the caller `FrontApp.identify` names, in that caller's workspace
only: another user's document id is simply not found there.

`WorkspaceSessions` remembers, weakly, which MCP connections act for which workspace (a
connection registers when it lists or reads resources or calls a tool).  When the worker says a
workspace's documents changed (`documents/changed`: indexing finished or failed, a delete), each
of those connections gets `notifications/resources/list_changed` — and nobody else does.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
import uuid
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.shared.exceptions import MCPError

from config.logs import correlation_id
from config.settings import Settings
from mcp_front.identity import Identity
from mcp_front.rate_limit import RateLimiter
from protocol import ErrorCode, MethodSpec, RagError
from protocol import methods as m
from protocol.context import CallContext

log = logging.getLogger("mcp_front.resources")

URI_PREFIX = "lightrag://documents/"
URI_TEMPLATE = URI_PREFIX + "{doc_id}"
MIME_TYPE = "text/plain"
PAGE_SIZE = 100  # documents per resources/list page (documents/list allows up to 200)
MAX_DOC_ID_LENGTH = 255  # as protocol.methods.documents.DOCUMENT_ID
MAX_CURSOR_OFFSET = 10**7  # as documents/list's `offset`
LIST_CHANGED = "notifications/resources/list_changed"
SEND_TIMEOUT_S = 5.0  # a connection that cannot take a notice in this long misses it
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")  # a '%' that does not start a percent-escape
_WATCHED_KEY = "lightrag_mcp.watched_workspaces"  # in Connection.state: the workspaces it watches

TEMPLATE = types.ResourceTemplate(
    name="document",
    title="A document of your knowledge base",
    uri_template=URI_TEMPLATE,
    description=(
        "The full text of one indexed document, as the knowledge base stored it, with its file name, "
        "status, dates and chunk count in _meta. doc_id is the id resources/list and "
        "lightrag_list_documents show (doc-…)."
    ),
    mime_type=MIME_TYPE,
)

# How a RagError reaches the client of a resource request (a JSON-RPC error, not a tool result).
_JSONRPC_CODE = {
    ErrorCode.INVALID_PARAMETER: types.INVALID_PARAMS,
    ErrorCode.DOCUMENT_NOT_FOUND: types.INVALID_PARAMS,  # resource not found: -32602 (SEP-2164)
    ErrorCode.FORBIDDEN: types.INVALID_REQUEST,
    ErrorCode.RATE_LIMITED: types.INVALID_REQUEST,
}


# --- URIs and cursors -----------------------------------------------------------------


def document_uri(doc_id: str) -> str:
    """The resource URI of a document id (percent-encoded: ids are not ours alone to choose)."""
    return URI_PREFIX + urllib.parse.quote(doc_id, safe="")


def document_id_of(uri: str) -> str:
    """The document id a resource URI names; INVALID_PARAMS naming the problem when it names none."""
    shown = uri[:300]
    if not uri.startswith(URI_PREFIX):
        raise MCPError(types.INVALID_PARAMS, f"Not a document URI of this server: {shown!r}; expected {URI_TEMPLATE}.")
    encoded = uri[len(URI_PREFIX) :]
    try:
        doc_id = "" if _BAD_ESCAPE.search(encoded) else urllib.parse.unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        doc_id = ""
    if (
        not doc_id.strip()
        or len(doc_id) > MAX_DOC_ID_LENGTH
        or any(char in encoded for char in "/?#")
        or any(ord(char) < 32 or ord(char) == 127 for char in doc_id)
    ):
        raise MCPError(
            types.INVALID_PARAMS,
            f"Malformed document URI {shown!r}: expected {URI_TEMPLATE} with one document id "
            f"(at most {MAX_DOC_ID_LENGTH} characters, no '/', '?' or '#').",
        )
    return doc_id


def offset_of(cursor: str | None) -> int:
    """The listing offset an opaque cursor stands for (None: the first page)."""
    if cursor is None:
        return 0
    prefix, _, number = cursor.partition(":")
    digits = number.isascii() and number.isdigit() and len(number) <= 8  # before int(): bounded, ASCII
    if prefix != "offset" or not digits or int(number) > MAX_CURSOR_OFFSET:
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor: pass the nextCursor of the previous resources/list page.")
    return int(number)


def cursor_for(offset: int) -> str:
    return f"offset:{offset}"


# --- documents as resources ----------------------------------------------------------


def describe(view: dict[str, Any]) -> str:
    """One line on a document's state for its resource description."""
    status = view.get("status") or "unknown"
    if status == "processed":
        counts = [f"{view.get('chunk_count') or 0} chunk(s)"]
        if view.get("entity_count") is not None:
            counts.append(f"{view['entity_count']} entities, {view.get('relationship_count') or 0} relations")
        text = f"Indexed ({', '.join(counts)})"
    elif status == "failed":
        text = f"Indexing failed: {(view.get('error_message') or 'unknown reason')[:200]}"
    else:
        text = f"Being indexed ({status})"
    created = str(view.get("created_at") or "")[:10]
    return f"{text}; added {created}." if created else f"{text}."


def resource_of(view: dict[str, Any]) -> types.Resource:
    """A document summary of `documents/list` as an MCP resource."""
    updated = view.get("updated_at") or view.get("created_at")
    return types.Resource(
        uri=document_uri(str(view["id"])),
        name=str(view.get("filename") or view["id"]),
        title=str(view.get("title") or view.get("filename") or view["id"]),
        description=describe(view),
        mime_type=MIME_TYPE,
        annotations=types.Annotations(last_modified=str(updated)) if updated else None,
    )


def contents_meta(view: dict[str, Any], read: dict[str, Any]) -> dict[str, Any]:
    """The metadata that travels in a read resource's `_meta`."""
    keys = (
        "filename", "title", "status", "created_at", "updated_at", "processed_at", "mime_type", "file_type",
        "file_size", "pages", "words", "chunk_count", "entity_count", "relationship_count", "error_message",
        "track_id", "metadata",
    )  # fmt: skip
    meta = {"document_id": view["id"], **{key: view.get(key) for key in keys if view.get(key) is not None}}
    meta["text_chars"] = read.get("text_chars")
    meta["truncated"] = bool(read.get("truncated"))
    return meta


# --- who watches which workspace -----------------------------------------------------


def connection_of(ctx: ServerRequestContext[Any]) -> Connection | None:
    """The MCP connection a request came on: what lives as long as the client's session.

    SDK 2.x builds a `ServerSession` per request around the connection, so the session object
    itself dies with the request; the connection (stdio's one, or an HTTP session's) is the
    thing to keep and notify (a unit test pins this shape of the SDK)."""
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


class WorkspaceSessions:
    """Workspace → the live connections acting for it (weakly held), and the notices owed to them."""

    def __init__(self, send_timeout: float = SEND_TIMEOUT_S) -> None:
        self._watchers: dict[str, weakref.WeakSet[Connection]] = {}
        self._due: set[str] = set()
        self._wake = anyio.Event()
        self._send_timeout = send_timeout
        self.notices_sent = 0

    def watch(self, workspace: str, ctx: ServerRequestContext[Any]) -> None:
        """Remember that the request's connection acts for `workspace` (until it closes)."""
        connection = connection_of(ctx)
        if connection is None:
            return
        watched: set[str] = connection.state.setdefault(_WATCHED_KEY, set())
        if workspace in watched:
            return
        if not watched:
            connection.exit_stack.callback(self._forget, connection)
        watched.add(workspace)
        self._watchers.setdefault(workspace, weakref.WeakSet()).add(connection)

    def watchers(self, workspace: str) -> int:
        """How many live connections watch `workspace`."""
        return len(self._watchers.get(workspace, ()))

    def _forget(self, connection: Connection) -> None:
        for workspace in connection.state.get(_WATCHED_KEY, ()):
            watchers = self._watchers.get(workspace)
            if watchers is not None:
                watchers.discard(connection)
                if not watchers:
                    del self._watchers[workspace]

    def changed(self, workspace: str) -> None:
        """The worker says `workspace`'s documents changed.  Called from the worker pipe's read
        loop: it only queues the notice, never waits and never raises."""
        if self._watchers.get(workspace):
            self._due.add(workspace)
            self._wake.set()

    async def run(self) -> None:
        """Deliver queued notices until cancelled (runs in the front's lifespan task group)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            due, self._due = self._due, set()
            # Side by side: a client that does not read its stream delays nobody else.
            async with anyio.create_task_group() as tg:
                for connection in {c for workspace in due for c in self._watchers.get(workspace, ())}:
                    tg.start_soon(self._notify, connection)

    async def _notify(self, connection: Connection) -> None:
        with anyio.move_on_after(self._send_timeout):
            try:
                await connection.notify(LIST_CHANGED, None)
                self.notices_sent += 1
            except Exception as exc:  # a connection closing under us: its client no longer listens
                log.debug("resources/list_changed not delivered: %s", type(exc).__name__)


# --- the handlers --------------------------------------------------------------------


class WorkerCaller(Protocol):
    """What the handlers need of the supervisor: a call to the worker with a deadline."""

    async def call(self, method: str, params: dict[str, Any], *, timeout: float) -> Any: ...


Identify = Callable[[ServerRequestContext[Any]], Identity]


def _mcp_error(exc: RagError, cid: str) -> MCPError:
    data = {**exc.to_data(), "correlation_id": cid}
    return MCPError(_JSONRPC_CODE.get(exc.code, types.INTERNAL_ERROR), f"{exc.code.value}: {exc.message}", data)


class DocumentResources:
    """The `resources/*` handlers: identify the caller (`FrontApp.identify`), ask the worker."""

    def __init__(
        self,
        settings: Settings,
        identify: Identify,
        worker: WorkerCaller,
        sessions: WorkspaceSessions,
        rate_limiter: RateLimiter,
    ) -> None:
        self.settings = settings
        self.identify = identify
        self.worker = worker
        self.sessions = sessions
        self.rate_limiter = rate_limiter

    async def on_list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        offset = offset_of(params.cursor if params else None)
        arguments = {"limit": PAGE_SIZE, "offset": offset, "sort_by": "created_date", "sort_order": "asc"}
        listing = await self._serve(ctx, m.LIST_DOCUMENTS, arguments)
        documents = list(listing.get("documents") or [])
        more = bool((listing.get("pagination") or {}).get("has_next")) and bool(documents)
        return types.ListResourcesResult(
            resources=[resource_of(view) for view in documents],
            next_cursor=cursor_for(offset + len(documents)) if more else None,
        )

    async def on_list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def on_read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        doc_id = document_id_of(uri)
        read = await self._serve(ctx, m.READ_DOCUMENT, {"document_id": doc_id}, uri=uri)
        view = read["document"]
        contents = types.TextResourceContents(
            uri=uri, mime_type=MIME_TYPE, text=str(read.get("text") or ""), _meta=contents_meta(view, read)
        )
        return types.ReadResourceResult(contents=[contents])

    async def _serve(
        self, ctx: ServerRequestContext[Any], spec: MethodSpec, arguments: dict[str, Any], *, uri: str | None = None
    ) -> dict[str, Any]:
        """Identify the caller, remember its connection, ask the worker; a RagError becomes an MCPError.

        With `uri` (a read, rate-limited like a tool call) an unknown document is "Resource not found"."""
        cid = uuid.uuid4().hex[:12]
        token = correlation_id.set(cid)
        try:
            identity = self.identify(ctx)
            self.sessions.watch(identity.workspace, ctx)
            if uri is not None:
                self.rate_limiter.check(identity.workspace)
            context = CallContext(identity.workspace, cid, tool=ctx.method, user_id=identity.user_id).to_wire()
            result = await self.worker.call(
                spec.name,
                {"context": context, "arguments": arguments},
                timeout=spec.timeout or self.settings.call_timeout,
            )
            if not isinstance(result, dict):
                raise RagError(ErrorCode.INTERNAL_ERROR)
            return result
        except RagError as exc:
            log.info("%s failed: %s", ctx.method, exc)
            if uri is not None and exc.code is ErrorCode.DOCUMENT_NOT_FOUND:
                data = {**exc.to_data(), "correlation_id": cid, "uri": uri[:300]}
                raise MCPError(types.INVALID_PARAMS, f"Resource not found: {uri[:300]}", data) from None
            raise _mcp_error(exc, cid) from None
        except Exception:
            log.exception("%s failed unexpectedly", ctx.method)
            raise _mcp_error(RagError(ErrorCode.INTERNAL_ERROR), cid) from None
        finally:
            correlation_id.reset(token)
