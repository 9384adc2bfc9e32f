"""Document-management methods: list, read and delete documents (SPEC §4 Documents).

Reading one document serves the MCP resource `lightrag://documents/{doc_id}` (`mcp_front.resources`)."""

from __future__ import annotations

import functools
import time
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.operations.delete_runs import DeleteRun, run_deletes
from rag_worker.operations.deletion import DELETE_WAIT_SECONDS, DeleteOptions, Failure, Outcome
from rag_worker.operations.listing import (
    add_graph_counts,
    document_view,
    listing_result,
    parse_list_request,
    quoted_names,
    select_views,
    status_row,
    workspace_views,
)
from rag_worker.operations.reading import document_text, newest_document, text_page
from rag_worker.storage.workspace import Workspace


@handles(m.LIST_DOCUMENTS)
async def list_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_list_documents`: filter, sort and page documents; statistics of the workspace."""
    request = parse_list_request(args)
    ws = await ctx.state.engines.get(ctx.workspace)
    listing = await ctx.run_cpu(select_views, await workspace_views(ctx, ws), request)
    await add_graph_counts(ws, listing.page)
    return listing_result(listing, list(ws.deleting.values()))


@handles(m.READ_DOCUMENT)
async def read_document(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """One document of the caller's workspace: its summary and its full text as LightRAG stored it.

    Only the caller's workspace is looked in, so another user's id is simply not found here."""
    ws = await ctx.state.engines.get(ctx.workspace)
    found = await ws.find_document(str(args["document_id"]))
    if found is None:
        raise RagError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            "No document with this id in your knowledge base.",
            suggested_action="List the resources (or call lightrag_list_documents) for the ids that exist.",
        )
    doc_id, row = found
    view = document_view(doc_id, status_row(row), await ws.catalog.get(doc_id) or {})
    await add_graph_counts(ws, [view])
    text = await document_text(ws, doc_id)
    # Half the pipe's frame for the text: the JSON around it, and escapes, fit in the rest.
    shown = await ctx.run_cpu(_fit_utf8, text, ctx.state.settings.max_frame_mb * 2**20 // 2)
    return {"document": view, "text": shown, "text_chars": len(text), "truncated": len(shown) < len(text)}


@handles(m.DOCUMENT_TEXT)
async def read_text(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_read_document`: a document's text by name or id (omitted: the newest), a page at a time."""
    ws = await ctx.state.engines.get(ctx.workspace)
    requested = str(args.get("document") or "")
    found = await ws.find_document(requested) if requested else None
    doc_id = found[0] if found else None if requested else await newest_document(ctx, ws)
    if doc_id is None:
        raise RagError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            f"No document named '{requested[:100]}' in your knowledge base." if requested
            else "Your knowledge base holds no documents yet.",
            suggested_action="lightrag_list_documents shows the names that exist." if requested
            else "Upload one first (upload_to_lightrag).",
        )
    return await text_page(ws, doc_id, int(args["offset"]), int(ctx.state.settings.result_chars))


def _fit_utf8(text: str, max_bytes: int) -> str:
    """`text`, cut to at most `max_bytes` of UTF-8 without splitting a character."""
    if len(text) * 4 <= max_bytes:
        return text
    return text.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore")


