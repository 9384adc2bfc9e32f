"""Statistics helpers shared by front and worker: the `time_range` argument of
`lightrag_get_system_stats` (read the same way by both ends) and percentiles."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from protocol.errors import ErrorCode, RagError

PRESET_SECONDS = {"last_hour": 3600.0, "last_day": 86400.0, "last_week": 7 * 86400.0, "last_month": 30 * 86400.0}
DEFAULT_RANGE = "last_day"


def parse_instant(text: str | None) -> float | None:
    """Epoch seconds of an ISO 8601 date or date-time (UTC when no offset); None for empty.

    Raises ValueError for text that is not ISO 8601."""
    if not text:
        return None
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


# What lightrag_get_system_stats reports when stat_categories is not given.
DEFAULT_STAT_CATEGORIES = ("queries", "documents", "performance", "memory", "storage", "restarts")


def stats_request(arguments: dict[str, Any]) -> tuple[float | None, float, set[str]]:
    """(start, end, categories) of a lightrag_get_system_stats call, or INVALID_PARAMETER."""
    try:
        start, end = resolve_time_range(arguments.get("time_range"))
    except ValueError:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            "time_range must be last_hour, last_day, last_week, last_month, all, or {start, end} as ISO 8601 "
            "times with start before end.",
        ) from None
    return start, end, set(arguments.get("stat_categories") or DEFAULT_STAT_CATEGORIES)


def resolve_time_range(value: Any, now: float | None = None) -> tuple[float | None, float]:
    """(start, end) in epoch seconds; start None means from the beginning.

    Raises ValueError for an unknown preset, a malformed time or an end before the start."""
    now = time.time() if now is None else now
    value = DEFAULT_RANGE if value is None else value
    if isinstance(value, str):
        if value == "all":
            return None, now
        if value not in PRESET_SECONDS:
            raise ValueError(f"unknown time range {value!r}")
        return now - PRESET_SECONDS[value], now
    start = parse_instant(value.get("start"))
    end = parse_instant(value.get("end"))
    end = now if end is None else end
    if start is not None and start > end:
        raise ValueError("the start of the time range is after its end")
    return start, end


def iso(seconds: float | None) -> str | None:
    """ISO 8601 in UTC, to the millisecond (a range passed on must not cut off its last second)."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50/p95/p99 (nearest rank), mean and max; None when there are no values."""
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    mean = round(sum(ordered) / len(ordered), 3)
    return {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "mean": mean, "max": round(ordered[-1], 3)}
