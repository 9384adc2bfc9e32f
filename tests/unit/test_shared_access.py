"""Shared knowledge bases in the front (SPEC §3): roles only from the administrator or a
gateway, rights checked before the worker hears of a call, the listing, and the merged search."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers

from config.settings import load_settings
from mcp_front import auth
from mcp_front.auth import IdentityGate, JwksCache, JwtVerifier, Refused, SessionOwners
from mcp_front.catalogue import TOOLS
from mcp_front.identity import Identity, resolve_caller_identity
from mcp_front.shared_kbs import answer, merged_query, searched_too, shared_rows, shared_target
from protocol import ErrorCode, RagError
from protocol import methods as m
from tests.fakes.oauth_issuer import OAuthIssuer

SETTINGS = load_settings(
    {
        "LIGHTRAG_MCP_SHARED_KBS": json.dumps(
            {
                "handbook": {"read": ["*"], "write": ["alice", "role:ADMIN"], "search_by_default": True},
                "board": {"read": ["email:ceo@example.org"], "write": []},
            }
        )
    }
)
BY_NAME = {tool.name: tool for tool in TOOLS}
QUERY, UPLOAD = BY_NAME["lightrag_query"], BY_NAME["upload_to_lightrag"]


def user_of(kind: str, name: str, subject: str | None) -> AuthenticatedUser:
    token = AccessToken(token="", client_id=f"{kind}:{name}", scopes=[], subject=subject, claims={auth.KIND_CLAIM: kind})
    return AuthenticatedUser(token)


def gate() -> IdentityGate:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not reached")

    return IdentityGate(app, "X-User-Id", True, SessionOwners(), role_header="X-User-Role", email_header="X-User-Email")


def person(user_id: str | None, roles: tuple[str, ...] = (), email: str | None = None) -> Identity:
    return Identity(user_id, "env", f"u_{user_id}", roles, email)


def test_a_gateway_passes_the_users_role_and_email_in_the_configured_headers() -> None:
    headers = Headers({"X-User-Role": "ADMIN", "X-User-Email": "Ann@Example.org"})
    caller = gate().with_profile(gate().caller(user_of("gateway", "librechat", None), ["ann"]), headers)
    assert (caller.roles, caller.email) == (("ADMIN",), "Ann@Example.org")
    identity = resolve_caller_identity("ann", "gateway", {}, None, "default", roles=caller.roles, email=caller.email)
    assert shared_target(SETTINGS, identity, UPLOAD, "handbook") is not None


@pytest.mark.parametrize("header", ["X-User-Role", "X-User-Email"])
@pytest.mark.parametrize("kind", ["user", "oauth"])
def test_a_role_or_email_header_with_a_person_credential_is_refused_never_trusted(header: str, kind: str) -> None:
    caller = gate().caller(user_of(kind, "ann", "ann"), [])
    with pytest.raises(Refused, match=f"{header} header is accepted only with a gateway token"):
        gate().with_profile(caller, Headers({header: "ADMIN"}))


def test_a_role_header_sent_twice_is_refused() -> None:
    caller = gate().caller(user_of("gateway", "librechat", None), ["ann"])
    headers = Headers(raw=[(b"x-user-role", b"USER"), (b"x-user-role", b"ADMIN")])
    with pytest.raises(Refused, match="more than once"):
        gate().with_profile(caller, headers)


def test_a_header_name_not_configured_is_ignored() -> None:
    plain = IdentityGate(lambda *_: None, "X-User-Id", True, SessionOwners())  # type: ignore[arg-type]
    caller = plain.caller(user_of("user", "ann", "ann"), [])
    assert plain.with_profile(caller, Headers({"X-User-Role": "ADMIN"})).roles == ()


def test_a_reader_reaches_the_shared_workspace_nested_under_no_user() -> None:
    kb = shared_target(SETTINGS, person("bob"), QUERY, "Handbook")
    assert kb is not None and kb.workspace.startswith("shared_handbook_")


@pytest.mark.parametrize(
    ("identity", "tool", "name", "rule"),
    [
        (person("bob"), UPLOAD, "handbook", "handbook: writing needs one of: alice, role:ADMIN."),
        (person("bob", ("USER",)), UPLOAD, "handbook", "handbook: writing needs one of: alice, role:ADMIN."),
        (person("bob", email="bob@example.org"), QUERY, "board", "board: reading needs one of: email:ceo@example.org."),
    ],
)
def test_a_call_without_the_right_is_forbidden_naming_the_rule(identity: Identity, tool: Any, name: str, rule: str) -> None:
    with pytest.raises(RagError) as caught:
        shared_target(SETTINGS, identity, tool, name)
    assert caught.value.code is ErrorCode.FORBIDDEN and caught.value.message == rule


def test_writers_by_name_or_role_may_write() -> None:
    assert shared_target(SETTINGS, person("alice"), UPLOAD, "handbook") is not None
    assert shared_target(SETTINGS, person("carol", ("admin",)), UPLOAD, "handbook") is not None


def test_a_private_knowledge_base_name_is_untouched() -> None:
    assert shared_target(SETTINGS, person("bob"), UPLOAD, "project-a") is None


def test_a_question_without_workspace_also_searches_the_default_shared_ones_the_caller_reads() -> None:
    assert [kb.name for kb in searched_too(SETTINGS, person("bob"), QUERY, None)] == ["handbook"]
    assert searched_too(SETTINGS, person("bob"), QUERY, "project-a") == []
    assert searched_too(SETTINGS, person("bob"), BY_NAME["lightrag_list_documents"], None) == []


def test_the_listing_shows_the_shared_ones_the_caller_may_read_with_rights() -> None:
    rows = shared_rows(SETTINGS, person("alice"))
    assert [(row["name"], row["rights"]) for row in rows] == [("handbook", ["read", "write"])]
    ceo = shared_rows(SETTINGS, person("x", email="CEO@example.org"))
    assert [(row["name"], row["rights"]) for row in ceo] == [("handbook", ["read"]), ("board", ["read"])]


def source(name: str, score: float | None) -> dict[str, Any]:
    return {"filename": name, "content": name, "relevance_score": score}


def test_passages_are_merged_by_relevance_within_one_results_budget_each_naming_its_knowledge_base() -> None:
    own = {"status": "context_only", "sources": [source("mine-a", 0.9), source("mine-b", 0.2)], "metadata": {}, "notes": []}
    handbook = {"status": "context_only", "sources": [source("hb-a", 0.5), source("hb-b", 0.1)], "metadata": {}}
    merged = merged_query(own, [("handbook", handbook)])
    assert [(s["filename"], s["knowledge_base"]) for s in merged["sources"]] == [
        ("mine-a", "default"),
        ("hb-a", "handbook"),
    ]
    assert merged["metadata"]["knowledge_bases"] == ["default", "handbook"]


def test_an_empty_own_knowledge_base_does_not_hide_the_handbooks_passages() -> None:
    own = {"status": "no_results", "sources": [], "metadata": {}, "notes": ["NO_RESULTS_FOUND: nothing relevant"]}
    handbook = {"status": "context_only", "sources": [source("hb-a", 0.5)], "metadata": {}}
    merged = merged_query(own, [("handbook", handbook)])
    assert merged["status"] == "context_only" and merged["notes"] == [] and len(merged["sources"]) == 1


def serving(failing: str | None) -> Any:
    """A worker stand-in that answers each workspace with one passage named after it."""

    async def serve(who: Identity, args: dict[str, Any], kb: str | None, method: Any = None) -> dict[str, Any]:
        if failing is not None and who.workspace.startswith(failing):
            raise RagError(ErrorCode.WORKSPACE_BUSY, "busy")
        assert kb is None or args.get("only_context") is True  # one answer is written: the caller's own
        return {"status": "context_only", "sources": [source(who.workspace, 0.5)], "metadata": {}, "notes": []}

    return serve


@pytest.mark.anyio
async def test_a_shared_knowledge_base_that_fails_leaves_the_callers_own_answer_whole() -> None:

    result = await answer(SETTINGS, QUERY, person("bob"), None, {"query": "q"}, serving("shared_"))
    assert [s["knowledge_base"] for s in result["sources"]] == ["default"]


@pytest.mark.anyio
async def test_the_callers_own_failure_is_the_calls_error() -> None:

    with pytest.raises(RagError) as caught:
        await answer(SETTINGS, QUERY, person("bob"), None, {"query": "q"}, serving("u_bob"))
    assert caught.value.code is ErrorCode.WORKSPACE_BUSY


def recording(calls: list[tuple[str, str | None, dict[str, Any]]]) -> Any:
    """A worker stand-in that records each call (method, knowledge base, arguments): one passage
    per workspace, an answer naming the passages it was given, a listing counting 3 documents."""

    async def serve(who: Identity, args: dict[str, Any], kb: str | None, method: Any = None) -> dict[str, Any]:
        name = method.name if method is not None else "tool"
        calls.append((name, kb, args))
        if method is m.ANSWER:
            return {"answer": " + ".join(s["knowledge_base"] for s in args["sources"]), "notes": []}
        listed = {"knowledge_bases": [{"name": "default", "default": True, "documents": 3}], "message": "1 knowledge base"}
        return listed | {"status": "context_only", "sources": [source(who.workspace, 0.5)], "metadata": {}, "notes": []}

    return serve


@pytest.mark.anyio
async def test_an_answer_asked_for_is_written_once_from_the_merged_passages() -> None:
    calls: list[tuple[str, str | None, dict[str, Any]]] = []
    result = await answer(SETTINGS, QUERY, person("bob"), None, {"query": "q", "mode": "naive"}, recording(calls))
    searches = sorted((name, kb or "", args.get("only_context")) for name, kb, args in calls[:2])
    assert searches == [("query/run", "", True), ("query/run", "handbook", True)]  # passages only, from each
    assert calls[2][0] == m.ANSWER.name and calls[2][2]["mode"] == "naive" and len(calls) == 3
    given = [(s["knowledge_base"], s["content"]) for s in calls[2][2]["sources"]]
    assert given == [(s["knowledge_base"], s["content"]) for s in result["sources"]]  # the merged passages, as listed
    assert result["status"] == "answered" and result["answer"] == " + ".join(s["knowledge_base"] for s in result["sources"])


@pytest.mark.anyio
async def test_only_passages_asked_for_write_no_answer() -> None:
    calls: list[tuple[str, str | None, dict[str, Any]]] = []
    result = await answer(SETTINGS, QUERY, person("bob"), None, {"query": "q", "only_context": True}, recording(calls))
    assert [name for name, _, _ in calls] == ["tool", "tool"] and result["status"] == "context_only"


@pytest.mark.anyio
async def test_a_bypass_question_goes_to_the_callers_own_llm_alone() -> None:
    calls: list[tuple[str, str | None, dict[str, Any]]] = []
    await answer(SETTINGS, QUERY, person("bob"), None, {"query": "q", "mode": "bypass"}, recording(calls))
    assert [(name, kb) for name, kb, _ in calls] == [("tool", None)]


@pytest.mark.anyio
async def test_the_listings_shared_rows_carry_the_document_count_the_worker_gives_for_each() -> None:
    calls: list[tuple[str, str | None, dict[str, Any]]] = []
    listing = BY_NAME["lightrag_list_knowledge_bases"]
    result = await answer(SETTINGS, listing, person("x", email="ceo@example.org"), None, {}, recording(calls))
    assert [(row["name"], row["documents"]) for row in result["knowledge_bases"][1:]] == [("handbook", 3), ("board", 3)]
    assert sorted(kb or "" for _, kb, _ in calls) == ["", "board", "handbook"]


@pytest.mark.anyio
async def test_an_oauth_users_roles_and_email_come_from_the_configured_signed_claims() -> None:
    issuer = OAuthIssuer()

    async def documents(url: str) -> dict[str, Any]:
        return issuer.jwks()

    audience = "http://127.0.0.1:8765/mcp"
    checker = JwtVerifier(JwksCache(issuer.url, issuer.jwks_url, fetch=documents), audience, role_claim="roles", email_claim="email")
    token = await checker.verify(issuer.mint(sub="erin", aud=audience, roles=["ADMIN", "x\u200by"], email="erin@example.org"))
    assert token is not None
    caller = gate().caller(AuthenticatedUser(token), [])
    assert (caller.source, caller.roles, caller.email) == ("oauth", ("ADMIN",), "erin@example.org")  # the hidden-character role is dropped
    plain = JwtVerifier(JwksCache(issuer.url, issuer.jwks_url, fetch=documents), audience)
    unconfigured = await plain.verify(issuer.mint(sub="erin", aud=audience, roles=["ADMIN"]))
    assert unconfigured is not None and gate().caller(AuthenticatedUser(unconfigured), []).roles == ()
