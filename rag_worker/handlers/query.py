"""Query methods: the full query, its streamed form, and the simple LibreChat form."""

from __future__ import annotations

from typing import Any

from rag_worker.context import RequestContext
from rag_worker.operations.querying import run_query


async def query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    return await run_query(ctx, args)


async def stream_query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    return await run_query(ctx, args, stream=True)


async def simple_query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`query_lightrag`: mix mode, `max_results` passages, sources optional."""
    result = await run_query(ctx, {"query": args["query"], "mode": "mix", "chunk_top_k": int(args.get("max_results", 5))})
    if not args.get("include_sources", True):  # the passages stay; only where they come from goes
        result["sources"] = [
            {"content": source["content"], "relevance_score": source["relevance_score"]} for source in result["sources"]
        ]
    return result
