"""System methods: status, shutdown, health (with a live workspace probe), fault injection."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from protocol.bindings_config import resolve_bindings
from rag_worker.context import RequestContext

log = logging.getLogger("rag_worker.system")


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
    }


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
    from rag_worker.bindings import describe

    summary = describe(resolve_bindings(settings))
    summary["storages"] = {
        "kv": os.environ.get("LIGHTRAG_KV_STORAGE", "JsonKVStorage"),
        "vector": os.environ.get("LIGHTRAG_VECTOR_STORAGE", "NanoVectorDBStorage"),
        "graph": os.environ.get("LIGHTRAG_GRAPH_STORAGE", "NetworkXStorage"),
        "doc_status": os.environ.get("LIGHTRAG_DOC_STATUS_STORAGE", "JsonDocStatusStorage"),
    }
    return summary


async def health(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    result: dict[str, Any] = {
        "status": "healthy",
        "pid": os.getpid(),
        "uptime_s": state.uptime(),
        "rss_mb": state.rss_mb(),
        "versions": state.versions(),
        "workspaces_open": state.workspaces_open(),
        "requests_served": state.requests_served,
        "requests_cancelled": state.requests_cancelled,
        "components": {},
        "notes": [] if state.settings.llm_binding else [NO_LLM_HEALTH_NOTE],
    }
    if args.get("include_detailed"):
        result["components"]["configuration"] = configuration_summary(state.settings)
    if args.get("check_dependencies"):
        started = time.perf_counter()
        rag = (await state.engines.get(ctx.workspace)).rag
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
        result["workspaces_open"] = state.workspaces_open()
    return result


async def debug(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """Fault injection for the test suite (served only with LIGHTRAG_MCP_DEBUG_METHODS=1)."""
    action = args["action"]
    seconds = float(args.get("seconds") or 0)
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
        sys.stdout.write((args.get("text") or "stray output from a library") + "\n")
        sys.stdout.flush()
    elif action == "garbage":
        # Straight onto the protocol pipe: the front must skip these lines and keep serving.
        await ctx.state.send_raw(b"this is not json\n{\"jsonrpc\": \"2.0\"}\n")
        await ctx.state.send_raw(b"x" * int(args.get("size") or 0) + b"\n")
    elif action == "crash":
        os._exit(17)
    padding = "z" * int(args.get("size") or 0) if action == "echo" else ""
    return {"action": action, "pid": os.getpid(), "echo": args.get("text", "") + padding}


def _spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


async def clear_cache(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_clear_cache`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_clear_cache is not built yet.")


async def system_stats(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_system_stats`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_get_system_stats is not built yet.")
