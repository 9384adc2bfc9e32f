"""System methods: status, shutdown, health (with a live workspace probe), fault injection."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import Any

import anyio

from config.bindings import resolve_bindings
from config.reporting import iso, stats_request
from config.storages import resolve_storages, storage_summary
from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.bindings import describe
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.graph.entity_update import edit_lock
from rag_worker.operations.caches import CACHE_TYPES, clear, measure
from rag_worker.operations.diagnostics import (
    directory_usage,
    document_stats,
    knowledge_base_counts,
    probe_embedding,
    probe_llm,
    probe_storages,
    read_audit,
)
from rag_worker.operations.limits import document_usage, quota_limits
from rag_worker.storage.engine import describe_holder
from rag_worker.storage.errors import seconds_since_failure

log = logging.getLogger("rag_worker.system")


@handles(m.STATUS)
async def status(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    stats = state.limiter.statistics()
    return {
        "pid": os.getpid(),
        "uptime_s": state.uptime(),
        "rss_mb": state.rss_mb(),
        "versions": state.versions(),
        "requests_served": state.requests_served,
        "in_flight": stats.tasks_waiting + stats.borrowed_tokens,
        "threads_busy": stats.borrowed_tokens,
        "threads_limit": int(stats.total_tokens),
        "workspaces_open": state.workspaces_open(),
        # The operator's view (ping_worker): with paths, unlike health's.
        "engine": state.engines.embedded.describe(show_paths=True) if state.engines is not None else None,
    }


@handles(m.SHUTDOWN)
async def shutdown(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Close every workspace, then end the process once the answer is out."""
    await ctx.state.close()

    async def _exit_soon() -> None:
        await anyio.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    # Fire-and-forget on the loop: the response must be written before we exit.
    import asyncio

    asyncio.get_running_loop().create_task(_exit_soon())
    return {}


NO_LLM_HEALTH_NOTE = (
    "No LLM is configured: documents are indexed with the built-in extractor and queries return the "
    "retrieved passages for you to answer from. Answers and graph quality improve with an LLM: set "
    "LLM_BINDING (openai, azure_openai or ollama), LLM_MODEL and LLM_BINDING_HOST / LLM_BINDING_API_KEY."
)


def configuration_summary(settings: Any) -> dict[str, Any]:
    """What is configured, safe to show: models and storages, never keys or paths."""
    summary = describe(resolve_bindings(settings))
    summary["storages"] = resolve_storages(settings).as_dict()
    return summary


