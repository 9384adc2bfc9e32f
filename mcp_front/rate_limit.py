"""Calls per workspace per minute (`LIGHTRAG_MCP_RATE_LIMIT_PER_MINUTE`, SPEC §3): a sliding
window kept by the front, so a refused call never reaches the worker."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from protocol import ErrorCode, RagError

WINDOW_SECONDS = 60.0


class RateLimiter:
    """Sliding-window log per workspace; 0 calls per minute means unlimited."""

    def __init__(self, per_minute: int, *, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.window = window
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}

    def check(self, workspace: str) -> None:
        """Count a call for `workspace`, or raise RATE_LIMITED (the refused call is not counted)."""
        if self.per_minute <= 0:
            return
        now = self._clock()
        calls = self._calls.setdefault(workspace, deque())
        while calls and now - calls[0] >= self.window:
            calls.popleft()
        if len(calls) >= self.per_minute:
            wait = max(1, round(self.window - (now - calls[0])))
            raise RagError(
                ErrorCode.RATE_LIMITED,
                f"This knowledge base allows {self.per_minute} calls per minute; that limit is reached.",
                suggested_action=f"Wait about {wait} seconds, then call the tool again.",
                details={"limit_per_minute": self.per_minute, "retry_after_s": wait},
            )
        calls.append(now)
        if len(self._calls) > 1024:  # forget idle workspaces
            for name in [name for name, log in self._calls.items() if not log or now - log[-1] >= self.window]:
                del self._calls[name]