@handles(m.DELETE_DOCUMENTS)
async def delete_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_delete_documents`: per-id outcomes; raises only when every id failed alike.

    The deletes run in the worker's background (`DeleteRun`); the call waits for them until
    LIGHTRAG_MCP_WAIT_SECONDS after it arrived, then answers with what is done and names what
    is still being deleted, which goes on."""
    started = time.perf_counter()
    options = DeleteOptions.from_args(args["delete_options"])
    requested = list(dict.fromkeys(str(doc_id).strip() for doc_id in args["document_ids"]))
    ws = await ctx.state.engines.get(ctx.workspace)
    wait = float(ctx.state.settings.wait_seconds)
    already: dict[str, str] = {}  # being deleted by an earlier call's run: id → name
    to_run = []
    for name in requested:
        hit = await ws.find_document(name) if ws.deleting else None  # the run looks each one up anyway
        if hit is not None and hit[0] in ws.deleting:
            already[hit[0]] = ws.deleting[hit[0]]
        else:
            to_run.append(name)
    run = DeleteRun(to_run, options,
                    ready_by=time.monotonic() + min(DELETE_WAIT_SECONDS, wait), report=ctx.progress)
    if run.requested:
        ctx.state.spawn(functools.partial(run_deletes, ctx, ws, run))
        try:
            await run.leased.wait()
            with anyio.move_on_after(max(0.0, ctx.deadline(wait) - time.monotonic())):
                await run.finished.wait()
            if run.planning:  # refusals (not found, still indexing) are answered, never left to the background
                await run.planned.wait()
        finally:
            run.report = None  # answered (or cancelled): the run goes on without reporting
    else:
        run.finished.set()
    if run.finished.is_set() and run.error is not None:
        raise run.error
    outcomes, failures = list(run.outcomes), list(run.failures)
    still = {**already, **({} if run.finished.is_set() else run.remaining)}  # id (or name as requested) → name

    failed = [failure.as_dict() for failure in failures]
    if not outcomes and not still and failures and len({failure.code for failure in failures}) == 1:
        details: dict[str, Any] = {"failed_deletions": failed}
        if run.backup_info:
            details["backup_info"] = run.backup_info
        raise RagError(
            failures[0].code,
            _failures_text(failures, heading="Nothing was deleted"),
            suggested_action=" ".join(dict.fromkeys(failure.as_dict()["suggested_action"] for failure in failures)),
            retryable=all(failure.retryable for failure in failures),
            details=details,
        )
    cascade = await _cascade_totals(ws, outcomes)
    return {
        "deleted_documents": [outcome.found.doc_id for outcome in outcomes],
        "failed_deletions": failed,
        "deleting_documents": list(still),
        "cascade_deletions": cascade,
        "documents": [outcome.as_dict() for outcome in outcomes],
        "backup_info": run.backup_info,
        "processing_time": round(time.perf_counter() - started, 3),
        "message": _delete_message(outcomes, failures, cascade, run.backup_info, options, still=list(still.values())),
    }


async def _cascade_totals(ws: Workspace, outcomes: list[Outcome]) -> dict[str, int]:
    """Totals over the call: an entity two deleted documents shared counts once, by its final fate."""
    graph = ws.rag.chunk_entity_relation_graph
    entities = list(dict.fromkeys(name for outcome in outcomes for name in outcome.found.entities))
    relations = list(dict.fromkeys(pair for outcome in outcomes for pair in outcome.found.relations))
    nodes = await graph.get_nodes_batch(entities) if entities else {}
    edges = await graph.get_edges_batch([{"src": s, "tgt": t} for s, t in relations]) if relations else {}
    kept_relations = sum(1 for s, t in relations if edges.get((s, t)) or edges.get((t, s)))
    return {
        "chunks_deleted": sum(len(outcome.found.chunk_ids) for outcome in outcomes),
        "entities_deleted": len(entities) - len(nodes),
        "entities_rebuilt": len(nodes),
        "relationships_deleted": len(relations) - kept_relations,
        "relationships_rebuilt": kept_relations,
    }


def _failures_text(failures: list[Failure], heading: str) -> str:
    shown = " ".join(f"{f.document_id}: {f.code.value} — {f.message}" for f in failures[:10])
    more = f" And {len(failures) - 10} more." if len(failures) > 10 else ""
    return f"{heading} ({len(failures)} failed): {shown}{more}"


def _delete_message(
    outcomes: list[Outcome],
    failures: list[Failure],
    cascade: dict[str, int],
    backup_info: dict[str, Any] | None,
    options: DeleteOptions,
    still: list[str],
) -> str:
    parts: list[str] = []
    if outcomes:
        names = quoted_names([outcome.found.filename for outcome in outcomes])
        parts.append(
            f"Deleted {len(outcomes)} document(s): {names}. Removed {cascade['chunks_deleted']} chunk(s), "
            f"{cascade['entities_deleted']} entities and {cascade['relationships_deleted']} relations only they "
            f"supported; {cascade['entities_rebuilt']} shared entities and {cascade['relationships_rebuilt']} "
            "relations were kept and rebuilt from the remaining documents."
        )
    if not options.cascade:
        parts.append("cascade_delete was false: no entity or relation was removed from the graph.")
    if still:
        names = quoted_names(still)
        parts.append(
            f"Still deleting {len(still)} document(s): {names}. LightRAG is rebuilding the entities they share with "
            "other documents (minutes in a large knowledge base); the delete goes on by itself, nothing to do. They "
            "stay listed until it ends."
        )
    if failures:
        heading = "Some documents were not deleted" if outcomes or still else "Nothing was deleted"
        parts.append(_failures_text(failures, heading))
    if backup_info:
        parts.append(
            f"Backup {backup_info['backup_id']} ({backup_info['backup_size']} bytes) is in the knowledge base's "
            f"data folder at {backup_info['backup_location']}."
        )
    return " ".join(parts)
