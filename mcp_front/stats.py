"""`lightrag_get_system_stats`, answered by the front from its call ring (`call_stats`)
plus the worker's share: what lives in the workspace (documents, storage, audit log).
Every figure about calls is filtered to the caller's workspace: nobody sees another user's calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from config.reporting import iso, percentiles, stats_request
from mcp_front.call_stats import QUERY_TOOLS, CallRecord, CallStats
from mcp_front.front_call import FrontCall
from protocol import RagError
from protocol import methods as m

__all__ = ["CallRecord", "CallStats", "performance_stats", "query_stats", "system_stats"]

WORKER_CATEGORIES = {"documents", "storage", "memory", "audit"}


def query_stats(records: list[CallRecord]) -> dict[str, Any]:
    queries = [r for r in records if r.tool in QUERY_TOOLS]
    ok = [r for r in queries if r.outcome == "ok"]
    known = [r.cache_hit for r in ok if r.cache_hit is not None]
    return {
        "total": len(queries),
        "succeeded": len(ok),
        "by_mode": dict(Counter(r.mode or "mix" for r in queries)),
        "errors_by_code": dict(Counter(r.outcome for r in queries if r.outcome != "ok")),
        "latency_ms": percentiles([r.duration_ms for r in ok]),
        "latency_ms_by_mode": {
            mode: percentiles([r.duration_ms for r in ok if r.mode == mode])
            for mode in sorted({r.mode or "mix" for r in ok})
        },
        "cache_hit_rate": round(sum(known) / len(known), 3) if known else None,
    }


def performance_stats(records: list[CallRecord], seconds: float) -> dict[str, Any]:
    by_tool: dict[str, Any] = {}
    for tool in sorted({r.tool for r in records}):
        calls = [r for r in records if r.tool == tool]
        by_tool[tool] = {
            "calls": len(calls),
            "errors": sum(1 for r in calls if r.outcome != "ok"),
            "latency_ms": percentiles([r.duration_ms for r in calls]),
        }
    return {
        "calls": len(records),
        "errors_by_code": dict(Counter(r.outcome for r in records if r.outcome != "ok")),
        "calls_per_minute": round(len(records) / (seconds / 60), 3) if seconds > 0 else None,
        "by_tool": by_tool,
    }


async def system_stats(call: FrontCall) -> dict[str, Any]:
    """The front's numbers for the caller's workspace, merged with the worker's share."""
    arguments, front_started, stats = call.arguments, call.front_started_epoch, call.call_stats
    start, end, categories = stats_request(arguments)
    records = stats.window(call.workspace, start, end)
    span = end - max(start if start is not None else front_started, front_started)
    result: dict[str, Any] = {"time_range": {"start": iso(start), "end": iso(end)}, "notes": []}
    if "queries" in categories:
        result["queries"] = query_stats(records)
    if "performance" in categories:
        result["performance"] = performance_stats(records, span)
    snapshot = call.snapshot
    if "restarts" in categories:
        result["restarts"] = {
            "worker_restarts": snapshot.restarts,
            "worker_recycles": snapshot.recycles,
            "restarts_in_last_window": snapshot.restarts_recent,
            "worker_state": snapshot.state.value,
            "worker_uptime_s": snapshot.uptime_s,
            "last_failure": snapshot.last_failure,
            "note": "counted since this server process started",
        }
    if "memory" in categories:
        result["memory"] = {"front_rss_mb": call.front_rss_mb, "worker_rss_mb": snapshot.rss_mb}
    wanted = categories & WORKER_CATEGORIES
    if wanted:
        # The same start for both processes; the end only when the caller chose one, so the
        # worker's own "now" (a moment later) still includes this instant's events.
        explicit: dict[str, Any] = {} if start is None else {"start": iso(start)}
        chosen = arguments.get("time_range")
        if isinstance(chosen, dict) and chosen.get("end"):
            explicit["end"] = chosen["end"]
        worker_args = {**arguments, "time_range": explicit, "stat_categories": sorted(wanted)}
        try:
            worker = await call.call_worker(m.SYSTEM_STATS.name, worker_args, 30.0)
            for key in wanted:
                if key == "memory":
                    result["memory"].update(worker.get("memory") or {})
                elif key in worker:
                    result[key] = worker[key]
        except RagError as exc:
            result["notes"].append(
                f"The worker's statistics (documents, storage, audit) are unavailable: {exc.code.value}: {exc.message}"
            )
    if start is None or start < front_started:
        result["notes"].append(
            f"Call statistics cover this server process only (since {iso(front_started)}); "
            f"the most recent {stats.capacity} calls are kept."
        )
    result["message"] = _message(result)
    return result


def _p50_note(queries: dict[str, Any]) -> str:
    p50 = queries["latency_ms"]["p50"]
    return f" (p50 {p50:.0f} ms)" if p50 is not None else ""


#: One clause of the message per category present in the result.
_CLAUSES: tuple[tuple[str, Callable[[dict[str, Any]], str]], ...] = (
    ("queries", lambda q: f"{q['total']} queries{_p50_note(q)}"),
    ("documents", lambda d: f"{d['processed']} documents processed, {d['failed']} failed"),
    ("storage", lambda s: f"{s['total_bytes'] / 2**20:.1f} MB stored"),
    ("restarts", lambda r: f"{r['worker_restarts']} worker restarts"),
    ("audit", lambda a: f"{a['returned']} of {a['matched']} audit entries"),
)


def _message(result: dict[str, Any]) -> str:
    period = result["time_range"]
    parts = [f"Statistics from {period['start'] or 'the start'} to {period['end']}"]
    parts += [clause(result[key]) for key, clause in _CLAUSES if result.get(key) is not None]
    return "; ".join(parts) + "."
