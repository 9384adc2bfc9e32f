"""Query methods: the full query, its streamed form, the simple LibreChat form, and the answer
from passages merged across knowledge bases."""

from __future__ import annotations

from typing import Any

from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.operations.merged_answer import answer_from_passages
from rag_worker.operations.querying import run_query


@handles(m.QUERY)
async def query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    return await run_query(ctx, args)


@handles(m.STREAM_QUERY)
async def stream_query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    return await run_query(ctx, args, stream=True)


@handles(m.QUERY_SIMPLE)
async def simple_query(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`query_lightrag`: mix mode, `max_results` passages, sources optional."""
    passages = m.QUERY.with_defaults({"query": args["query"], "mode": "mix", "chunk_top_k": args["max_results"]})
    result = await run_query(ctx, passages)
    if not args["include_sources"]:  # the passages stay; only where they come from goes
        result["sources"] = [
            {"content": source["content"], "relevance_score": source["relevance_score"]} for source in result["sources"]
        ]
    return result


@handles(m.ANSWER)
async def answer(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """The front's second step of a question searched across knowledge bases: one answer from the merged passages."""
    return await answer_from_passages(ctx, args)
