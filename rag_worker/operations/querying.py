"""Queries: retrieval through LightRAG, sources named by document, an answer when an LLM
is configured, the retrieved context for the calling agent when not (SPEC §4, §6).

The answer cache stays off (engine), so an answer never predates new documents.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.graph.sources import CHUNK_MARKER
from rag_worker.operations.reading import whole_document_request, whole_document_result
from rag_worker.operations.result_budget import fit_result
from rag_worker.query_cache import ChunkScores, cosines, observing_chunk_scores, remembered_vector
from rag_worker.storage.catalog import name_from_file_path
from rag_worker.storage.chunk_vectors import checking_once
from rag_worker.storage.vector_flush import chunk_similarities, reading_committed_state
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.querying")

PREVIEW_CHARS = 300
# Not sent with query results (every call would repeat it): the server instructions and the
# health check say it once. Kept here as the one wording of it.
LLM_FAILED_NOTE = (
    "The LLM did not answer (unreachable or too slow), so these are the retrieved passages, not a written "
    "answer: answer from them and cite their filenames. lightrag_health_check shows the LLM's state."
)
WHOLE_DOCUMENT_NOTE = (
    "To summarise or outline one document, read it whole: lightrag_read_document with its file name."
)
NO_RESULTS_NOTE = (
    "NO_RESULTS_FOUND: nothing relevant is in this knowledge base. Rephrase the question, "
    "or upload documents that cover it (upload_to_lightrag)."
)


def query_param(args: dict[str, Any], *, stream: bool, with_llm: bool) -> Any:
    """LightRAG's QueryParam from validated tool arguments."""
    from lightrag import QueryParam

    history = history_of(args)
    param = QueryParam(
        mode=args["mode"],
        top_k=int(args["top_k"]),
        chunk_top_k=int(args["chunk_top_k"]),
        max_total_tokens=int(args["max_tokens"]),
        enable_rerank=bool(args["enable_rerank"]),
        conversation_history=history,
        stream=stream and with_llm,
        only_need_context=not with_llm,
    )
    if args.get("response_type"):
        param.response_type = str(args["response_type"])
    return param


