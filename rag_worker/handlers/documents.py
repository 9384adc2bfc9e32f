"""Document-management methods: list, read and delete documents (SPEC §4 Documents).

Reading one document serves the MCP resource `lightrag://documents/{doc_id}` (`mcp_front.resources`)."""

from __future__ import annotations

import time
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.operations.backups import write_backup
from rag_worker.operations.changes import announce_documents_changed
from rag_worker.operations.deletion import (
    DELETE_WAIT_SECONDS,
    POLL_SECONDS,
    Contribution,
    DeleteOptions,
    Failure,
    Outcome,
    Progress,
    delete_inspected,
    inspect,
    not_ready_failure,
    readiness,
    restrict_failure,
)
from rag_worker.operations.listing import (
    add_graph_counts,
    document_view,
    listing_result,
    parse_list_request,
    select_views,
    status_row,
    workspace_views,
)
from rag_worker.operations.reading import document_text, newest_document, text_page
from rag_worker.storage.catalog import state_of
from rag_worker.storage.workspace import Workspace


@handles(m.LIST_DOCUMENTS)
async def list_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_list_documents`: filter, sort and page documents; statistics of the workspace."""
    request = parse_list_request(args)
    ws = await ctx.state.engines.get(ctx.workspace)
    listing = await ctx.run_cpu(select_views, await workspace_views(ctx, ws), request)
    await add_graph_counts(ws, listing.page)
    return listing_result(listing)


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


Target = tuple[str, dict[str, Any]]  # (id as requested, status row)


@handles(m.DELETE_DOCUMENTS)
async def delete_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_delete_documents`: per-id outcomes; raises only when every id failed alike."""
    started = time.perf_counter()
    options = DeleteOptions.from_args(args["delete_options"])
    requested = list(dict.fromkeys(str(doc_id).strip() for doc_id in args["document_ids"]))
    ws = await ctx.state.engines.get(ctx.workspace)
    budget = min(DELETE_WAIT_SECONDS, float(ctx.state.settings.wait_seconds))
    deadline = time.monotonic() + budget
    total_steps = len(requested) + 1
    failures: list[Failure] = []
    outcomes: list[Outcome] = []
    backup_info: dict[str, Any] | None = None

    async def waiting(_: str) -> None:
        elapsed = budget - max(0.0, deadline - time.monotonic())
        fraction = min(0.99, elapsed / budget) if budget else 0.99
        await ctx.progress(fraction, total_steps, f"waiting for indexing to finish before deleting ({elapsed:.0f} s)")

    # Held throughout, so an upload of the same content or name cannot interleave with the delete.
    async with ws.ingest_lock:
        targets: dict[str, Target] = {}
        for name in requested:
            hit = await ws.find_document(name)
            if hit is None:
                failures.append(
                    Failure(
                        name,
                        ErrorCode.DOCUMENT_NOT_FOUND,
                        "No document with this id or file name in your knowledge base (already deleted?). "
                        "lightrag_list_documents shows the ids.",
                    )
                )
            elif hit[0] not in targets:
                targets[hit[0]] = (name, hit[1])
        ready, not_ready = await _wait_until_ready(ws, targets, deadline, options.force, waiting)
        failures += not_ready
        planned: list[Contribution] = []
        for doc_id, (name, row) in ready.items():
            found = await inspect(ws, doc_id, name, row)
            refusal = None if options.cascade else restrict_failure(found)
            if refusal is None:
                planned.append(found)
            else:
                failures.append(refusal)
        if options.backup and planned:
            backup_info = await write_backup(ctx, ws, planned)
        await ctx.progress(1, total_steps, "deleting")
        for step, planned_doc in enumerate(planned, start=2):
            # Read again: a document deleted earlier in this call may have changed what this one shares.
            found = await inspect(ws, planned_doc.doc_id, planned_doc.requested_as, planned_doc.row)
            refusal = None if options.cascade else restrict_failure(found)
            result = refusal or await delete_inspected(ws, found, deadline, waiting)
            if isinstance(result, Failure):
                failures.append(result)
            else:
                outcomes.append(result)
            await ctx.progress(step, total_steps, f"deleted {found.filename}")
        cascade = await _cascade_totals(ws, outcomes)
    if outcomes:
        await announce_documents_changed(ctx.state.notify, ws.name)

    failed = [failure.as_dict() for failure in failures]
    if not outcomes and failures and len({failure.code for failure in failures}) == 1:
        details: dict[str, Any] = {"failed_deletions": failed}
        if backup_info:
            details["backup_info"] = backup_info
        raise RagError(
            failures[0].code,
            _failures_text(failures, heading="Nothing was deleted"),
            suggested_action=" ".join(dict.fromkeys(failure.as_dict()["suggested_action"] for failure in failures)),
            retryable=all(failure.retryable for failure in failures),
            details=details,
        )
    return {
        "deleted_documents": [outcome.found.doc_id for outcome in outcomes],
        "failed_deletions": failed,
        "cascade_deletions": cascade,
        "documents": [outcome.as_dict() for outcome in outcomes],
        "backup_info": backup_info,
        "processing_time": round(time.perf_counter() - started, 3),
        "message": _delete_message(outcomes, failures, cascade, backup_info, options),
    }


async def _wait_until_ready(
    ws: Workspace, targets: dict[str, Target], deadline: float, force: bool, waiting: Progress
) -> tuple[dict[str, Target], list[Failure]]:
    """Wait (until `deadline`) for no indexing to run and each document to be finished."""
    pending = dict(targets)
    ready: dict[str, Target] = {}
    reasons: dict[str, str] = {}
    failures: list[Failure] = []
    while pending:
        busy = await ws.pipeline_busy()
        for doc_id, (name, _) in list(pending.items()):
            row = await ws.status_row(doc_id)
            if row is None:  # deleted meanwhile (e.g. by a replacing upload elsewhere)
                failures.append(Failure(name, ErrorCode.DOCUMENT_NOT_FOUND, "The document no longer exists."))
                del pending[doc_id]
                continue
            # Still in our intake queue: dropping it touches nothing LightRAG holds.
            queued = ws.intake.waiting(doc_id)
            reasons[doc_id] = "ready" if queued else readiness(state_of(row.get("status")), busy, force)
            if reasons[doc_id] == "ready":
                ready[doc_id] = (name, dict(row))
                del pending[doc_id]
        if not pending or time.monotonic() >= deadline:
            break
        await waiting("")
        await anyio.sleep(POLL_SECONDS)
    failures += [not_ready_failure(name, reasons[doc_id]) for doc_id, (name, _) in pending.items()]
    return ready, failures


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
) -> str:
    parts: list[str] = []
    if outcomes:
        names = ", ".join(f"'{outcome.found.filename}'" for outcome in outcomes[:10])
        names += f" and {len(outcomes) - 10} more" if len(outcomes) > 10 else ""
        parts.append(
            f"Deleted {len(outcomes)} document(s): {names}. Removed {cascade['chunks_deleted']} chunk(s), "
            f"{cascade['entities_deleted']} entities and {cascade['relationships_deleted']} relations only they "
            f"supported; {cascade['entities_rebuilt']} shared entities and {cascade['relationships_rebuilt']} "
            "relations were kept and rebuilt from the remaining documents."
        )
    if not options.cascade:
        parts.append("cascade_delete was false: no entity or relation was removed from the graph.")
    if failures:
        heading = "Some documents were not deleted" if outcomes else "Nothing was deleted"
        parts.append(_failures_text(failures, heading))
    if backup_info:
        parts.append(
            f"Backup {backup_info['backup_id']} ({backup_info['backup_size']} bytes) is in the knowledge base's "
            f"data folder at {backup_info['backup_location']}."
        )
    return " ".join(parts)
