"""MCP resources in the front: document URIs, cursors, resources from document summaries, and
which connections hear `notifications/resources/list_changed` (only those of the workspace)."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server import ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from config.settings import load_settings
from mcp_front.identity import Identity
from mcp_front.rate_limit import RateLimiter
from mcp_front.resources import (
    LIST_CHANGED,
    URI_TEMPLATE,
    DocumentResources,
    WorkspaceSessions,
    connection_of,
    contents_meta,
    cursor_for,
    document_id_of,
    document_uri,
    offset_of,
    resource_of,
)
from mcp_front.server import build_server
from protocol import ErrorCode, RagError
from rag_worker.handlers.documents import _fit_utf8

pytestmark = pytest.mark.anyio

PROCESSED = {
    "id": "doc-0123456789abcdef0123456789abcdef",
    "title": "Reactor review",
    "filename": "reactor-review.pdf",
    "status": "processed",
    "created_at": "2026-11-24T08:00:00+00:00",
    "updated_at": "2026-11-24T08:00:05+00:00",
    "mime_type": "application/pdf",
    "file_size": 48211,
    "chunk_count": 3,
    "entity_count": 12,
    "relationship_count": 8,
    "metadata": {"tags": ["energy"]},
}


class RecordingOutbound:
    """A connection's standalone channel that records what it is asked to send."""

    def __init__(self, *, fail: bool = False, hang: bool = False) -> None:
        self.sent: list[str] = []
        self.fail = fail
        self.hang = hang

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        if self.hang:
            await anyio.sleep_forever()
        if self.fail:
            raise RuntimeError("the stream is gone")
        self.sent.append(method)

    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> dict[str, Any]:
        raise AssertionError("no requests expected")


def request_on(connection: Connection, method: str = "resources/list") -> ServerRequestContext[Any]:
    """A request context as the SDK builds it: a per-request ServerSession around the connection."""
    session = ServerSession(object(), connection)  # type: ignore[arg-type]
    return ServerRequestContext(session=session, lifespan_context={}, protocol_version="2025-11-25", method=method)


def new_connection(outbound: RecordingOutbound) -> Connection:
    return Connection.for_loop(outbound)  # type: ignore[arg-type]


