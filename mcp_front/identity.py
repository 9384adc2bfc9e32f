"""Who is calling, and which workspace that means (SPEC §3).

Order: `userId` beside `name`/`arguments` in the raw `tools/call` params (patched
LibreChat), `_meta["lightrag/userId"]`, `LIGHTRAG_MCP_USER_ID` (the administrator's word),
else the default workspace.  When the environment names a user, a call naming a
different one is refused: it is served from neither workspace.  Identity never comes from
tool arguments, which the model writes.

Over HTTP with authentication the credential names the user (`Caller`, left in the request's
ASGI scope by the HTTP identity gate): the call's `userId`/`_meta` may repeat that user, never
name another.  Each credential kind is a namespace of its own unless configured as stdio's.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from config.settings import UNEXPANDED_PLACEHOLDER
from protocol import ErrorCode, RagError

META_USER_KEY = "lightrag/userId"
MAX_USER_ID_LENGTH = 256
#: Where identity comes from: stdio's rules, then the HTTP credentials (a person's token, a
#: gateway token with the user header, an OAuth JWT).
IDENTITY_SOURCES = ("param", "meta", "env", "default", "token", "gateway", "oauth")
#: The ASGI scope key under which the HTTP identity gate leaves the `Caller`.
CALLER_SCOPE_KEY = "lightrag_mcp.caller"
_SLUG = re.compile(r"[^a-z0-9]+")
#: Control, format (bidi overrides, zero-width), surrogate, private-use and line/paragraph
#: separator characters: invisible or misleading in a name, never part of a real user id.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


@dataclass(frozen=True)
class Identity:
    user_id: str | None
    source: str  # one of IDENTITY_SOURCES
    workspace: str
    #: What shared knowledge bases' `role:`/`email:` rules read: the administrator's environment
    #: (stdio) or a gateway's headers (HTTP), never the client's own word.
    roles: tuple[str, ...] = ()
    email: str | None = None


@dataclass(frozen=True)
class Caller:
    """Who an HTTP request comes from, as the identity gate established it.

    `user_id` None: no authentication is configured (loopback only), and stdio's rules apply."""

    user_id: str | None
    source: str  # "token", "gateway", "oauth" or "unauthenticated"
    roles: tuple[str, ...] = ()  # only a gateway passes them (LIGHTRAG_MCP_HTTP_ROLE_HEADER)
    email: str | None = None  # only a gateway passes it (LIGHTRAG_MCP_HTTP_EMAIL_HEADER)


def _slug(text: str, length: int) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:length].strip("_")


def workspace_for(user_id: str | None, default_workspace: str, knowledge_base: str | None = None) -> str:
    """A workspace name safe for every storage backend (letters, digits, underscores).

    A readable slug plus a hash of the exact id, so ids that slug alike (`Ann.B`, `ann_b`)
    never share a workspace.  A named knowledge base nests inside the user's namespace.
    """
    if user_id is None:
        base = _slug(default_workspace, 48) or "default"
    else:
        digest = hashlib.sha256(user_id.encode()).hexdigest()[:12]
        base = f"u_{_slug(user_id, 32) or 'user'}_{digest}"
    if knowledge_base:
        digest = hashlib.sha256(knowledge_base.encode()).hexdigest()[:8]
        base = f"{base}__kb_{_slug(knowledge_base, 24) or 'kb'}_{digest}"
    return base


def _clean_user_id(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_USER_ID_LENGTH:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"The user id in {where} must be a non-empty string of at most {MAX_USER_ID_LENGTH} characters.",
        )
    if any(unicodedata.category(ch) in _HIDDEN_CATEGORIES for ch in value):
        raise RagError(ErrorCode.INVALID_PARAMETER, f"The user id in {where} contains control or invisible characters.")
    if UNEXPANDED_PLACEHOLDER.search(value):
        # A client that forgot to fill in its template would pool every user into one workspace.
        raise RagError(
            ErrorCode.FORBIDDEN,
            f"The user id in {where} is an unexpanded placeholder, not a user.",
            suggested_action="The client must send the signed-in user's id; do not retry this call as it is.",
        )
    return value.strip()


