"""`lightrag_health_check`, answered by the front: it works even with the worker down."""

from __future__ import annotations

import os
import time
from typing import Any

from config.settings import Settings
from mcp_front.front_call import FrontCall
from mcp_front.identity import IDENTITY_SOURCES
from mcp_front.render import render_compact
from mcp_front.restart_policy import WorkerState
from protocol import ErrorCode, RagError
from protocol import methods as m
from protocol.schema import array, number, obj, open_object, string

FRONT_VERSION = "0.1.0"
WORKER_HEALTH_TIMEOUT = 20.0

HEALTH_OUTPUT_SCHEMA = obj(
    {
        "status": string(enum=["healthy", "starting", "degraded", "unhealthy"]),
        "version": string(max_length=32),
        "uptime_s": number(maximum=1e9),
        "workspace": string(max_length=128),
        "identity_source": string(enum=list(IDENTITY_SOURCES)),
        "components": open_object("front, worker and (with check_dependencies) workspace state"),
        "worker_details": open_object("What the worker reports about itself, when it is reachable."),
        "statistics": open_object(
            "Your knowledge base (include_detailed or check_dependencies): documents by status, entities, "
            "relations, chunks, indexing queue."
        ),
        "memory": open_object("RSS in MB of the front and worker processes."),
        "limits": open_object("Per-workspace limits in force (0/null: unlimited)."),
        "notes": array(string(max_length=2000), max_items=50),
    },
    closed=False,
)

def limits_of(settings: Settings) -> dict[str, Any]:
    """The per-workspace limits in force (null: unlimited)."""
    return {
        "rate_limit_per_minute": settings.rate_limit_per_minute or None,
        "max_documents": settings.max_documents or None,
        "max_storage_mb": settings.max_storage_mb or None,
    }


async def health_check(call: FrontCall) -> dict[str, Any]:
    """Combine the supervisor's view with the worker's own report (when it answers).

    With include_detailed / check_dependencies the worker adds per-storage probes (class,
    ok, latency), the embedding model (name, dim, latency of one embedding), the LLM endpoint
    (configured or not, reachability), configuration without secrets and statistics."""
    arguments, workspace, front_rss_mb = call.arguments, call.workspace, call.front_rss_mb
    snapshot = call.snapshot
    notes: list[str] = []
    components: dict[str, Any] = {
        "front": {"status": "running", "pid": os.getpid(), "rss_mb": front_rss_mb},
        "worker": snapshot.as_dict(),
    }
    status = "healthy"
    details: dict[str, Any] = {}
    statistics: dict[str, Any] | None = None
    if call.worker_ready:
        try:
            timeout = WORKER_HEALTH_TIMEOUT if arguments["check_dependencies"] else 5.0
            details = await call.call_worker(m.HEALTH.name, arguments, timeout)
            components.update(details.pop("components", {}) or {})
            statistics = details.pop("statistics", None)
            notes.extend(details.pop("notes", []) or [])
            if details.get("status") != "healthy":
                status = "degraded"
        except RagError as exc:
            status = "degraded"
            notes.append(f"The worker did not complete the health check: {exc.code.value}: {exc.message}")
            if exc.code == ErrorCode.WORKSPACE_BUSY:
                components["workspace"] = {"status": "busy", "workspace": workspace}
    elif snapshot.state is WorkerState.STARTING and not snapshot.last_failure:
        # A first start or a planned recycle: nothing is wrong, calls wait for it.
        status = "starting"
        notes.append("The worker is starting (a few seconds); calls wait for it.")
    elif snapshot.state in {WorkerState.STARTING, WorkerState.RESTARTING}:
        status = "degraded"
        notes.append("The worker is restarting after a failure; calls wait for it briefly.")
    else:
        status = "unhealthy"
        notes.append(
            "The worker is unavailable after repeated failures; calls fail fast until a probe restart succeeds."
            if snapshot.state is WorkerState.CIRCUIT_OPEN
            else f"The worker is {snapshot.state.value}."
        )
    if snapshot.last_failure and status != "healthy":
        notes.append(f"Last worker failure: {snapshot.last_failure}.")
    result: dict[str, Any] = {
        "status": status,
        "version": FRONT_VERSION,
        "uptime_s": round(time.monotonic() - call.started, 3),
        "workspace": workspace,
        "identity_source": call.identity.source,
        "components": components,
        "worker_details": details,
        "notes": notes,
    }
    if statistics is not None:
        result["statistics"] = statistics
    if arguments["include_detailed"]:
        result["memory"] = {"front_rss_mb": front_rss_mb, "worker_rss_mb": snapshot.rss_mb}
        result["limits"] = limits_of(call.settings)
    return result


def render_health(result: dict[str, Any]) -> str:
    """The health result as text with each fact once: the worker's own report, the storages and
    the memory figures repeat what `components` already says (pid, uptime, RSS, versions)."""
    shown = dict(result)
    components = {key: dict(value) if isinstance(value, dict) else value
                  for key, value in (shown.get("components") or {}).items()}
    worker = components.get("worker") or {}
    shown["worker_details"] = {
        key: value for key, value in (shown.get("worker_details") or {}).items()
        if key not in worker and not (key == "status" and value == shown.get("status"))
    }
    storages = (components.get("storage") or {}).get("storages")
    for name in ("configuration", "workspace"):
        part = components.get(name)
        if isinstance(part, dict):
            components[name] = {key: value for key, value in part.items()
                                if not (key == "storages" and value == storages)
                                and not (key == "workspace" and value == shown.get("workspace"))}
    probes = components.get("storages")
    if isinstance(probes, dict) and isinstance(storages, dict):  # the probes' classes are the storages line's
        components["storages"] = {kind: {key: value for key, value in probe.items()
                                         if not (key == "class" and value == storages.get(kind))}
                                  if isinstance(probe, dict) else probe for kind, probe in probes.items()}
    if "rss_mb" in worker:  # the front's and worker's RSS are in their components
        components.pop("memory", None)
        shown.pop("memory", None)
    shown["components"] = components
    return render_compact(shown)