async def deliver(sessions: WorkspaceSessions) -> None:
    """Run the notifier until the queue is drained."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(sessions.run)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()


def test_a_document_uri_round_trips_and_escapes_what_is_not_an_id_character() -> None:
    assert document_uri(PROCESSED["id"]) == f"lightrag://documents/{PROCESSED['id']}"
    assert document_id_of(document_uri(PROCESSED["id"])) == PROCESSED["id"]
    odd = "dup-a b/ü?#"
    assert document_uri(odd) == "lightrag://documents/dup-a%20b%2F%C3%BC%3F%23"
    assert document_id_of(document_uri(odd)) == odd


@pytest.mark.parametrize(
    "uri",
    [
        "lightrag://documents/",
        "lightrag://documents/%20",
        "lightrag://documents/a/b",
        "lightrag://documents/a?x=1",
        "lightrag://documents/a#frag",
        "lightrag://documents/a%00b",
        "lightrag://documents/" + "d" * 256,
        "lightrag://documents/%ZZ",
        "lightrag://documents/%FF",
        "lightrag://entities/a",
        "file:///etc/passwd",
        "",
    ],
)
def test_a_malformed_uri_is_invalid_params_naming_the_expected_form(uri: str) -> None:
    with pytest.raises(MCPError) as caught:
        document_id_of(uri)
    assert caught.value.error.code == types.INVALID_PARAMS
    assert URI_TEMPLATE in caught.value.error.message


def test_cursors_are_opaque_offsets_and_a_forged_one_is_invalid_params() -> None:
    assert offset_of(None) == 0 and offset_of(cursor_for(100)) == 100
    for forged in ("100", "offset:-1", "offset:x", "page:2", "offset:99999999999", "offset:²", "offset:" + "9" * 5000):
        with pytest.raises(MCPError) as caught:
            offset_of(forged)
        assert caught.value.error.code == types.INVALID_PARAMS


def test_a_document_becomes_a_text_resource_named_by_its_file_with_its_state() -> None:
    resource = resource_of(PROCESSED)
    assert (resource.name, resource.title, resource.mime_type) == ("reactor-review.pdf", "Reactor review", "text/plain")
    assert resource.uri == document_uri(PROCESSED["id"])
    assert resource.description == "Indexed (3 chunk(s), 12 entities, 8 relations); added 2026-11-24."
    assert resource.size is None  # the PDF's size is not the size of the text the resource holds
    assert resource.annotations is not None and resource.annotations.last_modified == PROCESSED["updated_at"]
    failed = resource_of({**PROCESSED, "status": "failed", "error_message": "The embedding model failed."})
    assert failed.description == "Indexing failed: The embedding model failed.; added 2026-11-24."
    queued = resource_of({"id": "doc-1", "status": "pending", "filename": "", "title": ""})
    assert (queued.name, queued.description) == ("doc-1", "Being indexed (pending).")


def test_read_metadata_carries_the_document_facts_and_says_when_the_text_was_cut() -> None:
    meta = contents_meta(PROCESSED, {"text_chars": 1234, "truncated": False})
    assert meta["document_id"] == PROCESSED["id"] and meta["filename"] == "reactor-review.pdf"
    assert (meta["status"], meta["chunk_count"], meta["created_at"]) == ("processed", 3, PROCESSED["created_at"])
    assert meta["metadata"] == {"tags": ["energy"]} and meta["text_chars"] == 1234 and meta["truncated"] is False


def test_the_connection_of_a_request_is_the_sdks_per_client_connection() -> None:
    # Pins the SDK shape the notifier relies on: ServerSession is per request, around the connection.
    connection = new_connection(RecordingOutbound())
    assert connection_of(request_on(connection)) is connection
    assert connection_of(request_on(connection, "tools/call")) is connection_of(request_on(connection))


async def test_a_change_reaches_the_connections_of_that_workspace_only() -> None:
    sessions = WorkspaceSessions()
    alice_out, bob_out, both_out = RecordingOutbound(), RecordingOutbound(), RecordingOutbound()
    alice, bob, both = new_connection(alice_out), new_connection(bob_out), new_connection(both_out)
    sessions.watch("u_alice", request_on(alice))
    sessions.watch("u_alice", request_on(alice, "tools/call"))  # once per connection and workspace
    sessions.watch("u_bob", request_on(bob))
    sessions.watch("u_alice", request_on(both))
    sessions.watch("u_bob", request_on(both))

    sessions.changed("u_alice")
    sessions.changed("u_alice")  # a burst is one notice
    await deliver(sessions)
    assert alice_out.sent == [LIST_CHANGED] and bob_out.sent == [] and both_out.sent == [LIST_CHANGED]

    sessions.changed("u_nobody")  # nobody watches: nothing queued
    sessions.changed("u_bob")
    await deliver(sessions)
    assert alice_out.sent == [LIST_CHANGED] and bob_out.sent == [LIST_CHANGED] and both_out.sent == [LIST_CHANGED] * 2


async def test_a_closed_connection_is_forgotten_and_a_broken_one_never_raises() -> None:
    sessions = WorkspaceSessions(send_timeout=0.2)
    closing_out, broken_out, stuck_out, live_out = (
        RecordingOutbound(),
        RecordingOutbound(fail=True),
        RecordingOutbound(hang=True),
        RecordingOutbound(),
    )
    closing, broken, stuck, live = (new_connection(out) for out in (closing_out, broken_out, stuck_out, live_out))
    for connection in (closing, broken, stuck, live):
        sessions.watch("u_alice", request_on(connection))
    assert sessions.watchers("u_alice") == 4
    await closing.exit_stack.aclose()  # what the SDK does when the client's session ends
    assert sessions.watchers("u_alice") == 3

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sessions.run)
            for round_ in (1, 2):  # the notifier outlives a stuck and a broken connection
                sessions.changed("u_alice")
                while len(live_out.sent) < round_:
                    await anyio.sleep(0.01)
            await anyio.sleep(0.3)  # past the stuck connection's send timeout: its send was given up
            tg.cancel_scope.cancel()
    assert live_out.sent == [LIST_CHANGED] * 2 and closing_out.sent == [] and broken_out.sent == []
    del broken, stuck
    gc.collect()
    assert sessions.watchers("u_alice") == 1  # held weakly: a dropped connection leaves by itself


async def test_the_server_announces_resources_and_their_list_changes_on_every_transport(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKING_DIR", str(tmp_path))
    server, _ = build_server(load_settings())
    capabilities = server.create_initialization_options().capabilities  # as the HTTP session manager asks
    assert capabilities.resources is not None and capabilities.resources.list_changed is True
    assert capabilities.resources.subscribe is False


class FakeWorker:
    """The supervisor as the handlers see it: records calls, answers from a script."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[str, dict[str, Any], float]] = []

    async def call(self, method: str, params: dict[str, Any], *, timeout: float) -> Any:
        self.calls.append((method, params, timeout))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def resources_over(worker: FakeWorker, identify: Any = None) -> DocumentResources:
    def as_alice(ctx: Any) -> Identity:
        return Identity("alice", "param", "u_alice")

    settings = load_settings({})
    return DocumentResources(settings, identify or as_alice, worker, WorkspaceSessions(), RateLimiter(0))