def history_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation history LightRAG is given: the last `history_turns` user/assistant pairs
    (LightRAG 1.5.7 has no history_turns of its own)."""
    turns = int(args["history_turns"])
    history = list(args.get("conversation_history") or [])
    return history[-2 * turns :] if turns else []


async def run_query(ctx: RequestContext, args: dict[str, Any], *, stream: bool = False) -> dict[str, Any]:
    """Retrieve (and answer, with an LLM) for one query; streams answer text as progress."""
    started = time.perf_counter()
    ws = await ctx.state.engines.get(ctx.workspace)
    query = str(args["query"]).strip()
    mode = args["mode"]
    with_llm = ws.llm_configured and not args["only_context"]
    if mode == "bypass" and not ws.llm_configured:
        raise RagError(
            ErrorCode.INVALID_QUERY_MODE,
            "Mode 'bypass' sends the question straight to an LLM without retrieval, and no LLM is configured.",
            suggested_action="Use mode 'mix' to get the relevant passages, or ask the administrator to set LLM_BINDING.",
        )
    if not query:
        raise RagError(ErrorCode.INVALID_PARAMETER, "The query is empty.")
    budget = int(ctx.state.settings.result_chars)
    if not with_llm and whole_document_request(query):  # passages resembling "summary" would not do
        whole = await whole_document_result(ctx, ws, query, budget)
        if whole is not None:
            return _query_result(ws, query, mode, started, whole)
    with checking_once():  # the retrieval and its sources' scores check the kept vectors once
        param = query_param(args, stream=stream, with_llm=with_llm)
        try:
            with reading_committed_state(), observing_chunk_scores() as seen:
                raw = await (ws.rag.aquery_llm if with_llm else ws.rag.aquery_data)(query, param)
        except ValueError as exc:  # LightRAG's own query validation (too short, empty after cleaning)
            raise RagError(ErrorCode.INVALID_PARAMETER, f"The query was refused: {str(exc)[:200]}") from None
        data = raw.get("data") or {}
        llm_failed = False
        answer = None
        if with_llm:
            try:
                answer = await written_answer(ctx, raw.get("llm_response") or {})
            except RagError as exc:
                if exc.code != ErrorCode.PROCESSING_FAILED:
                    raise
                llm_failed = True  # retrieval may still have worked: answer with the passages
        if llm_failed and mode == "naive" and not data.get("chunks"):
            # LightRAG drops the retrieved passages when the answer fails; naive retrieval needs no LLM.
            with reading_committed_state(), observing_chunk_scores() as seen:
                raw = await ws.rag.aquery_data(query, query_param(args, stream=False, with_llm=False))
            data = raw.get("data") or {}
        sources = await _sources(ws, query, data.get("chunks") or [], float(args["cosine_threshold"]), seen)
    found = bool(sources or data.get("entities") or data.get("relationships") or answer)
    if llm_failed:
        if not sources:
            needs = "to find keywords" if mode != "naive" else "and no passage matched without it"
            raise RagError(
                ErrorCode.PROCESSING_FAILED,
                f"The LLM did not answer (unreachable or too slow); mode '{mode}' needs it {needs}.",
                suggested_action="Retry later, or use mode 'naive', which retrieves passages without the LLM; "
                "lightrag_health_check with check_dependencies shows the LLM's state.",
                retryable=True,
            )
        with_llm = False
    notes: list[str] = []
    if llm_failed:
        status = "context_only"
        notes.append(LLM_FAILED_NOTE)
    elif not found:
        whole = await whole_document_result(ctx, ws, query, budget) if whole_document_request(query) else None
        if whole is not None:
            return _query_result(ws, query, mode, started, whole)
        status = "no_results"
        notes.append(NO_RESULTS_NOTE)
    else:
        status = "answered" if with_llm else "context_only"
    if stream and not with_llm and found:
        await stream_sources(ctx, sources)
    entities = [_entity(e) for e in (data.get("entities") or [])]
    relationships = [_relation(r) for r in (data.get("relationships") or [])]
    if not with_llm:  # the calling model reads this context on every later turn: fit it to the budget
        fit_result(query, sources, entities, relationships, budget)
    if found and whole_document_request(query):
        notes.append(WHOLE_DOCUMENT_NOTE)
    found_parts = {"status": status, "answer": answer, "sources": sources, "entities": entities,
                   "relationships": relationships, "notes": notes}
    return _query_result(ws, query, mode, started, found_parts, (raw.get("metadata") or {}).get("keywords"))


async def stream_sources(ctx: RequestContext, sources: list[dict[str, Any]]) -> None:
    """A streamed query without a written answer: each passage's preview as progress."""
    for index, source in enumerate(sources):
        await ctx.progress(index + 1, len(sources), f"[{index + 1}] {source['filename']}: {_preview(source['content'])}")


def _query_result(ws: Workspace, query: str, mode: str, started: float, found: dict[str, Any],
                  keywords: Any = None) -> dict[str, Any]:
    """The query tool's result around what was found (status, answer, sources, graph, notes)."""
    sources, answer = found["sources"], found["answer"]
    return {
        "query": query,
        "mode": mode,
        **found,
        "metadata": {
            "entities_used": len(found["entities"]),
            "relations_used": len(found["relationships"]),
            "chunks_used": len(sources),
            "processing_time_s": round(time.perf_counter() - started, 3),
            "keywords": keywords or {},
            "token_usage": _token_usage(None if answer else sum(len(s["content"]) for s in sources), answer),
            "cache_hit": False,
            "llm": ws.components.get("llm_name"),
        },
    }


async def written_answer(ctx: RequestContext, llm_response: dict[str, Any]) -> str | None:
    """The LLM's answer from LightRAG's `llm_response`, streamed as progress when it streams;
    PROCESSING_FAILED when the LLM gave none."""
    if llm_response.get("is_streaming") and llm_response.get("response_iterator") is not None:
        parts: list[str] = []
        async for piece in llm_response["response_iterator"]:
            if piece:
                parts.append(piece)
                await ctx.progress(len(parts), None, piece)
        return "".join(parts)
    content = llm_response.get("content")
    if content is None:
        raise RagError(
            ErrorCode.PROCESSING_FAILED,
            "The LLM did not return an answer.",
            suggested_action="Retry; if it persists, check the LLM endpoint with lightrag_health_check.",
            retryable=True,
        )
    return str(content)


