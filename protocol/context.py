"""The context a tool call carries over the pipe, beside its arguments.

The front resolves who is calling and builds a `CallContext`; the worker reads it back with
`CallContext.from_wire`.  Its wire form is `protocol.methods.CALL_CONTEXT`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode, RagError


@dataclass(frozen=True)
class CallContext:
    """Who calls, in which workspace, and how to answer them."""

    workspace: str
    correlation_id: str
    tool: str = ""  # the MCP tool name the call came in as (statistics, audit)
    user_id: str | None = None
    progress: bool = False  # the client asked for progress notifications
    roots: tuple[str, ...] = ()  # the client's MCP roots as local paths (tools that read the disk)

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
        return wire

    @classmethod
    def from_wire(cls, wire: Any, *, fallback_id: Any = None) -> CallContext:
        """The context a request carries; INVALID_PARAMETER when it names no workspace.

        `fallback_id` stands in for a missing correlation id (a script calling the worker)."""
        if not isinstance(wire, dict) or not wire.get("workspace"):
            raise RagError(ErrorCode.INVALID_PARAMETER, "The call carries no workspace context.")
        user_id = wire.get("user_id")
        return cls(
            workspace=str(wire["workspace"]),
            correlation_id=str(wire.get("correlation_id") or fallback_id or "-"),
            tool=str(wire.get("tool") or ""),
            user_id=None if user_id is None else str(user_id),
            progress=bool(wire.get("progress")),
            roots=tuple(str(root) for root in wire.get("roots") or ()),
        )
