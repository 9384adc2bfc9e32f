"""One written answer from passages merged across knowledge bases (SPEC §3 "Search by default").

A question without `workspace` searches the caller's own knowledge base and the shared ones it
reads by default; the front merges their passages by relevance and sends them here, to the
caller's own workspace, whose LLM writes the answer.  The prompt is LightRAG's own answer prompt
(`rag_response`, `naive_rag_response` for naive mode) around LightRAG's own context layout
(`kg_query_context`, `naive_query_context`), filled with the merged passages, each document in the
reference list named with its knowledge base; the LLM is called through LightRAG's `aquery_llm`
in bypass mode with that system prompt, so the binding, its priority queue, the conversation
history and streaming are the ordinary query path's.
"""

from __future__ import annotations

import json
from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.operations.querying import LLM_FAILED_NOTE, history_of, stream_sources, written_answer


async def answer_from_passages(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """The answer to `args["query"]` from `args["sources"]` (and the graph items), or None when no
    LLM is configured or it did not answer (then a note says so; the passages stand)."""
    from lightrag import QueryParam

    ws = await ctx.state.engines.get(ctx.workspace)
    notes: list[str] = []
    if ws.llm_configured and (args["sources"] or args.get("entities") or args.get("relationships")):
        param = QueryParam(mode="bypass", stream=bool(args["stream"]), conversation_history=history_of(args))
        try:
            raw = await ws.rag.aquery_llm(str(args["query"]), param, system_prompt=answer_prompt(args, ws.rag.user_prompt_prefix))
            return {"answer": await written_answer(ctx, raw.get("llm_response") or {}), "notes": notes}
        except RagError as exc:
            if exc.code != ErrorCode.PROCESSING_FAILED:
                raise
            notes.append(LLM_FAILED_NOTE)
    if args["stream"]:  # no answer to stream: the merged passages are (as a one-workspace query streams its own)
        await stream_sources(ctx, args["sources"])
    return {"answer": None, "notes": notes}


def answer_prompt(args: dict[str, Any], user_prompt_prefix: str = "") -> str:
    """LightRAG's answer prompt with the merged passages as its context."""
    from lightrag.prompt import PROMPTS
    from lightrag.utils import resolve_user_prompt

    naive = args["mode"] == "naive"
    template = PROMPTS["naive_rag_response"] if naive else PROMPTS["rag_response"]
    slots = {
        "response_type": args.get("response_type") or "Multiple Paragraphs",
        "user_prompt": resolve_user_prompt(None, user_prompt_prefix).slot,
        # LightRAG's naive template names its context slot differently.
        "content_data" if naive else "context_data": merged_context(args, naive=naive),
    }
    return str(template.format(**slots))


def merged_context(args: dict[str, Any], *, naive: bool) -> str:
    """LightRAG's context layout: passages as JSON lines with a reference id each, and the
    reference list naming every document as `<knowledge base>: <file name>`."""
    from lightrag.prompt import PROMPTS

    references: dict[str, int] = {}
    chunks = []
    for source in args["sources"]:
        document = f"{source.get('knowledge_base') or 'default'}: {source.get('filename') or 'unknown'}"
        reference = references.setdefault(document, len(references) + 1)
        chunks.append(json.dumps({"reference_id": str(reference), "content": source.get("content", "")}, ensure_ascii=False))
    slots = {
        "text_chunks_str": "\n".join(chunks),
        "reference_list_str": "\n".join(f"[{number}] {document}" for document, number in references.items()),
    }
    if naive:
        return str(PROMPTS["naive_query_context"].format(**slots))
    lines = {key: "\n".join(json.dumps(item, ensure_ascii=False) for item in args.get(key) or []) for key in ("entities", "relationships")}
    return str(PROMPTS["kg_query_context"].format(entities_str=lines["entities"], relations_str=lines["relationships"], **slots))
