"""The front's record of tool calls: a bounded in-memory ring, filtered per workspace.

The front records every tool call (tool, workspace, query mode, duration, outcome).  The
front outlives worker restarts, so the numbers do too.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from protocol import RagError

RING_SIZE = 50_000
#: Health says `degraded` while a call has timed out this recently (calls are stuck).
STUCK_WINDOW_S = 120.0
QUERY_TOOLS = frozenset({"lightrag_query", "lightrag_stream_query", "query_lightrag"})


@dataclass(frozen=True, slots=True)
class CallRecord:
    at: float  # epoch seconds, when the call ended
    workspace: str
    tool: str  # canonical tool name
    duration_ms: float
    outcome: str  # "ok" or the error code
    mode: str | None = None
    cache_hit: bool | None = None


class CallStats:
    """The ring of recent calls (oldest dropped first)."""

    def __init__(self, capacity: int = RING_SIZE) -> None:
        self._records: deque[CallRecord] = deque(maxlen=capacity)

    def record(
        self,
        workspace: str,
        tool: str,
        duration_s: float,
        outcome: str,
        result: dict[str, Any] | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        mode = cache_hit = None
        if tool in QUERY_TOOLS:
            mode = str((result or {}).get("mode") or (arguments or {}).get("mode") or "mix")
            metadata = (result or {}).get("metadata")
            if isinstance(metadata, dict) and isinstance(metadata.get("cache_hit"), bool):
                cache_hit = metadata["cache_hit"]
        self._records.append(
            CallRecord(time.time(), workspace, tool, round(duration_s * 1000, 3), outcome, mode, cache_hit)
        )

    def timing(self, workspace: str, tool: str, arguments: dict[str, Any]) -> _Timing:
        """Time the call in a `with` block and record it, whatever its outcome."""
        return _Timing(self, workspace, tool, arguments)

    def window(self, workspace: str, start: float | None, end: float) -> list[CallRecord]:
        return [
            r for r in self._records if r.workspace == workspace and (start is None or r.at >= start) and r.at <= end
        ]

    def recent(self, outcome: str, seconds: float) -> int:
        """How many calls of any workspace ended with `outcome` within the last `seconds`."""
        since = time.time() - seconds
        count = 0
        for record in reversed(self._records):
            if record.at < since:
                break
            count += record.outcome == outcome
        return count

    @property
    def capacity(self) -> int:
        return self._records.maxlen or 0


class _Timing:
    def __init__(self, stats: CallStats, workspace: str, tool: str, arguments: dict[str, Any]) -> None:
        self._stats, self._workspace, self._tool, self._arguments = stats, workspace, tool, arguments
        self.result: dict[str, Any] | None = None
        self._started = 0.0

    def __enter__(self) -> _Timing:
        self._started = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        if error is None:
            outcome = "ok"
        elif isinstance(error, RagError):
            outcome = error.code.value
        elif isinstance(error, Exception):
            outcome = "INTERNAL_ERROR"
        else:
            outcome = "REQUEST_CANCELLED"
        seconds = time.perf_counter() - self._started
        self._stats.record(self._workspace, self._tool, seconds, outcome, self.result, self._arguments)