def page(documents: list[dict[str, Any]], has_next: bool) -> dict[str, Any]:
    return {"documents": documents, "pagination": {"has_next": has_next}}


async def test_a_listing_asks_the_worker_for_the_callers_page_oldest_first_and_hands_out_the_next_cursor() -> None:
    worker = FakeWorker(page([PROCESSED] * 100, has_next=True))
    listed = await resources_over(worker).on_list_resources(
        request_on(new_connection(RecordingOutbound())), types.PaginatedRequestParams(cursor=cursor_for(100))
    )
    assert len(listed.resources) == 100 and listed.next_cursor == cursor_for(200)
    [(method, params, timeout)] = worker.calls
    assert method == "documents/list" and timeout == load_settings({}).call_timeout
    assert params["arguments"] == {"limit": 100, "offset": 100, "sort_by": "created_date", "sort_order": "asc"}
    assert params["context"]["workspace"] == "u_alice" and params["context"]["tool"] == "resources/list"

    worker.answer = page([PROCESSED], has_next=False)
    last = await resources_over(worker).on_list_resources(request_on(new_connection(RecordingOutbound())), None)
    assert last.next_cursor is None and worker.calls[-1][1]["arguments"]["offset"] == 0


async def test_failures_become_json_rpc_errors_that_name_the_cause_and_nothing_internal() -> None:
    uri = document_uri(PROCESSED["id"])
    read = types.ReadResourceRequestParams(uri=uri)
    ctx = request_on(new_connection(RecordingOutbound()), "resources/read")
    cases = [
        (RagError(ErrorCode.DOCUMENT_NOT_FOUND, "No document with this id."), types.INVALID_PARAMS, f"Resource not found: {uri}"),
        (RagError(ErrorCode.WORKER_RESTARTED), types.INTERNAL_ERROR, "WORKER_RESTARTED: "),
        (RuntimeError("secret /srv/path"), types.INTERNAL_ERROR, "INTERNAL_ERROR: "),
    ]
    for raised, code, message in cases:
        with pytest.raises(MCPError) as caught:
            await resources_over(FakeWorker(raised)).on_read_resource(ctx, read)
        assert caught.value.error.code == code and caught.value.error.message.startswith(message), caught.value.error
        assert "/srv/path" not in str(caught.value.error) and caught.value.error.data["correlation_id"]

    def forbidden(ctx: Any) -> Any:
        raise RagError(ErrorCode.FORBIDDEN, "This server process serves one user; the call names a different user.")

    worker = FakeWorker(page([], has_next=False))
    with pytest.raises(MCPError) as caught:
        await resources_over(worker, forbidden).on_list_resources(ctx, None)
    assert caught.value.error.code == types.INVALID_REQUEST and "FORBIDDEN" in caught.value.error.message
    assert worker.calls == []  # refused before the worker is asked


def test_a_read_text_too_big_for_the_pipe_is_cut_on_a_character_boundary() -> None:
    assert _fit_utf8("short", 100) == "short"
    cut = _fit_utf8("é" * 100, 51)  # two bytes each: 25 whole characters fit in 51 bytes
    assert cut == "é" * 25
