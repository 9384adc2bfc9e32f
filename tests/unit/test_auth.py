"""HTTP identity: the configured token table, OAuth JWT validation, the identity gate's
decisions, the per-session event log, and the start-up rule for network binds."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types import JSONRPCNotification

from config.settings import ConfigError, load_settings
from mcp_front import auth
from mcp_front.auth import (
    FrontTokenVerifier,
    IdentityGate,
    JwksCache,
    JwtVerifier,
    Refused,
    SessionOwners,
    TokenTable,
    hash_token_command,
    token_digest,
)
from mcp_front.http_transport import EventLog, transport_security
from mcp_front.identity import resolve_caller_identity
from mcp_front.startup import check_http_exposure
from protocol import ErrorCode, RagError
from tests.fakes.oauth_issuer import OAuthIssuer

TOKENS = "LIGHTRAG_MCP_HTTP_TOKENS"
ANN_TOKEN = "ann-token-0123456789abcdef"
GATEWAY_TOKEN = "gateway-token-0123456789abcdef"
AUDIENCE = "http://127.0.0.1:8765/mcp"


def tokens_setting(*entries: str) -> Any:
    return load_settings({TOKENS: ",".join(entries)}).http_tokens


def table() -> TokenTable:
    return TokenTable(
        tokens_setting(f"user:ann:{token_digest(ANN_TOKEN)}", f"gateway:librechat:{token_digest(GATEWAY_TOKEN)}")
    )


# --- the token table ------------------------------------------------------------------------


def test_token_entries_parse_into_kind_name_and_digest() -> None:
    digest = token_digest(ANN_TOKEN)
    (entry,) = tokens_setting(f" user:ann.lee@example.org:{digest.upper()} ")
    assert (entry.kind, entry.name, entry.digest) == ("user", "ann.lee@example.org", digest)
    assert tokens_setting() == ()


@pytest.mark.parametrize(
    "bad",
    [
        "user:ann",  # no digest
        f"admin:ann:{'a' * 64}",  # unknown kind
        "user:ann:not-a-digest",
        f"user::{'a' * 64}",  # no name
        f"user:a:b:{'a' * 64}",  # a colon in the name
        ANN_TOKEN,  # the raw token pasted instead of its digest
    ],
)
def test_a_bad_token_entry_is_a_config_error_naming_the_setting_not_the_text(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        tokens_setting(f"user:bob:{'b' * 64}", bad)
    message = str(caught.value)
    assert TOKENS in message and "entry 2" in message and "--hash-token" in message
    assert ANN_TOKEN not in message and "not-a-digest" not in message


def test_two_entries_with_one_token_are_refused() -> None:
    with pytest.raises(ConfigError, match="same token digest"):
        tokens_setting(f"user:ann:{'a' * 64}", f"gateway:gw:{'A' * 64}")


def test_lookup_finds_the_entry_by_the_token_digest() -> None:
    found = table().lookup(GATEWAY_TOKEN)
    assert found is not None and (found.kind, found.name) == ("gateway", "librechat")
    assert table().lookup(token_digest(GATEWAY_TOKEN)) is None  # the digest is not a token
    assert table().lookup("wrong-token-0123456789abcdef") is None


def test_lookup_compares_the_digest_with_every_entry_whichever_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[bytes] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    tokens = table()
    for token in (ANN_TOKEN, GATEWAY_TOKEN, "nobody-0123456789abcdef"):
        compared.clear()
        tokens.lookup(token)
        assert len(compared) == 2  # no early exit: the time does not say which entry matched


def test_hash_token_prints_the_digest_and_the_setting_line() -> None:
    code, text = hash_token_command("gateway:librechat", GATEWAY_TOKEN + "\n")
    digest = hashlib.sha256(GATEWAY_TOKEN.encode()).hexdigest()
    assert code == 0 and text.splitlines() == [digest, f"{TOKENS}=gateway:librechat:{digest}"]
    assert tokens_setting(text.splitlines()[1].split("=", 1)[1])[0].digest == digest
    assert hash_token_command(None, "short\n")[0] == 2
    assert hash_token_command("root:x", GATEWAY_TOKEN)[0] == 2


# --- OAuth JWTs -------------------------------------------------------------------------------


class Keys:
    """The issuer's documents without its HTTP server: counts what the cache fetches."""

    def __init__(self, issuer: OAuthIssuer) -> None:
        self.issuer = issuer
        self.fetched: list[str] = []

    async def __call__(self, url: str) -> dict[str, Any]:
        self.fetched.append(url)
        if url.endswith("/.well-known/openid-configuration"):
            return self.issuer.discovery()
        if url == self.issuer.jwks_url:
            return self.issuer.jwks()
        raise OSError("404")


@pytest.fixture(scope="module")
def issuer() -> OAuthIssuer:
    return OAuthIssuer()  # not started: Keys serves its documents


