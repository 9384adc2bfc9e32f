"""Documents as MCP resources through the real server (issue 15, part 5): the caller's documents
as `lightrag://documents/{doc_id}`, their text and metadata, a template, and
`notifications/resources/list_changed` after indexing and deletion — per user.

Bad inputs and what they get: a URI of another form, with no id, several path segments, a
query, a control character or a broken escape → INVALID_PARAMS naming the expected form; a
forged cursor → INVALID_PARAMS; an unknown id, or another user's → INVALID_PARAMS "Resource not
found" naming nothing of anyone else's.  The server answers the next request after each.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.runner import serve_loop
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

from config.settings import load_settings
from mcp_front.identity import META_USER_KEY
from mcp_front.resources import URI_TEMPLATE, document_uri
from mcp_front.server import build_server
from tests.conftest import PYTHON, client_env
from tests.integration.harness import Client
from tests.integration.http_harness import bearer, http_server
from tests.integration.test_core_flow import ZEBRA_MD, b64, upload

pytestmark = pytest.mark.anyio

REACTOR_MD = (
    "# Reactor review\n\nThe QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. "
    "Helena Vargas chose a molten salt design because it runs at atmospheric pressure.\n"
)
ZEBRA_TEXT = "The ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin."
NOTICE_WAIT_S = 60.0


@dataclass
class Notices:
    """The `notifications/resources/list_changed` a client received."""

    count: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def handle(self, message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            self.count += 1
            self.arrived.set()
            self.arrived = anyio.Event()

    async def after(self, seen: int, timeout: float = NOTICE_WAIT_S) -> None:
        """Return once more than `seen` notices have arrived (fails after `timeout`)."""
        with anyio.fail_after(timeout):
            while self.count <= seen:
                await self.arrived.wait()


@contextlib.asynccontextmanager
async def serving(home: Path, **env: str) -> AsyncIterator[tuple[Client, Notices]]:
    """The server over stdio, with a client that records resource-list notices."""
    notices = Notices()
    params = StdioServerParameters(command=PYTHON, args=["-m", "mcp_front"], env=client_env(home, **env), cwd=str(home))
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=notices.handle) as session,
    ):
        init = await session.initialize()
        assert init.capabilities.resources is not None and init.capabilities.resources.list_changed is True
        yield Client(session), notices


class ReadAsParams(types.ReadResourceRequestParams):
    """`resources/read` params with `userId` beside `uri`, as patched LibreChat sends it on calls."""

    userId: str


class ReadAs(types.Request[ReadAsParams, Literal["resources/read"]]):
    method: Literal["resources/read"] = "resources/read"
    params: ReadAsParams


def as_user(user: str | None) -> dict[str, Any] | None:
    return None if user is None else {META_USER_KEY: user}


async def all_resources(client: Client, user: str | None = None) -> list[types.Resource]:
    """Every page of resources/list (as `user`, through `_meta`)."""
    resources: list[types.Resource] = []
    cursor = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor, _meta=as_user(user))
        page = await client.session.list_resources(params=params)
        resources += page.resources
        if page.next_cursor is None:
            return resources
        cursor = page.next_cursor


async def read(client: Client, uri: str, user: str | None = None) -> types.TextResourceContents:
    if user is None:
        result = await client.session.read_resource(uri)
    else:
        result = await client.session.send_request(ReadAs(params=ReadAsParams(uri=uri, userId=user)), types.ReadResourceResult)
    [contents] = result.contents
    assert isinstance(contents, types.TextResourceContents), contents
    return contents


async def read_error(client: Client, uri: str, user: str | None = None) -> types.ErrorData:
    with pytest.raises(MCPError) as caught:
        await read(client, uri, user)
    return caught.value.error


async def insert(client: Client, title: str, text: str, user: str | None = None) -> dict[str, Any]:
    result = await client.session.call_tool("lightrag_insert_text", {"text": text, "title": title}, meta=as_user(user))
    assert not result.is_error, result.content
    assert result.structured_content is not None and result.structured_content["status"] == "processed"
    return result.structured_content


async def delete(client: Client, doc_id: str) -> None:
    result = await client.call("lightrag_delete_documents", {"document_ids": [doc_id]})
    assert not result.is_error, result.content


async def test_the_callers_documents_are_resources_with_their_text_and_metadata(home: Path) -> None:
    async with serving(home) as (client, _):
        assert await all_resources(client) == []
        templates = await client.session.list_resource_templates()
        assert [(t.uri_template, t.mime_type) for t in templates.resource_templates] == [(URI_TEMPLATE, "text/plain")]

        reactor = await upload(client, "reactor-review.md", REACTOR_MD, "text/markdown", metadata={"author": "QA"})
        zebra = await insert(client, "Zebra notes", ZEBRA_TEXT)
        assert reactor["status"] == "processed"

        listed = {resource.uri: resource for resource in await all_resources(client)}
        assert set(listed) == {document_uri(reactor["document_id"]), document_uri(zebra["document_id"])}
        first = listed[document_uri(reactor["document_id"])]
        assert (first.name, first.title, first.mime_type) == ("reactor-review.md", "Reactor review", "text/plain")
        assert first.description is not None and first.description.startswith(f"Indexed ({reactor['chunks']} chunk(s)")
        assert listed[document_uri(zebra["document_id"])].title == "Zebra notes"

        contents = await read(client, first.uri)
        assert contents.uri == first.uri and contents.mime_type == "text/plain"
        assert "QUASAR-5521 reactor was commissioned by Helena Vargas" in contents.text
        meta = contents.meta or {}
        assert (meta["document_id"], meta["filename"], meta["status"]) == (reactor["document_id"], "reactor-review.md", "processed")
        assert meta["chunk_count"] == reactor["chunks"] and meta["created_at"] and meta["updated_at"]
        assert meta["metadata"] == {"author": "QA"} and meta["truncated"] is False
        assert meta["text_chars"] == len(contents.text)
        assert ZEBRA_TEXT in (await read(client, document_uri(zebra["document_id"]))).text


async def test_list_changed_arrives_after_indexing_finishes_and_after_a_delete(home: Path) -> None:
    async with serving(home) as (client, notices):
        await all_resources(client)  # this session now watches its knowledge base
        seen = notices.count
        zebra = await insert(client, "Zebra notes", ZEBRA_TEXT)
        await notices.after(seen)
        [resource] = await all_resources(client)
        assert resource.uri == document_uri(zebra["document_id"]) and resource.description
        assert resource.description.startswith("Indexed")

        seen = notices.count
        await delete(client, zebra["document_id"])
        await notices.after(seen)
        assert await all_resources(client) == []


async def test_another_user_lists_none_of_the_first_users_documents_and_cannot_read_them(home: Path) -> None:
    async with serving(home) as (client, _):
        alice = await insert(client, "Alice secrets", "The KESTREL-1 code word belongs to Alice Johnson.", user="alice")
        alice_uri = document_uri(alice["document_id"])
        assert [r.uri for r in await all_resources(client, user="alice")] == [alice_uri]
        assert "KESTREL-1" in (await read(client, alice_uri, user="alice")).text

        assert await all_resources(client, user="bob") == []
        assert await all_resources(client) == []  # the default workspace is nobody's data either
        for reader in ("bob", None):
            error = await read_error(client, alice_uri, user=reader)
            assert error.code == types.INVALID_PARAMS and error.message == f"Resource not found: {alice_uri}"
            assert "Alice" not in str(error.data) and "KESTREL" not in str(error.data)

        unknown = document_uri("doc-" + "0" * 32)
        error = await read_error(client, unknown, user="alice")
        assert error.code == types.INVALID_PARAMS and error.message == f"Resource not found: {unknown}"


async def test_a_server_bound_to_one_user_refuses_a_resource_request_naming_another(home: Path) -> None:
    async with serving(home, LIGHTRAG_MCP_USER_ID="alice") as (client, _):
        assert await all_resources(client) == []
        with pytest.raises(MCPError) as caught:
            await all_resources(client, user="bob")
        assert caught.value.error.code == types.INVALID_REQUEST and "FORBIDDEN" in caught.value.error.message
        assert await all_resources(client, user="alice") == []


MALFORMED = [
    "lightrag://documents/",
    "lightrag://documents/a/b",
    "lightrag://documents/doc-1?version=2",
    "lightrag://documents/doc%0A1",
    "lightrag://documents/%E2%28",
    "lightrag://documents/" + "d" * 300,
    "lightrag://entities/Helena",
    "file:///etc/passwd",
]


async def test_malformed_uris_and_cursors_get_invalid_params_and_the_server_keeps_serving(home: Path) -> None:
    async with serving(home) as (client, _):
        zebra = await insert(client, "Zebra notes", ZEBRA_TEXT)
        for uri in MALFORMED:
            error = await read_error(client, uri)
            assert error.code == types.INVALID_PARAMS and URI_TEMPLATE in error.message, (uri, error)
            assert ZEBRA_TEXT in (await read(client, document_uri(zebra["document_id"]))).text, uri
        for cursor in ("page-2", "offset:-5", "offset:1e9"):
            with pytest.raises(MCPError) as caught:
                await client.session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
            assert caught.value.error.code == types.INVALID_PARAMS and "cursor" in caught.value.error.message
        assert [r.uri for r in await all_resources(client)] == [document_uri(zebra["document_id"])]
        assert (await client.health())["status"] in {"healthy", "degraded"}


@contextlib.asynccontextmanager
async def one_front_two_connections(tmp_path: Path) -> AsyncIterator[list[tuple[Client, Notices]]]:
    """One front (one worker) serving two client connections at once, as the HTTP transport does:
    the server's lifespan is entered once and each connection runs its own session loop."""
    server, _ = build_server(load_settings({**client_env(tmp_path), "WORKING_DIR": str(tmp_path / "data")}))
    async with server.lifespan(server) as state, contextlib.AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        clients = []
        for _ in range(2):
            (client_read, client_write), (server_read, server_write) = await stack.enter_async_context(
                create_client_server_memory_streams()
            )
            tg.start_soon(lambda r=server_read, w=server_write: serve_loop(server, r, w, lifespan_state=state))
            notices = Notices()
            session = await stack.enter_async_context(ClientSession(client_read, client_write, message_handler=notices.handle))
            await session.initialize()
            clients.append((Client(session), notices))
        yield clients


