"""Who is calling over HTTP: configured bearer tokens, OAuth 2.1 JWTs, and the identity gate.

    request ─▶ BearerAuthBackend(FrontTokenVerifier) ─▶ RequireAuthMiddleware ─▶ IdentityGate ─▶ MCP
               (SDK: scope["user"], or 401 + WWW-Authenticate)                 (403, or a Caller)

- `TokenTable`: `LIGHTRAG_MCP_HTTP_TOKENS` holds only sha256 digests; a presented token is
  hashed and compared with every entry in constant time.  A `user` token is a person; a
  `gateway` token (LibreChat) must name the user in the user header.
- `JwtVerifier`: RS256/ES256 JWTs of the configured issuer and audience; the user is a claim.
- `IdentityGate`: turns the credential (and, for a gateway, the user, role and e-mail headers)
  into the `Caller`
  that `FrontApp.identify` reads, refuses what does not add up (403, one line), and binds each
  stateful session to the user who opened it.

Imported only on the HTTP path (and by `--hash-token`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import hmac
import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from config.settings import BearerToken, ConfigError, setting
from mcp_front.http_guard import json_rpc_error
from mcp_front.identity import CALLER_SCOPE_KEY, Caller, checked_user_id, split_roles
from protocol import RagError

log = logging.getLogger("mcp_front.auth")

#: The claim under which our verifier records what kind of credential a request carried.
KIND_CLAIM = "lightrag_mcp/kind"
#: The claim under which our verifier records an OAuth user's roles and e-mail (when configured).
PROFILE_CLAIM = "lightrag_mcp/profile"
MAX_ROLES = 64
JWT_ALGORITHMS = ("RS256", "ES256")  # asymmetric only: never none, never a shared HS* secret
JWT_LEEWAY_S = 30.0  # clock skew tolerated on exp/nbf/iat
JWKS_REFETCH_S = 30.0  # an unknown key id triggers at most one JWKS fetch per this many seconds
JWKS_FETCH_TIMEOUT_S = 10.0
MIN_TOKEN_LENGTH = 16
SESSION_HEADER = "mcp-session-id"


def token_digest(token: str) -> str:
    """The sha256 hex digest configured for a bearer token."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenTable:
    """The configured bearer tokens, by digest."""

    def __init__(self, entries: Sequence[BearerToken]) -> None:
        self._entries = tuple((entry, entry.digest.encode()) for entry in entries)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, token: str) -> BearerToken | None:
        """The entry of `token`, comparing with every entry (the time does not tell which matched)."""
        digest = token_digest(token).encode()
        found = None
        for entry, expected in self._entries:
            if hmac.compare_digest(digest, expected):
                found = entry
        return found


FetchJson = Callable[[str], Awaitable[dict[str, Any]]]


async def fetch_json(url: str) -> dict[str, Any]:
    """GET a JSON document in a worker thread (never on the event loop), bounded in time."""
    import httpx

    def get() -> dict[str, Any]:
        response = httpx.get(url, timeout=JWKS_FETCH_TIMEOUT_S, follow_redirects=False)
        response.raise_for_status()
        document = response.json()
        if not isinstance(document, dict):
            raise ValueError(f"{url} did not return a JSON object")
        return document

    return await anyio.to_thread.run_sync(get, limiter=_FETCH_LIMITER)


_FETCH_LIMITER = anyio.CapacityLimiter(1)  # our own: JWKS fetches never queue behind other thread work