def verifier(issuer: OAuthIssuer, keys: Keys | None = None, **options: Any) -> JwtVerifier:
    cache = JwksCache(issuer.url, options.pop("jwks_url", issuer.jwks_url), fetch=keys or Keys(issuer))
    return JwtVerifier(cache, AUDIENCE, **options)


@pytest.mark.anyio
@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
async def test_a_valid_jwt_names_its_user(issuer: OAuthIssuer, algorithm: str) -> None:
    token = await verifier(issuer).verify(issuer.mint(sub="ann", aud=AUDIENCE, algorithm=algorithm, scope="read"))
    assert token is not None and token.subject == "ann" and token.scopes == ["read"]
    assert token.claims is not None and token.claims["iss"] == issuer.url and token.claims[auth.KIND_CLAIM] == "oauth"


@pytest.mark.anyio
async def test_the_keys_come_from_the_discovery_document_when_no_jwks_url_is_set(issuer: OAuthIssuer) -> None:
    keys = Keys(issuer)
    token = await verifier(issuer, keys, jwks_url="").verify(issuer.mint(aud=[AUDIENCE, "other"]))
    assert token is not None and token.subject == "ann"
    assert keys.fetched == [f"{issuer.url}/.well-known/openid-configuration", issuer.jwks_url]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case",
    ["expired", "not-yet-valid", "foreign-key", "foreign-issuer", "wrong-audience", "no-audience", "no-user-claim", "placeholder-user"],
)
async def test_an_invalid_jwt_is_refused(issuer: OAuthIssuer, case: str) -> None:
    minted = {
        "expired": lambda: issuer.mint(aud=AUDIENCE, lifetime=-3600),
        "not-yet-valid": lambda: issuer.mint(aud=AUDIENCE, not_before=3600, lifetime=7200),
        "foreign-key": lambda: issuer.mint(aud=AUDIENCE, foreign=True),
        "foreign-issuer": lambda: issuer.mint(aud=AUDIENCE, iss="http://127.0.0.1:1/other-issuer"),
        "wrong-audience": lambda: issuer.mint(aud="http://127.0.0.1:9999/mcp"),
        "no-audience": lambda: jwt_without("aud"),
        "no-user-claim": lambda: issuer.mint(aud=AUDIENCE, sub=None),
        "placeholder-user": lambda: issuer.mint(aud=AUDIENCE, sub="{{LIBRECHAT_USER_ID}}"),
    }

    def jwt_without(claim: str) -> str:
        import jwt

        payload = {"iss": issuer.url, "sub": "ann", "exp": 2**31, "aud": AUDIENCE}
        del payload[claim]
        return jwt.encode(payload, issuer.rsa_key, algorithm="RS256", headers={"kid": "rsa-1"})

    assert await verifier(issuer).verify(minted[case]()) is None


def _unsigned(header: dict[str, Any], payload: dict[str, Any], secret: bytes | None) -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = f"{part(json.dumps(header).encode())}.{part(json.dumps(payload).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest() if secret else b""
    return f"{signing_input}.{part(signature)}"