async def test_a_change_is_announced_to_the_sessions_of_its_user_only(tmp_path: Path) -> None:
    async with one_front_two_connections(tmp_path) as [(alice, alice_notices), (bob, bob_notices)]:
        assert await all_resources(alice, user="alice") == [] and await all_resources(bob, user="bob") == []

        kestrel = await insert(alice, "Alice secrets", "The KESTREL-1 code word belongs to Alice Johnson.", user="alice")
        await alice_notices.after(0)
        assert [r.uri for r in await all_resources(alice, user="alice")] == [document_uri(kestrel["document_id"])]

        # Bob's own change is announced in a later round than Alice's: when it has reached him,
        # a notice of Alice's change would have reached him before it.
        await insert(bob, "Bob notes", "The KESTREL-2 code word belongs to Bob Smith.", user="bob")
        await bob_notices.after(0)
        assert bob_notices.count == 1 and alice_notices.count == 1
        assert [r.title for r in await all_resources(bob, user="bob")] == ["Bob notes"]


@contextlib.asynccontextmanager
async def over_http(url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Client, Notices]]:
    """The Python SDK's Streamable HTTP client, recording resource-list notices."""
    notices = Notices()
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream, message_handler=notices.handle) as session,
    ):
        init = await session.initialize()
        assert init.capabilities.resources is not None and init.capabilities.resources.list_changed is True
        yield Client(session), notices