def resolve_identity(
    raw_params: Mapping[str, Any] | None,
    meta: Mapping[str, Any] | None,
    env_user_id: str,
    default_workspace: str,
) -> Identity:
    """Resolve the caller; raises RagError(FORBIDDEN) when the call contradicts the environment."""
    param_user, meta_user = _claimed_users(raw_params, meta)
    env_user = env_user_id.strip() or None
    if env_user is not None:
        _refuse_other_users(
            (param_user, meta_user),
            env_user,
            "This server process serves one user; the call names a different user.",
            "Do not retry; each user must use their own server process.",
        )
        return Identity(env_user, "env", workspace_for(env_user, default_workspace))
    if param_user is not None:
        if meta_user is not None and meta_user != param_user:
            raise RagError(ErrorCode.FORBIDDEN, "The call's userId and _meta user id disagree.")
        return Identity(param_user, "param", workspace_for(param_user, default_workspace))
    if meta_user is not None:
        return Identity(meta_user, "meta", workspace_for(meta_user, default_workspace))
    return Identity(None, "default", workspace_for(None, default_workspace))


def checked_user_id(value: str, where: str) -> str:
    """`value` as a user id, or RagError saying in one line why it cannot be one."""
    cleaned = _clean_user_id(value, where)
    assert cleaned is not None
    return cleaned


def caller_of(request: Any) -> Caller | None:
    """The gate's `Caller` for an HTTP request (`ctx.request`); None over stdio (no request).

    An HTTP request that did not pass the gate is refused, never served by stdio's rules."""
    if request is None:
        return None
    caller = getattr(request, "scope", {}).get(CALLER_SCOPE_KEY)
    if not isinstance(caller, Caller):
        raise RagError(ErrorCode.FORBIDDEN, "The request carries no authenticated caller.")
    return caller


def resolve_caller_identity(
    user_id: str,
    source: str,
    raw_params: Mapping[str, Any] | None,
    meta: Mapping[str, Any] | None,
    default_workspace: str,
    same_users: Collection[str] = ("gateway",),
    roles: tuple[str, ...] = (),
    email: str | None = None,
) -> Identity:
    """The identity of an authenticated HTTP caller; the call may repeat the user, never name another.

    Each credential kind names people in its own namespace (`oauth:alice`, `token:alice`) unless
    `same_users` (LIGHTRAG_MCP_HTTP_SAME_USERS) says its ids are stdio's: a claim an OAuth user
    may choose, or a token's name, never reaches a LibreChat user's knowledge base by accident."""
    _refuse_other_users(
        _claimed_users(raw_params, meta),
        user_id,
        "The call names a different user than the one its credentials authenticate.",
        "Do not retry; a client may only act for the user its token or header names.",
    )
    person = user_id if source in same_users else f"{source}:{user_id}"
    return Identity(person, source, workspace_for(person, default_workspace), roles, email)


def split_roles(raw: str) -> tuple[str, ...]:
    """Roles from a comma-separated value (LibreChat passes one, `ADMIN` or `USER`)."""
    return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))


def _claimed_users(raw_params: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The users a call names itself: its `userId` param and its `_meta` key (client-asserted)."""
    return (
        _clean_user_id((raw_params or {}).get("userId"), "the call's userId"),
        _clean_user_id((meta or {}).get(META_USER_KEY), f"_meta[{META_USER_KEY!r}]"),
    )


def _refuse_other_users(claimed: tuple[str | None, ...], user_id: str, message: str, action: str) -> None:
    """FORBIDDEN when the call names a user other than the one established for it."""
    if any(name is not None and name != user_id for name in claimed):
        raise RagError(ErrorCode.FORBIDDEN, message, suggested_action=action)