@handles(m.HEALTH)
async def health(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    result: dict[str, Any] = {
        "status": "healthy",
        "pid": os.getpid(),
        "uptime_s": state.uptime(),
        "rss_mb": state.rss_mb(),
        "versions": state.versions(),
        # A count only: workspace names carry other users' ids (the list is for ping_worker's status).
        "workspaces_open": len(state.workspaces_open()),
        "requests_served": state.requests_served,
        "requests_cancelled": state.requests_cancelled,
        "components": {},
        "notes": [] if state.settings.llm_binding else [NO_LLM_HEALTH_NOTE],
    }
    _storage_state(state, result)
    _workspace_lock_state(ctx, result)
    if args["include_detailed"]:
        result["components"]["configuration"] = configuration_summary(state.settings)
        result["components"]["memory"] = {"worker_rss_mb": state.rss_mb()}
        if not args["check_dependencies"]:
            result["components"]["llm"] = _llm_configured(state.settings)
    if args["check_dependencies"]:
        await _check_dependencies(ctx, result)
    if args["include_detailed"] or args["check_dependencies"]:
        result["statistics"] = await knowledge_base_counts(await state.engines.get(ctx.workspace))
    return result


def _workspace_lock_state(ctx: RequestContext, result: dict[str, Any]) -> None:
    """A knowledge base held by another process makes every call WORKSPACE_BUSY: say so, and who."""
    engines = ctx.state.engines
    holder = engines.lock_holder(ctx.workspace) if engines is not None and ctx.workspace else None
    if holder is None:
        return
    result["status"] = "degraded"
    result["components"]["workspace"] = {"status": "busy", **holder}
    result["notes"].append(
        f"Your knowledge base is held by another server process ({describe_holder(holder)}); a call that uses it "
        "waits for that process to let go (an idle one does within seconds) and answers WORKSPACE_BUSY only "
        "when it stays busy (indexing) longer than the call may wait."
    )


def _storage_state(state: Any, result: dict[str, Any]) -> None:
    """Storage fallback and unreachable servers at start-up make the report degraded (SPEC §7)."""
    placement = state.engines.placement if state.engines is not None else None
    if placement is None:
        return
    failed_ago = seconds_since_failure()
    if failed_ago is not None:
        result["status"] = "degraded"
        result["notes"].append(
            f"A call failed {failed_ago:.0f}s ago because the knowledge base's storage was unreachable (STORAGE_ERROR)."
        )
    storage: dict[str, Any] = {**storage_summary(placement.configured), "fallback_active": placement.fallback_active}
    if placement.unreachable:
        storage["unreachable_at_start"] = placement.unreachable
    if placement.configured.embedded or state.engines.embedded.info is not None:
        storage["engine"] = state.engines.embedded.describe()  # pid, version, up; no paths
        failure = storage["engine"].pop("start_failed", None)
        if failure:
            result["status"] = "degraded"
            result["notes"].append(failure)
    result["components"]["storage"] = storage
    if placement.fallback_active:
        result["status"] = "degraded"
        result["notes"].append(
            "STORAGE FALLBACK: a configured storage server was unreachable when the worker started, so new "
            "knowledge bases are stored in local files (they stay there). Fix the server and restart."
        )
    elif placement.unreachable:
        result["status"] = "degraded"
        result["notes"].append("A storage server was unreachable when the worker started: " + "; ".join(placement.unreachable))


def _llm_configured(settings: Any) -> dict[str, Any]:
    llm = resolve_bindings(settings).llm
    if llm is None:
        return {"configured": False, "status": "not configured: built-in extractor"}
    return {"configured": True, "binding": llm.binding, "model": llm.model, "status": "not checked"}


async def _check_dependencies(ctx: RequestContext, result: dict[str, Any]) -> None:
    """Open the caller's workspace and time one cheap call to each storage, the embedding
    model and the LLM endpoint; any failure makes the report degraded."""
    state = ctx.state
    started = time.perf_counter()
    ws = await state.engines.get(ctx.workspace)
    rag = ws.rag
    opened_ms = round((time.perf_counter() - started) * 1000, 1)
    result["components"]["workspace"] = {
        "status": "connected",
        "workspace": ctx.workspace,
        "open_ms": opened_ms,
        "storages": {
            "kv": type(rag.full_docs).__name__,
            "vector": type(rag.chunks_vdb).__name__,
            "graph": type(rag.chunk_entity_relation_graph).__name__,
            "doc_status": type(rag.doc_status).__name__,
        },
        "embedding_dim": rag.embedding_func.embedding_dim,
    }
    components = result["components"]
    components["storages"] = await probe_storages(rag)
    components["embedding"] = await probe_embedding(rag, ws.components)
    components["llm"] = await probe_llm(state.settings)
    failing = [name for name, probe in components["storages"].items() if not probe["ok"]]
    failing += ["embedding"] if not components["embedding"]["ok"] else []
    failing += ["llm"] if components["llm"].get("status") == "unreachable" else []
    if failing:
        result["status"] = "degraded"
        result["notes"].append(f"Not working: {', '.join(failing)} (see components).")


@handles(m.DEBUG)
async def debug(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """Fault injection for the test suite (served only with LIGHTRAG_MCP_DEBUG_METHODS=1)."""
    action = args["action"]
    seconds = float(args["seconds"])
    if action == "sleep":
        await ctx.progress(0, 1, "sleeping")
        await anyio.sleep(seconds)
        await ctx.progress(1, 1, "done")
    elif action == "cpu":
        await ctx.run_cpu(_spin, seconds)
    elif action == "block":
        time.sleep(seconds)  # deliberately blocks the loop: the supervisor must see a hang
    elif action == "print":
        # What a chatty library does: write to stdout. The guard must route it to stderr.
        sys.stdout.write((args["text"] or "stray output from a library") + "\n")
        sys.stdout.flush()
    elif action == "garbage":
        # Straight onto the protocol pipe: the front must skip these lines and keep serving.
        await ctx.state.send_raw(b"this is not json\n{\"jsonrpc\": \"2.0\"}\n")
        await ctx.state.send_raw(b"x" * int(args["size"]) + b"\n")
    elif action == "crash":
        os._exit(17)
    elif action == "close_stdout":
        # A worker whose stdout is closed while the process lives on: /dev/null replaces the
        # protocol pipe's only write end, so the front reads EOF and nothing more arrives.
        fds = getattr(sys.modules.get("__main__"), "_FDS", None)
        if fds is None:
            raise RagError(ErrorCode.INVALID_PARAMETER, "close_stdout needs a worker started as python -m rag_worker.")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fds.write_fd)
        os.close(devnull)
    padding = "z" * int(args["size"]) if action == "echo" else ""
    return {"action": action, "pid": os.getpid(), "echo": args["text"] + padding}


def _spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


@handles(m.CLEAR_CACHE)
async def clear_cache(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_clear_cache`: sizes before, clear, sizes after (see rag_worker/operations/caches.py)."""
    started = time.perf_counter()
    requested = set(args["cache_types"])
    types = set(CACHE_TYPES) if "all" in requested else requested
    ws = await ctx.state.engines.get(ctx.workspace)
    embedding_func = ws.components.get("embedding_func")
    async with edit_lock(ws.name):  # no entity edit runs while the graph is re-read
        before = await measure(ws.rag, embedding_func)
        busy = await ws.pipeline_busy()
        warnings = await clear(ws.rag, embedding_func, types, pipeline_busy=busy)
        after = await measure(ws.rag, embedding_func)
    cleared = [name for name in CACHE_TYPES if name in types]
    kept = before["extraction_kept"]
    freed = [
        f"{name} {before[name].get('entries') or 0}→{after[name].get('entries') or 0} entries"
        for name in cleared
    ]
    message = f"Cleared {', '.join(freed)}."
    if kept.get("entries"):
        message += (
            f" Kept the entity-extraction cache ({kept['entries']} entries): deleting a document rebuilds "
            "the entities it shares with other documents from it."
        )
    return {
        "cleared_caches": cleared,
        "cache_sizes_before": {name: before[name] for name in cleared},
        "cache_sizes_after": {name: after[name] for name in cleared},
        "kept": {"extraction": kept},
        "warnings": warnings,
        "processing_time_s": round(time.perf_counter() - started, 4),
        "message": message + (" " + " ".join(warnings) if warnings else ""),
    }


@handles(m.SYSTEM_STATS)
async def system_stats(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_system_stats`, the worker's share: documents, storage, worker memory and
    the audit log of the caller's workspace (the front adds call statistics and restarts)."""
    start, end, categories = stats_request(args)
    ws = await ctx.state.engines.get(ctx.workspace)
    directory = ctx.state.engines.workspace_dir(ws.name)
    result: dict[str, Any] = {"time_range": {"start": iso(start), "end": iso(end)}}
    if "documents" in categories:
        result["documents"] = await document_stats(ctx, ws, start, end)
    if "storage" in categories:
        usage = await ctx.run_cpu(directory_usage, directory)
        documents = await document_usage(ctx, ws)
        usage["documents"] = documents["documents"]
        usage["stored_document_bytes"] = documents["stored_bytes"]
        usage["limits"] = quota_limits(ctx.state.settings)
        result["storage"] = usage
    if "memory" in categories:
        result["memory"] = {"worker_rss_mb": ctx.state.rss_mb()}
    if "audit" in categories:
        result["audit"] = await ctx.run_cpu(read_audit, directory, start, end, int(args["audit_limit"]))
    return result
