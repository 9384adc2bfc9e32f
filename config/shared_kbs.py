"""Shared knowledge bases (`LIGHTRAG_MCP_SHARED_KBS`, SPEC §3): the team's handbook every user
reads and only its editors write.

    {"handbook": {"read": ["*"], "write": ["alice", "role:ADMIN"], "search_by_default": true}}

A JSON object, or `@path` to a JSON or YAML file holding one.  Members are user ids (exactly as
the server names the caller: `token:alice` for a person token over HTTP), `*` (everyone),
`role:NAME` and `email:ADDRESS` (when the caller's identity carries them: the administrator's
environment over stdio, a gateway's headers over HTTP).  A writer may also read.

The workspace of a shared knowledge base is nested under no user (`shared_<slug>_<hash>`), so
no user id, named knowledge base or default workspace can ever map onto it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.context import DEFAULT_KNOWLEDGE_BASE, name_problem

#: The prefix of every shared knowledge base's workspace; user workspaces start `u_` or are the
#: slugged default workspace, which cannot be `shared_…` (`workspace_for` refuses it).
SHARED_WORKSPACE_PREFIX = "shared_"
EVERYONE = "*"
ROLE, EMAIL = "role:", "email:"
RIGHTS = ("read", "write")
_KEYS = frozenset({*RIGHTS, "search_by_default", "description"})
_MAX_MEMBER = 256
_SLUG = re.compile(r"[^a-z0-9]+")


class SharedKbError(ValueError):
    """The configuration is wrong; the message says where, in one line."""


@dataclass(frozen=True)
class Member:
    """Who a shared knowledge base is for: what the caller carries (user id, roles, e-mail)."""

    user_id: str | None
    roles: frozenset[str] = frozenset()  # lower-cased
    email: str | None = None  # lower-cased

    def matches(self, entry: str) -> bool:
        """Does one `read`/`write` entry name this caller?  A `role:`/`email:` entry matches only a
        role or e-mail the identity carries, never a user id that happens to be spelled so."""
        if entry == EVERYONE:
            return True
        if entry.startswith(ROLE):
            return entry[len(ROLE) :].lower() in self.roles
        if entry.startswith(EMAIL):
            return self.email is not None and entry[len(EMAIL) :].lower() == self.email
        return self.user_id is not None and entry == self.user_id


@dataclass(frozen=True)
class SharedKnowledgeBase:
    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    search_by_default: bool = False
    description: str = ""

    @property
    def workspace(self) -> str:
        digest = hashlib.sha256(self.name.lower().encode()).hexdigest()[:12]
        return f"{SHARED_WORKSPACE_PREFIX}{_SLUG.sub('_', self.name.lower()).strip('_')[:24] or 'kb'}_{digest}"

    def may(self, right: str, member: Member) -> bool:
        """May `member` use this knowledge base for `right` ("read" or "write")?  Writers read too."""
        entries = self.write if right == "write" else (*self.read, *self.write)
        return any(member.matches(entry) for entry in entries)

    def rule(self, right: str) -> str:
        """The rule a refusal names: `handbook: writing needs one of: alice, role:ADMIN`."""
        entries = self.write if right == "write" else tuple(dict.fromkeys((*self.read, *self.write)))
        verb = "writing" if right == "write" else "reading"
        return f"{self.name}: {verb} needs one of: {', '.join(entries) or '(nobody)'}"


@dataclass(frozen=True)
class SharedKbs:
    """The configured shared knowledge bases, by lower-cased name."""

    by_name: Mapping[str, SharedKnowledgeBase]

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def lookup(self, name: str) -> SharedKnowledgeBase | None:
        return self.by_name.get(name.lower())

    def readable(self, member: Member) -> list[SharedKnowledgeBase]:
        return [kb for kb in self.by_name.values() if kb.may("read", member)]

    def searched_by_default(self, member: Member) -> list[SharedKnowledgeBase]:
        return [kb for kb in self.readable(member) if kb.search_by_default]


NO_SHARED_KBS = SharedKbs({})


def parse_shared_kbs(raw: str) -> SharedKbs:
    """The configuration from the variable's text (JSON, or `@path` to JSON/YAML); SharedKbError."""
    text = raw.strip()
    if not text:
        return NO_SHARED_KBS
    if text.startswith("@"):
        document = _read_file(Path(text[1:]).expanduser())
    else:
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise SharedKbError(f"is not valid JSON ({exc.args[0]})") from None
    if not isinstance(document, dict):
        raise SharedKbError("must be an object of knowledge base name → {read, write, search_by_default}")
    shared: dict[str, SharedKnowledgeBase] = {}
    for name, body in document.items():
        kb = _knowledge_base(name, body)
        if kb.name.lower() in shared:
            raise SharedKbError(f"{name!r} is declared twice (names are case-insensitive)")
        shared[kb.name.lower()] = kb
    return SharedKbs(shared)


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise SharedKbError(f"cannot read {path}: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    if path.suffix.lower() in {".yaml", ".yml"}:
        import yaml  # only for a YAML file

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SharedKbError(f"{path} is not valid YAML ({str(exc).splitlines()[0]})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise SharedKbError(f"{path} is not valid JSON ({exc.args[0]})") from None


def _knowledge_base(name: Any, body: Any) -> SharedKnowledgeBase:
    problem = name_problem(name)
    if problem is None and str(name).lower() == DEFAULT_KNOWLEDGE_BASE:
        problem = "'default' is every user's own knowledge base"
    if problem is not None:
        raise SharedKbError(f"knowledge base {str(name)[:60]!r}: the name {problem}")
    if not isinstance(body, dict):
        raise SharedKbError(f"{name}: must be an object with read and write lists")
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise SharedKbError(f"{name}: unknown key {unknown[0]!r} (expected {', '.join(sorted(_KEYS))})")
    search = body.get("search_by_default", False)
    if not isinstance(search, bool):
        raise SharedKbError(f"{name}: search_by_default must be true or false")
    description = body.get("description", "")
    if not isinstance(description, str):
        raise SharedKbError(f"{name}: description must be a string")
    read, write = (_members(name, right, body.get(right, [])) for right in RIGHTS)
    if not read and not write:
        raise SharedKbError(f"{name}: read and write are both empty; nobody could use it")
    return SharedKnowledgeBase(name, read, write, search, description[:300])


def _members(name: str, right: str, entries: Any) -> tuple[str, ...]:
    if not isinstance(entries, list):
        raise SharedKbError(f"{name}.{right}: must be a list of members (user ids, *, role:NAME, email:ADDRESS)")
    members: list[str] = []
    for position, entry in enumerate(entries, 1):
        if not isinstance(entry, str) or not entry.strip() or len(entry) > _MAX_MEMBER or entry != entry.strip():
            raise SharedKbError(f"{name}.{right}: entry {position} is not a member (a non-empty string without surrounding spaces)")
        if entry in {ROLE, EMAIL} or (entry.startswith(EMAIL) and "@" not in entry):
            raise SharedKbError(f"{name}.{right}: entry {position} ({entry[:60]!r}) names no role or e-mail address")
        members.append(entry)
    return tuple(dict.fromkeys(members))


def caller_member(user_id: str | None, roles: Collection[str] = (), email: str | None = None) -> Member:
    """The caller as rules see it (roles and e-mail compared case-insensitively)."""
    return Member(user_id, frozenset(role.strip().lower() for role in roles if role.strip()), (email or "").strip().lower() or None)