@pytest.mark.anyio
async def test_alg_none_and_hs256_are_refused_even_keyed_with_the_public_key(issuer: OAuthIssuer) -> None:
    payload = {"iss": issuer.url, "sub": "mallory", "aud": AUDIENCE, "exp": 2**31}
    public_pem = issuer.rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    none = _unsigned({"alg": "none", "typ": "JWT", "kid": "rsa-1"}, payload, None)
    confused = _unsigned({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, payload, public_pem)
    checker = verifier(issuer)
    assert await checker.verify(none) is None
    assert await checker.verify(confused) is None


@pytest.mark.anyio
async def test_a_custom_user_claim_names_the_user_and_its_absence_refuses(issuer: OAuthIssuer) -> None:
    checker = verifier(issuer, user_claim="preferred_username")
    named = await checker.verify(issuer.mint(aud=AUDIENCE, sub="opaque-1", preferred_username="ann.lee"))
    assert named is not None and named.subject == "ann.lee"
    assert await checker.verify(issuer.mint(aud=AUDIENCE, sub="opaque-1")) is None


@pytest.mark.anyio
async def test_an_unknown_key_id_refetches_the_keys_at_most_once_per_interval() -> None:
    issuer = OAuthIssuer()
    keys, now = Keys(issuer), [1000.0]
    checker = JwtVerifier(JwksCache(issuer.url, issuer.jwks_url, fetch=keys, clock=lambda: now[0]), AUDIENCE)
    assert await checker.verify(issuer.mint(aud=AUDIENCE)) is not None
    issuer.rotate("rsa-2")
    now[0] += 5  # within the interval: the new key id is not fetched yet
    assert await checker.verify(issuer.mint(aud=AUDIENCE, kid="rsa-2")) is None
    now[0] += auth.JWKS_REFETCH_S
    assert await checker.verify(issuer.mint(aud=AUDIENCE, kid="rsa-2")) is not None  # fetched again: rotated in
    for kid in ("rsa-3", "rsa-4"):
        assert await checker.verify(issuer.mint(aud=AUDIENCE, kid=kid)) is None
    assert keys.fetched == [issuer.jwks_url, issuer.jwks_url]  # the first load, then one refetch


@pytest.mark.anyio
async def test_the_verifier_takes_a_configured_token_first_then_a_jwt(issuer: OAuthIssuer) -> None:
    front = FrontTokenVerifier(table(), verifier(issuer))
    person = await front.verify_token(ANN_TOKEN)
    assert person is not None and (person.client_id, person.subject) == ("user:ann", "ann")
    gateway = await front.verify_token(GATEWAY_TOKEN)
    assert gateway is not None and (gateway.client_id, gateway.subject) == ("gateway:librechat", None)
    oauth = await front.verify_token(issuer.mint(sub="bo", aud=AUDIENCE))
    assert oauth is not None and oauth.subject == "bo"
    assert await front.verify_token("nope-0123456789abcdef") is None
    assert await FrontTokenVerifier(table(), None).verify_token(issuer.mint(aud=AUDIENCE)) is None


# --- the identity gate ------------------------------------------------------------------------


def user_of(kind: str, name: str, subject: str | None) -> AuthenticatedUser:
    return AuthenticatedUser(
        AccessToken(token="", client_id=f"{kind}:{name}", scopes=[], subject=subject, claims={auth.KIND_CLAIM: kind})
    )


GATEWAY = user_of("gateway", "librechat", None)
ANN = user_of("user", "ann", "ann")


def gate(authenticated: bool = True) -> IdentityGate:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not reached")

    return IdentityGate(app, "X-User-Id", authenticated, SessionOwners())


def test_a_gateway_names_the_user_in_the_header() -> None:
    caller = gate().caller(GATEWAY, [" 65f1c0ffee "])
    assert (caller.user_id, caller.source) == ("65f1c0ffee", "gateway")


@pytest.mark.parametrize(
    ("asserted", "reason"),
    [
        ([], "must name the user"),
        (["{{LIBRECHAT_USER_ID}}"], "unexpanded placeholder"),
        (["${USER}"], "unexpanded placeholder"),
        (["ann\tlee"], "control or invisible characters"),
        (["carol\x7f"], "control or invisible characters"),
        (["ann\u202eeve".encode().decode("latin-1")], "control or invisible characters"),  # as it arrives: UTF-8 bytes
        (["x" * 300], "at most 256"),
        (["ann", "bob"], "more than once"),
        (["\xff\xfe"], "UTF-8"),
    ],
)
def test_a_gateway_request_without_a_usable_user_is_refused(asserted: list[str], reason: str) -> None:
    with pytest.raises(Refused, match=reason):
        gate().caller(GATEWAY, asserted)


def test_a_person_token_may_repeat_its_user_never_name_another() -> None:
    assert gate().caller(ANN, []).user_id == "ann"
    assert gate().caller(ANN, ["ann"]).source == "token"
    with pytest.raises(Refused, match="only a gateway token"):
        gate().caller(ANN, ["bob"])
    oauth = user_of("oauth", "client-7", "carol")
    assert gate().caller(oauth, []).source == "oauth"
    with pytest.raises(Refused):
        gate().caller(oauth, ["ann"])


def test_without_authentication_the_header_is_refused_and_stdio_rules_apply() -> None:
    assert gate(authenticated=False).caller(None, []).user_id is None
    with pytest.raises(Refused, match="only with a gateway token"):
        gate(authenticated=False).caller(None, ["ann"])


def test_a_session_is_good_only_for_the_user_who_opened_it() -> None:
    sessions = SessionOwners(limit=2)
    sessions.opened("s1", ("gateway:librechat", "ann"))
    sessions.check("s1", ("gateway:librechat", "ann"))
    sessions.check(None, ("gateway:librechat", "bob"))
    sessions.check("unknown", ("gateway:librechat", "bob"))  # the SDK answers 404 for it
    with pytest.raises(Refused, match="another user"):
        sessions.check("s1", ("gateway:librechat", "bob"))
    sessions.closed("s1")
    sessions.check("s1", ("gateway:librechat", "bob"))


def test_a_call_naming_another_user_than_the_credential_is_forbidden() -> None:
    identity = resolve_caller_identity("ann", "gateway", {"userId": "ann"}, None, "default")
    assert (identity.user_id, identity.source) == ("ann", "gateway")
    for params, meta in (({"userId": "bob"}, None), ({}, {"lightrag/userId": "bob"})):
        with pytest.raises(RagError) as caught:
            resolve_caller_identity("ann", "token", params, meta, "default")
        assert caught.value.code is ErrorCode.FORBIDDEN


# --- resumable SSE and start-up ---------------------------------------------------------------


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})