@pytest.mark.slow
async def test_over_http_a_gateways_users_see_and_hear_only_their_own_documents(home: Path) -> None:
    token = "librechat-gateway-token-for-resources"
    tokens = f"gateway:librechat:{hashlib.sha256(token.encode()).hexdigest()}"
    with http_server(home, LIGHTRAG_MCP_HTTP_TOKENS=tokens) as server:
        async with (
            over_http(server.url, bearer(token, "alice")) as (alice, alice_notices),
            over_http(server.url, bearer(token, "bob")) as (bob, bob_notices),
        ):
            assert await all_resources(alice) == [] and await all_resources(bob) == []
            kestrel = await insert(alice, "Alice secrets", "The KESTREL-1 code word belongs to Alice Johnson.")
            uri = document_uri(kestrel["document_id"])
            await alice_notices.after(0)
            assert [r.uri for r in await all_resources(alice)] == [uri] and await all_resources(bob) == []
            assert "KESTREL-1" in (await read(alice, uri)).text
            error = await read_error(bob, uri)
            assert error.code == types.INVALID_PARAMS and error.message == f"Resource not found: {uri}"
            # Bob's own change comes in a later round than Alice's (see the in-process test above).
            await insert(bob, "Bob notes", "The KESTREL-2 code word belongs to Bob Smith.")
            await bob_notices.after(0)
            assert bob_notices.count == 1 and alice_notices.count == 1


