"""The context a tool call carries over the pipe, beside its arguments.

The front resolves who is calling and builds a `CallContext`; the worker reads it back with
`CallContext.from_wire`.  Its wire form is `protocol.methods.CALL_CONTEXT`.

A named knowledge base is a workspace nested in its owner's: `<owner>__kb_<slug>_<hash>`
(`mcp_front.identity.workspace_for`), so the worker can list one caller's knowledge bases
from the owner's workspace name alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode, RagError

#: What separates the owner's workspace from a named knowledge base's part in a workspace name.
KNOWLEDGE_BASE_INFIX = "__kb_"
#: The longest knowledge base name a caller may use.
MAX_KNOWLEDGE_BASE_NAME = 40
#: What a caller calls its default knowledge base (the one a call without `workspace` uses).
DEFAULT_KNOWLEDGE_BASE = "default"
#: Names a model or a template may write for "no value" or "every knowledge base": a knowledge
#: base of that name would quietly hold what the caller meant to put elsewhere.
RESERVED_NAMES = ("all", "any", "none", "null", "nil", "undefined", "global", "shared")
_NAME = re.compile(r"[A-Za-z0-9_-]*")
_PATH_LIKE = re.compile(r"[/\\.:~]")
_SHOWN = 60  # how much of a refused name a message quotes


def name_problem(value: Any) -> str | None:
    """Which rule a knowledge base name breaks and what is allowed, or None for a good name."""
    if not isinstance(value, str):
        return f"must be a knowledge base name (a string), not {type(value).__name__}"
    shown = repr(value[:_SHOWN] + ("…" if len(value) > _SHOWN else ""))
    if _PATH_LIKE.search(value):
        return f"{shown} looks like a path; a knowledge base name has no /, \\, ., : or ~"
    if len(value) > MAX_KNOWLEDGE_BASE_NAME:
        return f"is {len(value)} characters long; a knowledge base name has at most {MAX_KNOWLEDGE_BASE_NAME}"
    if not _NAME.fullmatch(value):
        bad = next(ch for ch in value if not _NAME.fullmatch(ch))
        return f"{shown} contains {bad!r}; a knowledge base name uses only letters, digits, _ and -"
    if value.lower() in RESERVED_NAMES:
        return f"{value!r} is a reserved name ({', '.join(RESERVED_NAMES)}); choose another"
    return None


@dataclass(frozen=True)
class CallContext:
    """Who calls, in which workspace, and how to answer them."""

    workspace: str
    correlation_id: str
    tool: str = ""  # the MCP tool name the call came in as (statistics, audit)
    user_id: str | None = None
    progress: bool = False  # the client asked for progress notifications
    roots: tuple[str, ...] = ()  # the client's MCP roots as local paths (tools that read the disk)
    knowledge_base: str | None = None  # the named knowledge base as the caller wrote it; None: the default

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "workspace": self.workspace,
            "correlation_id": self.correlation_id,
            "progress": self.progress,
            "tool": self.tool,
        }
        if self.user_id is not None:
            wire["user_id"] = self.user_id
        if self.roots:
            wire["roots"] = list(self.roots)
        if self.knowledge_base is not None:
            wire["knowledge_base"] = self.knowledge_base
        return wire

    @classmethod
    def from_wire(cls, wire: Any, *, fallback_id: Any = None) -> CallContext:
        """The context a request carries; INVALID_PARAMETER when it names no workspace.

        `fallback_id` stands in for a missing correlation id (a script calling the worker)."""
        if not isinstance(wire, dict) or not wire.get("workspace"):
            raise RagError(ErrorCode.INVALID_PARAMETER, "The call carries no workspace context.")
        user_id = wire.get("user_id")
        knowledge_base = wire.get("knowledge_base")
        return cls(
            workspace=str(wire["workspace"]),
            correlation_id=str(wire.get("correlation_id") or fallback_id or "-"),
            tool=str(wire.get("tool") or ""),
            user_id=None if user_id is None else str(user_id),
            progress=bool(wire.get("progress")),
            roots=tuple(str(root) for root in wire.get("roots") or ()),
            knowledge_base=None if knowledge_base is None else str(knowledge_base),
        )