def test_the_event_log_keeps_sessions_apart_though_their_stream_ids_repeat() -> None:
    events = EventLog()
    ann, bob = events.for_new_session(), events.for_new_session()
    ann_first = events.store(ann._session, "1", None)
    bob_first = events.store(bob._session, "1", None)
    events.store(ann._session, "1", note(1))
    events.store(bob._session, "1", note(2))
    events.store(ann._session, "2", note(3))
    stream, later = events.after(ann._session, ann_first) or ("", [])
    assert stream == "1" and [event.message.params for event in later] == [{"n": 1}]  # type: ignore[union-attr]
    assert events.after(bob._session, ann_first) is None  # another session's event id replays nothing
    assert [e.message.params for e in (events.after(bob._session, bob_first) or ("", []))[1]] == [{"n": 2}]  # type: ignore[union-attr]


def test_the_event_log_is_bounded_in_count_and_bytes() -> None:
    events = EventLog(max_events=3, max_bytes=10_000)
    session = events.for_new_session()._session
    first = events.store(session, "1", note(0))
    for n in range(1, 4):
        events.store(session, "1", note(n))
    assert events.after(session, first) is None  # dropped, oldest first
    small = EventLog(max_events=100, max_bytes=200)
    ids = [small.store(session, "1", note(n)) for n in range(10)]
    assert small.after(session, ids[0]) is None and small.after(session, ids[-1]) is not None


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_binding_beyond_loopback_without_authentication_is_a_config_error(host: str) -> None:
    with pytest.raises(ConfigError, match="LIGHTRAG_MCP_HTTP_HOST"):
        check_http_exposure(load_settings({"LIGHTRAG_MCP_HTTP_HOST": host}))
    check_http_exposure(load_settings({"LIGHTRAG_MCP_HTTP_HOST": host, TOKENS: f"user:ann:{'a' * 64}"}))
    check_http_exposure(load_settings({"LIGHTRAG_MCP_HTTP_HOST": host, "LIGHTRAG_MCP_OAUTH_ISSUER": "https://id.example"}))
    for loopback in ("127.0.0.1", "localhost", "::1", "[::1]"):
        check_http_exposure(load_settings({"LIGHTRAG_MCP_HTTP_HOST": loopback}))


def test_dns_rebinding_protection_admits_loopback_the_bound_address_the_public_url_and_the_configured() -> None:
    security = transport_security(
        load_settings(
            {
                "LIGHTRAG_MCP_HTTP_HOST": "10.0.0.5",
                "LIGHTRAG_MCP_PUBLIC_URL": "https://rag.example.org/mcp",
                "LIGHTRAG_MCP_HTTP_ALLOWED_HOSTS": "lightrag:*",
                "LIGHTRAG_MCP_HTTP_ALLOWED_ORIGINS": "https://chat.example.org",
            }
        )
    )
    assert security.enable_dns_rebinding_protection
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "10.0.0.5:*", "rag.example.org", "lightrag:*"} <= set(security.allowed_hosts)
    assert {"http://127.0.0.1:*", "https://rag.example.org", "https://chat.example.org"} <= set(security.allowed_origins)
    assert "0.0.0.0:*" not in transport_security(load_settings({"LIGHTRAG_MCP_HTTP_HOST": "0.0.0.0"})).allowed_hosts


@pytest.mark.anyio
async def test_the_gate_leaves_the_caller_in_the_scope_and_binds_the_session_it_opens() -> None:
    seen: list[dict[str, Any]] = []

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)
        headers = [(b"mcp-session-id", b"s-1")] if scope["method"] == "POST" else []
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    gate = IdentityGate(endpoint, "X-User-Id", True, SessionOwners())
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def request(user: str, session: str | None = None) -> int:
        headers = [(b"x-user-id", user.encode())] + ([(b"mcp-session-id", session.encode())] if session else [])
        scope = {"type": "http", "method": "POST" if session is None else "GET", "headers": headers, "user": GATEWAY}
        sent.clear()
        await gate(scope, None, send)
        return int(sent[0]["status"])

    assert await request("alice") == 200
    caller = seen[-1]["lightrag_mcp.caller"]
    assert (caller.user_id, caller.source) == ("alice", "gateway")
    assert seen[-1]["user"].access_token.subject == "alice"  # the SDK's own session check sees the user too
    assert await request("alice", "s-1") == 200
    assert await request("bob", "s-1") == 403 and len(seen) == 2  # bob's request never reached the endpoint
    assert b"another user" in sent[1]["body"]
