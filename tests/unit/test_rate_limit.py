"""The front's per-workspace sliding window (LIGHTRAG_MCP_RATE_LIMIT_PER_MINUTE)."""

from __future__ import annotations

import pytest

from mcp_front.rate_limit import RateLimiter
from protocol import ErrorCode, RagError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limiter_after_two_calls(seconds_apart: float) -> tuple[Clock, RateLimiter]:
    """A limit of 2 per minute, already used by two calls `seconds_apart` seconds apart."""
    clock = Clock()
    limiter = RateLimiter(2, clock=clock)
    limiter.check("ws")
    clock.now += seconds_apart
    limiter.check("ws")
    return clock, limiter


def test_the_call_past_the_limit_is_refused_with_rate_limited_and_a_wait() -> None:
    clock, limiter = limiter_after_two_calls(10)
    with pytest.raises(RagError) as refused:
        limiter.check("ws")
    assert refused.value.code == ErrorCode.RATE_LIMITED and refused.value.retryable
    assert refused.value.details["retry_after_s"] == 50


def test_the_window_slides_and_refused_calls_do_not_count() -> None:
    clock, limiter = limiter_after_two_calls(30)
    for _ in range(5):
        with pytest.raises(RagError):
            limiter.check("ws")
    clock.now += 30  # the first call left the window; the refused ones never entered it
    limiter.check("ws")
    with pytest.raises(RagError):
        limiter.check("ws")


def test_workspaces_have_separate_windows_and_zero_means_unlimited() -> None:
    limiter = RateLimiter(1, clock=Clock())
    limiter.check("alice")
    limiter.check("bob")
    with pytest.raises(RagError):
        limiter.check("alice")
    unlimited = RateLimiter(0, clock=Clock())
    for _ in range(1000):
        unlimited.check("alice")