async def _sources(
    ws: Workspace, query: str, chunks: list[dict[str, Any]], threshold: float, seen: ChunkScores
) -> list[dict[str, Any]]:
    """Name each retrieved chunk's document, with its place in it and its relevance score."""
    if not chunks:
        return []
    chunk_ids = [str(chunk.get("chunk_id") or "") for chunk in chunks]
    origins = await _origins(ws, chunk_ids)
    records = await ws.catalog.get_many(sorted({doc_id for doc_id, _ in origins.values() if doc_id}))
    scores = await _relevance(ws, query, chunk_ids, seen)
    sources = []
    for chunk, chunk_id in zip(chunks, chunk_ids, strict=True):
        doc_id, index = origins.get(chunk_id, ("", None))
        record = records.get(doc_id) or {}
        score = scores.get(chunk_id)
        if score is not None and score < threshold:
            continue
        source = {
            "document_id": doc_id,
            "filename": record.get("filename") or name_from_file_path(str(chunk.get("file_path") or "")) or "unknown",
            "chunk_id": chunk_id,
            "content": str(chunk.get("content") or ""),
            "relevance_score": None if score is None else round(score, 4),
            "positions": None if index is None else {"chunk_index": index},
        }
        if record.get("metadata"):
            source["metadata"] = record["metadata"]
        sources.append(source)
    return sources


async def _origins(ws: Workspace, chunk_ids: list[str]) -> dict[str, tuple[str, int | None]]:
    """Each chunk's document id and position: LightRAG 1.5.7's text pipeline names a chunk
    `<document id>-chunk-<NNN>` after its `chunk_order_index`; other ids are looked up."""
    origins: dict[str, tuple[str, int | None]] = {}
    for chunk_id in chunk_ids:
        doc_id, marker, index = chunk_id.rpartition(CHUNK_MARKER)
        if marker and doc_id and index.isdigit():
            origins[chunk_id] = (doc_id, int(index))
    others = [chunk_id for chunk_id in chunk_ids if chunk_id not in origins]
    if others:
        for chunk_id, row in zip(others, await ws.rag.text_chunks.get_by_ids(others), strict=True):
            if row:
                origins[chunk_id] = (str(row.get("full_doc_id") or ""), row.get("chunk_order_index"))
    return origins


async def _relevance(ws: Workspace, query: str, chunk_ids: list[str], seen: ChunkScores) -> dict[str, float]:
    """Each chunk's cosine similarity to the question, from what LightRAG's retrieval measured:
    the similarity its vector search reported, else the question's remembered vector against the
    chunk vector LightRAG read, or the store's own cosines (`chunk_similarities`).  Never embeds
    the question again: when it is not remembered, the chunks LightRAG did not score go without a
    score."""
    scores = {chunk_id: seen.similarity[chunk_id] for chunk_id in chunk_ids if chunk_id in seen.similarity}
    rest = [chunk_id for chunk_id in chunk_ids if chunk_id not in scores]
    question = remembered_vector(ws.components.get("embedding_func"), query) if rest else None
    if question is None:
        return scores
    try:
        vectors = {chunk_id: seen.vectors[chunk_id] for chunk_id in rest if chunk_id in seen.vectors}
        scores.update(cosines(question, vectors))
        unread = [chunk_id for chunk_id in rest if chunk_id not in vectors]
        if unread:  # named passages (exact_match), or picked without vectors (KG_CHUNK_PICK_METHOD=WEIGHT)
            with reading_committed_state():
                scores.update(await chunk_similarities(ws.rag.chunks_vdb, unread, question))
    except Exception:  # scores are a courtesy: never fail a query over them
        log.debug("relevance scoring failed", exc_info=True)
    return scores


def _entity(entity: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": entity.get("entity_name"),
        "type": entity.get("entity_type"),
        "description": str(entity.get("description") or "")[:1000],
    }


def _relation(relation: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": relation.get("src_id"),
        "target": relation.get("tgt_id"),
        "keywords": relation.get("keywords"),
        "description": str(relation.get("description") or "")[:1000],
    }


def _preview(content: str) -> str:
    return content[:PREVIEW_CHARS] + ("…" if len(content) > PREVIEW_CHARS else "")


def _token_usage(context_chars: int | None, answer: str | None) -> dict[str, Any]:
    """Token counts estimated at 4 characters a token (exact counting cost ~1 ms a query)."""
    prompt = context_chars // 4 if context_chars else None
    completion = len(answer) // 4 if answer else None
    total = (prompt or 0) + (completion or 0) if (prompt or completion) else None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total, "estimated": True}