@pytest.mark.slow
@pytest.mark.clients
def test_the_typescript_sdk_lists_reads_and_hears_list_changed(home: Path) -> None:
    from rag_worker.storage.catalog import doc_id_for
    from tests.integration.test_real_clients import _step, ts_client  # skips when Node.js is missing

    uri = document_uri(doc_id_for("zebra.md"))
    upload = {"filename": "zebra.md", "content": b64(ZEBRA_MD), "mimeType": "text/markdown"}
    doc, _ = ts_client(
        home,
        [
            {"op": "list_resources", "all": True, "label": "empty"},
            {"op": "call", "name": "upload_to_lightrag", "arguments": upload, "label": "upload"},
            {"op": "wait_list_changed", "timeout_ms": 60_000, "label": "indexed notice"},
            {"op": "list_resources", "all": True, "label": "listed"},
            {"op": "list_resource_templates", "label": "templates"},
            {"op": "read_resource", "uri": uri, "label": "read"},
            {"op": "read_resource", "uri": "lightrag://documents/a/b", "expect_error": True, "label": "malformed"},
            {"op": "read_resource", "uri": document_uri("doc-" + "0" * 32), "expect_error": True, "label": "unknown"},
            {"op": "call", "name": "lightrag_delete_documents", "arguments": {"document_ids": ["zebra.md"]}},
            {"op": "wait_list_changed", "timeout_ms": 60_000, "label": "deleted notice"},
            {"op": "list_resources", "all": True, "label": "after delete"},
        ],
    )
    assert doc["server"]["capabilities"]["resources"] == {"subscribe": False, "listChanged": True}
    assert _step(doc, "empty")["result"]["resources"] == []
    assert not _step(doc, "upload")["result"].get("isError")
    [resource] = _step(doc, "listed")["result"]["resources"]
    assert (resource["uri"], resource["name"], resource["mimeType"]) == (uri, "zebra.md", "text/plain")
    [template] = _step(doc, "templates")["result"]["resourceTemplates"]
    assert template["uriTemplate"] == URI_TEMPLATE
    [contents] = _step(doc, "read")["result"]["contents"]
    assert "ZEBRA-7741 project was led by Alice Johnson" in contents["text"]
    assert contents["_meta"]["filename"] == "zebra.md" and contents["_meta"]["status"] == "processed"
    for label in ("malformed", "unknown"):
        assert _step(doc, label)["error"]["code"] == types.INVALID_PARAMS
    assert "Resource not found" in _step(doc, "unknown")["error"]["message"]
    assert _step(doc, "after delete")["result"]["resources"] == []
