"""Identity over HTTP with real clients: a LibreChat-shaped gateway (one gateway token + the
user header) serving two users apart, a person's token, OAuth JWTs from a local issuer — and
every way of getting it wrong answered 401/403 (or 413/421) before anything is touched.

One server serves the module: bearer tokens `gateway:librechat` and `user:ann`, and OAuth
resource-server mode against tests/fakes/oauth_issuer.py.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mcp_front.auth import token_digest
from mcp_front.identity import workspace_for
from tests.fakes.oauth_issuer import OAuthIssuer
from tests.integration.harness import error_of
from tests.integration.http_harness import (
    MCP_ACCEPT,
    NODE,
    HttpServer,
    bearer,
    describe,
    free_port,
    http_server,
    inspector_http,
    mcp_client,
    step,
    text_of,
    ts_http,
)

pytestmark = [pytest.mark.slow]

GATEWAY_TOKEN = "librechat-gateway-token-5f0c2a9d7e"
ANN_TOKEN = "ann-personal-token-8b41c6e2f3"
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the real-client tests need Node.js")


@dataclass
class Deployment:
    server: HttpServer
    issuer: OAuthIssuer

    def gateway(self, user: str | None) -> dict[str, str]:
        return bearer(GATEWAY_TOKEN, user)

    def jwt(self, **claims: Any) -> str:
        return self.issuer.mint(**{"aud": self.server.url, **claims})


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    home = tmp_path_factory.mktemp("http-auth-home")
    port = free_port()
    tokens = f"gateway:librechat:{token_digest(GATEWAY_TOKEN)},user:ann:{token_digest(ANN_TOKEN)}"
    with OAuthIssuer() as issuer, http_server(
        home,
        LIGHTRAG_MCP_HTTP_PORT=str(port),
        LIGHTRAG_MCP_HTTP_TOKENS=tokens,
        LIGHTRAG_MCP_OAUTH_ISSUER=issuer.url,  # keys from its discovery document
        LIGHTRAG_MCP_PUBLIC_URL=f"http://127.0.0.1:{port}/mcp",  # and the JWT audience
    ) as server:
        yield Deployment(server, issuer)


ALICE_FACT = "The ALBATROSS-11 glider was flown by Greta Holm over Bergen."
BOB_FACT = "The BISON-4 tractor was repaired by Tomas Ruiz in Leon."


def upload_step(filename: str, text: str) -> dict[str, Any]:
    content = base64.b64encode(f"# Notes\n\n{text}\n".encode()).decode()
    return {"op": "call", "label": "upload", "name": "upload_to_lightrag",
            "arguments": {"filename": filename, "content": content, "mimeType": "text/markdown"}}  # fmt: skip


def knowledge_steps(own_query: str, other_query: str, own_person: str, other_person: str) -> list[dict[str, Any]]:
    exact = {"search_options": {"search_type": "exact"}}
    return [
        {"op": "call", "label": "list", "name": "lightrag_list_documents", "arguments": {}},
        {"op": "call", "label": "own", "name": "lightrag_query", "arguments": {"query": own_query, "mode": "naive"}},
        {"op": "call", "label": "other", "name": "lightrag_query", "arguments": {"query": other_query, "mode": "naive"}},
        {"op": "call", "label": "own-entity", "name": "lightrag_search_entities", "arguments": {"query": own_person, **exact}},
        {"op": "call", "label": "other-entity", "name": "lightrag_search_entities", "arguments": {"query": other_person, **exact}},
    ]


@needs_node
def test_a_librechat_shaped_gateway_keeps_two_users_knowledge_apart(deployment: Deployment) -> None:
    """LibreChat's stack (TypeScript SDK, `Authorization` + `X-User-Id` headers): documents,
    query sources and graph entities of one user never reach the other."""
    server = deployment.server
    alice_q, bob_q = "Who flew the ALBATROSS-11 glider?", "Who repaired the BISON-4 tractor?"
    alice = ts_http(
        server.home, server.url, deployment.gateway("alice"),
        [upload_step("alice-notes.md", ALICE_FACT), *knowledge_steps(alice_q, bob_q, "Greta Holm", "Tomas Ruiz")],
    )  # fmt: skip
    bob = ts_http(
        server.home, server.url, deployment.gateway("bob"),
        [upload_step("bob-notes.md", BOB_FACT), *knowledge_steps(bob_q, alice_q, "Tomas Ruiz", "Greta Holm")],
    )  # fmt: skip
    for doc, mine, theirs, person in ((alice, "alice-notes.md", "bob-notes.md", "Greta Holm"), (bob, "bob-notes.md", "alice-notes.md", "Tomas Ruiz")):
        assert doc["ok"], json.dumps(doc)[:3000]
        assert step(doc, "upload")["result"]["structuredContent"]["status"] == "processed"
        assert [d["filename"] for d in step(doc, "list")["result"]["structuredContent"]["documents"]] == [mine]
        own = step(doc, "own")["result"]
        assert person in text_of(own) and {s["filename"] for s in own["structuredContent"]["sources"]} == {mine}
        other = step(doc, "other")["result"]
        assert theirs not in text_of(other) and all(s["filename"] == mine for s in other["structuredContent"]["sources"])
        assert step(doc, "own-entity")["result"]["structuredContent"]["total_matches"] >= 1
        assert step(doc, "other-entity")["result"]["structuredContent"]["total_matches"] == 0
    assert {workspace_for("alice", "default"), workspace_for("bob", "default")} <= server.workspaces()


@needs_node
def test_the_inspector_cli_passes_the_gateway_headers(deployment: Deployment) -> None:
    server = deployment.server
    proc, doc = inspector_http(
        server.home, server.url, deployment.gateway("carol"), "tools/call", "--tool-name", "lightrag_health_check"
    )
    assert proc.returncode == 0 and doc is not None, describe(proc)
    health = doc["result"]["structuredContent"]
    assert (health["identity_source"], health["workspace"]) == ("gateway", workspace_for("carol", "default"))


@pytest.mark.anyio
async def test_a_person_token_serves_its_user_who_may_repeat_the_name_in_the_header(deployment: Deployment) -> None:
    for headers in (bearer(ANN_TOKEN), bearer(ANN_TOKEN, "ann")):
        async with mcp_client(deployment.server.url, headers) as client:
            health = await client.health()
            assert (health["identity_source"], health["workspace"]) == ("token", workspace_for("token:ann", "default"))


@pytest.mark.anyio
@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
async def test_an_oauth_jwt_serves_the_user_its_claim_names(deployment: Deployment, algorithm: str) -> None:
    token = deployment.jwt(sub="dana", algorithm=algorithm)
    async with mcp_client(deployment.server.url, bearer(token)) as client:
        health = await client.health()
        assert (health["identity_source"], health["workspace"]) == ("oauth", workspace_for("oauth:dana", "default"))


@pytest.mark.anyio
async def test_a_call_naming_another_user_than_its_credentials_is_forbidden(deployment: Deployment) -> None:
    async with mcp_client(deployment.server.url, bearer(ANN_TOKEN)) as client:
        refused = error_of(await client.call_as("alice", "lightrag_list_documents", {}))
        assert refused["error_code"] == "FORBIDDEN"


def test_the_protected_resource_metadata_names_this_server_and_its_issuer(deployment: Deployment) -> None:
    server = deployment.server
    metadata = httpx.get(f"{server.base}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert metadata["resource"] == server.url and metadata["authorization_servers"] == [deployment.issuer.url]
    challenge = server.post().headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'resource_metadata="' in challenge
    assert f"{server.base}/.well-known/oauth-protected-resource/mcp" in challenge


def test_a_session_is_refused_to_another_user_of_the_same_gateway(deployment: Deployment) -> None:
    server = deployment.server
    opened = server.post(headers=deployment.gateway("alice"))
    session = {"mcp-session-id": opened.headers["mcp-session-id"]}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    hijack = server.post(ping, {**deployment.gateway("bob"), **session})
    assert hijack.status_code == 403 and "another user" in hijack.json()["error"]["message"]
    assert server.post(ping, {**deployment.gateway("alice"), **session}).status_code == 200


# --- every way of getting it wrong: refused, nothing touched --------------------------------------

Headers = Callable[[Deployment], dict[str, str]]
LONG_ID = "u" * 300
REFUSALS: dict[str, tuple[Headers, int]] = {
    # no Authorization header: 401 with a WWW-Authenticate challenge
    "no-token": (lambda d: {}, 401),
    # a token that is in no entry: 401
    "bad-token": (lambda d: bearer("not-a-configured-token-123456"), 401),
    # a person's token naming another user in the header: 403 (only a gateway may)
    "person-token-asserting-another-user": (lambda d: bearer(ANN_TOKEN, "alice"), 403),
    # the gateway without the user header: 403 (it would pool every user into one)
    "gateway-without-user": (lambda d: d.gateway(None), 403),
    # LibreChat's template left unexpanded: 403
    "gateway-placeholder-user": (lambda d: d.gateway("{{LIBRECHAT_USER_ID}}"), 403),
    "gateway-shell-placeholder-user": (lambda d: d.gateway("${LIBRECHAT_USER_ID}"), 403),
    # a control character (tab) in the user id: 403
    "gateway-control-character-user": (lambda d: d.gateway("ali\tce"), 403),
    # a user id over 256 characters: 403
    "gateway-over-long-user": (lambda d: d.gateway(LONG_ID), 403),
    # JWTs: expired, signed by a key the issuer never published, for another audience, unsigned: 401
    "expired-jwt": (lambda d: bearer(d.jwt(sub="alice", lifetime=-600)), 401),
    "foreign-jwt": (lambda d: bearer(d.jwt(sub="alice", foreign=True)), 401),
    "wrong-audience-jwt": (lambda d: bearer(d.issuer.mint(sub="alice", aud="http://127.0.0.1:1/other")), 401),
    # a browser page on another origin, with valid credentials: 403 (DNS-rebinding protection)
    "bad-origin": (lambda d: {**d.gateway("alice"), "Origin": "http://evil.example"}, 403),
    # a Host header this server does not answer to: 421
    "bad-host": (lambda d: {**d.gateway("alice"), "Host": "evil.example:80"}, 421),
}


@pytest.fixture(scope="module")
def alice_session(deployment: Deployment) -> dict[str, str]:
    """A session alice opened through the gateway, and her knowledge base with one document."""
    server = deployment.server
    opened = server.post(headers=deployment.gateway("alice"))
    return {"mcp-session-id": opened.headers["mcp-session-id"]}


async def document_names(deployment: Deployment, user: str) -> list[str]:
    async with mcp_client(deployment.server.url, deployment.gateway(user)) as client:
        listed = await client.call("lightrag_list_documents", {})
        assert listed.structured_content is not None
        return sorted(d["filename"] for d in listed.structured_content["documents"])


def insert_as_mallory(padding: int = 0) -> dict[str, Any]:
    text = "MALLORY-0 was here." + " x" * padding
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "lightrag_insert_text", "arguments": {"text": text, "title": "mallory"}}}  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(REFUSALS))
async def test_a_refused_request_answers_401_or_403_and_touches_nothing(
    deployment: Deployment, alice_session: dict[str, str], case: str
) -> None:
    server = deployment.server
    make_headers, expected = REFUSALS[case]
    workspaces, alice_docs = server.workspaces(), await document_names(deployment, "alice")
    response = server.post(insert_as_mallory(), {**make_headers(deployment), **alice_session})
    assert response.status_code == expected, (case, response.status_code, response.text[:300])
    if expected == 401:
        assert response.headers["www-authenticate"].startswith("Bearer ")
    assert "mcp-session-id" not in response.headers
    opened = server.post(headers=make_headers(deployment))  # nor can it open a session
    assert opened.status_code == expected and "mcp-session-id" not in opened.headers
    assert server.workspaces() == workspaces
    assert await document_names(deployment, "alice") == alice_docs


@pytest.mark.anyio
async def test_a_body_over_the_limit_answers_413_and_touches_nothing(
    deployment: Deployment, alice_session: dict[str, str]
) -> None:
    server = deployment.server
    workspaces, alice_docs = server.workspaces(), await document_names(deployment, "alice")
    body = json.dumps(insert_as_mallory(padding=15 * 2**20)).encode()  # 30 MB > the 27.7 MB default limit
    response = httpx.post(server.url, content=body, headers={**MCP_ACCEPT, **deployment.gateway("alice"), **alice_session}, timeout=60)
    assert response.status_code == 413
    assert server.workspaces() == workspaces and await document_names(deployment, "alice") == alice_docs