def discovery_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: OpenID discovery, then RFC 8414 (path inserted)."""
    parsed = urllib.parse.urlparse(issuer)
    path = parsed.path.rstrip("/")
    return [
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        f"{parsed.scheme}://{parsed.netloc}/.well-known/oauth-authorization-server{path}",
    ]


class JwksCache:
    """The issuer's signing keys: fetched on first use, cached, fetched again when a token names
    a key id we do not hold (key rotation) — at most once per `refetch_s`, one fetch at a time."""

    def __init__(
        self,
        issuer: str,
        jwks_url: str = "",
        fetch: FetchJson = fetch_json,
        refetch_s: float = JWKS_REFETCH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.jwks_url = jwks_url
        self._fetch = fetch
        self._refetch_s = refetch_s
        self._clock = clock
        self._keys: dict[str | None, Any] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def key(self, kid: str | None) -> Any | None:
        """The `jwt.PyJWK` for `kid` (None: the issuer's only key), or None."""
        found = self._find(kid)
        if found is not None:
            return found
        async with self._lock:
            found = self._find(kid)
            recently = self._fetched_at is not None and self._clock() - self._fetched_at < self._refetch_s
            if found is not None or recently:
                return found
            await self._refresh()
            return self._find(kid)

    def _find(self, kid: str | None) -> Any | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        import jwt

        self._fetched_at = self._clock()
        try:
            if not self.jwks_url:
                self.jwks_url = await self._discover()
            keys = jwt.PyJWKSet.from_dict(await self._fetch(self.jwks_url)).keys
        except Exception as exc:  # the issuer is down or misconfigured: tokens fail until it answers
            log.warning("could not load the OAuth signing keys of %s: %s", self.issuer, exc)
            return
        self._keys = {key.key_id: key for key in keys if getattr(key, "public_key_use", None) in (None, "sig")}

    async def _discover(self) -> str:
        for url in discovery_urls(self.issuer):
            try:
                document = await self._fetch(url)
            except Exception:
                continue
            if document.get("issuer") == self.issuer and isinstance(document.get("jwks_uri"), str):
                return str(document["jwks_uri"])
        raise ValueError("no discovery document with this issuer and a jwks_uri")


class JwtVerifier:
    """Validates the issuer's JWTs: signature (RS256/ES256), iss, aud, exp, nbf, and the user claim."""

    def __init__(
        self,
        keys: JwksCache,
        audience: str,
        user_claim: str = "sub",
        leeway: float = JWT_LEEWAY_S,
        role_claim: str = "",
        email_claim: str = "",
    ):
        self.keys = keys
        self.audience = audience
        self.user_claim = user_claim
        self.leeway = leeway
        self.role_claim = role_claim  # "": OAuth users carry no roles (LIGHTRAG_MCP_OAUTH_ROLE_CLAIM)
        self.email_claim = email_claim

    async def verify(self, token: str) -> AccessToken | None:
        """The token's access info, or None (logged with the reason, never the token)."""
        import jwt

        try:
            header = jwt.get_unverified_header(token)
            algorithm = header.get("alg")
            if algorithm not in JWT_ALGORITHMS:
                raise jwt.InvalidAlgorithmError(f"algorithm {str(algorithm)[:16]!r} is not accepted")
            key = await self.keys.key(header.get("kid"))
            if key is None:
                raise jwt.InvalidKeyError("the token is not signed by a key of the issuer")
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.keys.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
            user = claims.get(self.user_claim)
            if not isinstance(user, str):
                raise jwt.MissingRequiredClaimError(self.user_claim)
            user = checked_user_id(user, f"the {self.user_claim!r} claim")
        except (jwt.PyJWTError, RagError, ValueError, TypeError) as exc:
            log.info("JWT refused: %s", exc)
            return None
        scopes = claims.get("scope", "")
        return AccessToken(
            token="",
            client_id=str(claims.get("client_id") or claims.get("azp") or "oauth"),
            scopes=scopes.split() if isinstance(scopes, str) else [],
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=user,
            claims={"iss": claims["iss"], KIND_CLAIM: "oauth", PROFILE_CLAIM: self.profile(claims)},
        )

    def profile(self, claims: dict[str, Any]) -> dict[str, Any]:
        """The roles and e-mail the issuer signed, from the configured claims (a role claim may be a
        list or a space/comma-separated string); what is not a usable string is left out."""
        raw = claims.get(self.role_claim) if self.role_claim else None
        values = raw.replace(",", " ").split() if isinstance(raw, str) else raw if isinstance(raw, list) else []
        roles = [value for value in values if isinstance(value, str) and _usable(value)][:MAX_ROLES]
        email = claims.get(self.email_claim) if self.email_claim else None
        return {"roles": roles, "email": email if isinstance(email, str) and _usable(email) else None}


def _usable(value: str) -> bool:
    try:
        checked_user_id(value, "a claim")
    except RagError:
        return False
    return True


class FrontTokenVerifier:
    """The SDK's `TokenVerifier`: a configured token first, else an OAuth JWT."""

    def __init__(self, table: TokenTable, jwt_verifier: JwtVerifier | None) -> None:
        self.table = table
        self.jwt_verifier = jwt_verifier

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self.table.lookup(token) if len(self.table) else None
        if entry is not None:
            return AccessToken(
                token="",
                client_id=f"{entry.kind}:{entry.name}",
                scopes=[],
                subject=entry.name if entry.kind == "user" else None,
                claims={KIND_CLAIM: entry.kind},
            )
        if self.jwt_verifier is not None and token.count(".") == 2:
            return await self.jwt_verifier.verify(token)
        return None


class Refused(Exception):
    """A request the identity gate refuses: 403 with this one-line reason."""


class SessionOwners:
    """Which principal and user opened each stateful session (bounded; oldest forgotten first).

    Through a gateway every user shares the gateway's credential, so the SDK's own owner check
    cannot tell them apart: a session id is good only for the user it was created for."""

    def __init__(self, limit: int = 20_000) -> None:
        self._owners: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
        self._limit = limit

    def check(self, session_id: str | None, owner: tuple[str, str]) -> None:
        known = self._owners.get(session_id) if session_id else None
        if known is not None and known != owner:
            raise Refused("This MCP session belongs to another user; open a new session.")

    def opened(self, session_id: str, owner: tuple[str, str]) -> None:
        self._owners[session_id] = owner
        while len(self._owners) > self._limit:
            self._owners.popitem(last=False)

    def closed(self, session_id: str) -> None:
        self._owners.pop(session_id, None)


class IdentityGate:
    """ASGI middleware between authentication and the MCP endpoint: decides the `Caller`."""

    def __init__(
        self,
        app: ASGIApp,
        user_header: str,
        authenticated: bool,
        sessions: SessionOwners,
        role_header: str = "",
        email_header: str = "",
    ) -> None:
        self.app = app
        self.user_header = user_header
        self.authenticated = authenticated
        self.sessions = sessions
        self.role_header = role_header  # "" : roles are not read over HTTP
        self.email_header = email_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get(SESSION_HEADER)
        try:
            caller = self.with_profile(self.caller(scope.get("user"), headers.getlist(self.user_header)), headers)
            owner = (principal_name(scope.get("user")), caller.user_id or "")
            if caller.user_id is not None:
                self.sessions.check(session_id, owner)
        except Refused as exc:
            log.warning("refused an HTTP request: %s", exc)
            await forbidden(str(exc), send)
            return
        scope[CALLER_SCOPE_KEY] = caller
        if caller.user_id is None:
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if caller.source == "gateway" and isinstance(user, AuthenticatedUser):
            # The SDK binds a session to (client, issuer, subject): with the asserted user as the
            # subject, its own check refuses another user's request too (404), beside ours (403).
            scope["user"] = AuthenticatedUser(user.access_token.model_copy(update={"subject": caller.user_id}))
        await self.app(scope, receive, self._recording(send, scope["method"], session_id, owner))

    def caller(self, user: Any, asserted: list[str]) -> Caller:
        """The caller a credential (and, for a gateway, the user header) stands for; Refused otherwise."""
        header = self.user_header
        if not self.authenticated:
            if asserted:
                raise Refused(f"The {header} header is accepted only with a gateway token; this server has none.")
            return Caller(None, "unauthenticated")
        if not isinstance(user, AuthenticatedUser):  # RequireAuthMiddleware answered 401 before us
            raise Refused("The request is not authenticated.")
        kind = (user.access_token.claims or {}).get(KIND_CLAIM)
        if len(asserted) > 1:
            raise Refused(f"The {header} header appears more than once.")
        if kind == "gateway":
            if not asserted:
                raise Refused(f"A gateway token must name the user in the {header} header.")
            return Caller(header_user_id(asserted[0], header), "gateway")
        subject = user.access_token.subject
        if subject is None or kind not in {"user", "oauth"}:
            raise Refused("The credential names no user.")
        if asserted and asserted[0].strip() != subject:
            raise Refused(f"The {header} header names another user; only a gateway token may name the user.")
        if kind == "user":
            return Caller(subject, "token")
        profile = (user.access_token.claims or {}).get(PROFILE_CLAIM) or {}
        return Caller(subject, "oauth", tuple(profile.get("roles") or ()), profile.get("email"))

    def with_profile(self, caller: Caller, headers: Headers) -> Caller:
        """The caller with the role(s) and e-mail a gateway passed in the configured headers.

        Shared knowledge bases grant rights by role and e-mail, so only the gateway, which names
        the user, may state them: the same headers from a person's token, an OAuth client or an
        unauthenticated request are refused, never read.  A header not configured is ignored."""
        sent = {name: headers.getlist(name) for name in (self.role_header, self.email_header) if name}
        sent = {name: values for name, values in sent.items() if values}
        if not sent:
            return caller
        if caller.source != "gateway":
            raise Refused(f"The {', '.join(sent)} header is accepted only with a gateway token.")
        for name, values in sent.items():
            if len(values) > 1:
                raise Refused(f"The {name} header appears more than once.")
        roles = header_user_id(sent[self.role_header][0], self.role_header) if self.role_header in sent else ""
        email = header_user_id(sent[self.email_header][0], self.email_header) if self.email_header in sent else None
        return dataclasses.replace(caller, roles=split_roles(roles), email=email)

    def _recording(self, send: Send, method: str, session_id: str | None, owner: tuple[str, str]) -> Send:
        """`send`, noting the session a request opened (or closed) for its owner."""

        async def send_and_record(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                if session_id is None:
                    opened = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                    if opened:
                        self.sessions.opened(opened, owner)
                elif method == "DELETE":
                    self.sessions.closed(session_id)
            await send(message)

        return send_and_record


def principal_name(user: Any) -> str:
    """The credential's own name (`gateway:librechat`, `user:ann`, an OAuth client id)."""
    return str(user.access_token.client_id) if isinstance(user, AuthenticatedUser) else ""


def header_user_id(raw: str, header: str) -> str:
    """A user id asserted in a header (UTF-8 on the wire), or Refused with the one-line reason."""
    try:
        value = raw.encode("latin-1").decode("utf-8")
        return checked_user_id(value, f"the {header} header")
    except UnicodeError:
        raise Refused(f"The {header} header is not valid UTF-8.") from None
    except RagError as exc:
        raise Refused(exc.message) from None


async def forbidden(reason: str, send: Send) -> None:
    """403 with the reason as a JSON-RPC error (the SDK's clients surface its message)."""
    await json_rpc_error(send, 403, f"Forbidden: {reason}")


def hash_token_command(label: str | None, token: str) -> tuple[int, str]:
    """`python -m mcp_front --hash-token [KIND:NAME]`: the digest of the token read on stdin and
    the setting entry to paste; (exit code, the text for stdout or the error line)."""
    token = token.strip("\r\n")
    if len(token) < MIN_TOKEN_LENGTH or token != token.strip():
        return 2, (
            f"a bearer token needs at least {MIN_TOKEN_LENGTH} characters and no surrounding spaces "
            "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    digest = token_digest(token)
    if label is None:
        return 0, f"{digest}\nLIGHTRAG_MCP_HTTP_TOKENS=user:<name>:{digest}  (or gateway:<name>:{digest})\n"
    try:
        setting("LIGHTRAG_MCP_HTTP_TOKENS").parse("--hash-token", f"{label}:{digest}")
    except ConfigError:
        return 2, f"--hash-token {label[:64]!r}: expected user:NAME or gateway:NAME"
    return 0, f"{digest}\nLIGHTRAG_MCP_HTTP_TOKENS={label}:{digest}\n"
