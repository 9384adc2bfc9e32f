"""Call statistics kept by the front, and the time ranges of lightrag_get_system_stats."""

from __future__ import annotations

import pytest

from config.reporting import percentiles, resolve_time_range
from mcp_front.stats import CallStats, performance_stats, query_stats
from protocol import ErrorCode, RagError


def test_query_statistics_count_modes_latencies_and_errors_per_workspace() -> None:
    stats = CallStats()
    stats.record("alice", "lightrag_query", 0.010, "ok", {"mode": "local", "metadata": {"cache_hit": False}})
    stats.record("alice", "lightrag_query", 0.030, "ok", {"mode": "naive", "metadata": {"cache_hit": True}})
    stats.record("alice", "query_lightrag", 0.020, "INVALID_PARAMETER", arguments={})
    stats.record("bob", "lightrag_query", 0.5, "ok", {"mode": "global"})
    with pytest.raises(RagError), stats.timing("alice", "lightrag_query", {"mode": "hybrid"}):
        raise RagError(ErrorCode.PROCESSING_TIMEOUT)
    records = stats.window("alice", None, 1e12)
    queries = query_stats(records)
    assert queries["total"] == 4 and queries["succeeded"] == 2
    assert queries["by_mode"] == {"local": 1, "naive": 1, "mix": 1, "hybrid": 1}
    assert queries["errors_by_code"] == {"INVALID_PARAMETER": 1, "PROCESSING_TIMEOUT": 1}
    assert queries["cache_hit_rate"] == 0.5 and queries["latency_ms"]["max"] == 30.0
    assert "global" not in str(queries)  # bob's call is not in alice's numbers
    performance = performance_stats(records, 60.0)
    assert performance["calls_per_minute"] == 4.0 and performance["by_tool"]["lightrag_query"]["errors"] == 1


def test_the_ring_is_bounded() -> None:
    stats = CallStats(capacity=3)
    for i in range(10):
        stats.record("ws", "lightrag_list_documents", i / 1000, "ok")
    assert [r.duration_ms for r in stats.window("ws", None, 1e12)] == [7.0, 8.0, 9.0]


def test_percentiles_use_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentiles(values) == {"p50": 51.0, "p95": 96.0, "p99": 100.0, "mean": 50.5, "max": 100.0}
    assert percentiles([])["p50"] is None


def test_time_ranges_presets_explicit_and_invalid() -> None:
    assert resolve_time_range("last_hour", now=10_000.0) == (6_400.0, 10_000.0)
    assert resolve_time_range("all", now=5.0) == (None, 5.0)
    assert resolve_time_range(None, now=100_000.0) == (13_600.0, 100_000.0)  # default: last day
    start, end = resolve_time_range({"start": "2025-01-01T00:00:00Z", "end": "2025-01-02"}, now=0.0)
    assert (start, end) == (1735689600.0, 1735776000.0)
    for bad in ("yesterday", {"start": "not a date"}, {"start": "2025-02-01", "end": "2025-01-01"}):
        with pytest.raises(ValueError):
            resolve_time_range(bad)
