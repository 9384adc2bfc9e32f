"""Knowledge-graph methods: export, search, relationships (SPEC §4 Knowledge graph).

Every method reads the caller's workspace only (`ctx.workspace`), takes one snapshot of its
graph (`rag_worker.graph.snapshot`; entity search only its entities, an export and a walk the
part they need where the storage reads parts) and does the CPU work in worker threads.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from protocol import ErrorCode, RagError
from protocol import methods as m
from protocol.methods.graph import MAX_REGEX_CHARS
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.graph import messages
from rag_worker.graph.browse import GraphFilters, Selection, select_neighbourhood, select_whole
from rag_worker.graph.exports import EXTENSIONS, edge_record, json_safe, mermaid_warnings, node_record, render
from rag_worker.graph.files import preview, write_export
from rag_worker.graph.relationships import RelationFilters, hop_record, walk
from rag_worker.graph.search import (
    SearchOutcome,
    SearchRequest,
    compile_pattern,
    exact_search,
    fuzzy_search,
    names_in_text,
    regex_search,
    semantic_search,
)
from rag_worker.graph.snapshot import (
    Entities,
    GraphSnapshot,
    chosen_properties,
    entity_properties,
    folded,
    keep_part,
    read_entities,
    read_neighbourhood,
    read_part,
    read_snapshot,
    readable,
    reads_parts,
    resolve_name,
    run_selection,
    select_over,
    shorten,
    split_multi,
)
from rag_worker.graph.sources import source_documents
from rag_worker.graph.statistics import graph_statistics

log = logging.getLogger("rag_worker.graph")

MAX_INLINE_EXPORT_BYTES = 50 * 2**20  # whatever LIGHTRAG_MCP_EXPORT_INLINE_KB says
MAX_SUGGESTIONS = 3
# A query's entities by meaning: only those close to it, and close to the best hit.
SEED_MIN_SIMILARITY = 0.3
SEED_RELATIVE_SIMILARITY = 0.8


async def _not_found(ctx: RequestContext, snapshot: Entities, name: str) -> RagError:
    """ENTITY_NOT_FOUND naming the closest entity names, if any."""
    outcome = await ctx.run_cpu(fuzzy_search, snapshot, SearchRequest(name, min_score=0.6))
    suggestions = [match.name for match in outcome.matches[:MAX_SUGGESTIONS]]
    hint = f" Closest names: {', '.join(suggestions)}." if suggestions else ""
    return RagError(
        ErrorCode.ENTITY_NOT_FOUND,
        f"No entity named {shorten(name, 120)!r} in this knowledge base.{hint}",
        suggested_action="Find the exact name with lightrag_search_entities (fuzzy or semantic), then call again.",
        details={"suggestions": suggestions} if suggestions else None,
    )


# ------------------------------------------------------------------------------ graph/get
@handles(m.GET_GRAPH)
async def get_graph(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_graph` (alias `lightrag_visualize_subgraph`)."""
    started = time.perf_counter()
    output_format = str(args["output_format"])
    options = args["graph_options"]
    filters = GraphFilters.from_options(options)
    max_nodes, max_edges, max_depth = int(args["max_nodes"]), int(args["max_edges"]), int(args["max_depth"])
    include_properties = bool(args["include_properties"])
    ws = await ctx.state.engines.get(ctx.workspace)
    snapshot = await read_part(ctx, ws.rag)
    await ctx.progress(1, 4, "graph read")
    scope: dict[str, Any] = {"mode": "whole_graph"}
    if not snapshot.nodes:
        selection = Selection([], [])
        scope["empty_knowledge_base"] = True
    else:
        selection = await _select(ctx, ws, snapshot, args, filters, scope, max_depth, max_nodes, max_edges)
    statistics = await ctx.run_cpu(graph_statistics, snapshot, selection)
    await ctx.progress(2, 4, "statistics computed")
    direction = str(options["mermaid_direction"])
    text = await ctx.run_cpu(render, output_format, snapshot, selection, include_properties, direction)
    await ctx.progress(3, 4, f"{output_format} built")
    result: dict[str, Any] = {
        "format": output_format,
        "scope": scope,
        "nodes": [],
        "edges": [],
        "statistics": statistics,
        "truncated": selection.truncated,
        "truncation_reasons": selection.reasons,
        "export": None,
        "export_file": None,
        "export_preview": None,
        "notes": [],
    }
    limit = min(int(ctx.state.settings.export_inline_kb) * 1024, MAX_INLINE_EXPORT_BYTES)
    size = len(text.encode("utf-8"))
    if size > limit:
        name, size = await ctx.run_cpu(
            write_export, ctx.state.engines.workspace_dir(ctx.workspace), text, EXTENSIONS[output_format]
        )
        result["export_file"] = {"name": name, "size_bytes": size, "format": output_format}
        result["export_preview"] = preview(text)
    elif output_format != "json":
        result["export"] = text
    if output_format == "json":
        nodes, edges, cut = await ctx.run_cpu(
            _inline_records, snapshot, selection, include_properties, size <= limit, limit
        )
        result["nodes"], result["edges"] = nodes, edges
        if cut:
            result["notes"].append(cut)
    if output_format == "mermaid":
        result["notes"].extend(mermaid_warnings(text, len(selection.edges)))
    result["metadata"] = {
        "extraction_time": datetime.now(UTC).isoformat(timespec="seconds"),
        "processing_time_s": round(time.perf_counter() - started, 4),
        "filters_applied": {
            **filters.applied(),
            "max_nodes": max_nodes,
            "max_edges": max_edges,
            "max_depth": max_depth,
        },
        "format": output_format,
        "include_properties": include_properties,
    }
    result["message"] = messages.graph_message(result, text, limit)
    keep_part(ws.rag, snapshot)
    await ctx.progress(4, 4, "done")
    return result


async def _select(
    ctx: RequestContext,
    ws: Any,
    snapshot: GraphSnapshot,
    args: dict[str, Any],
    filters: GraphFilters,
    scope: dict[str, Any],
    max_depth: int,
    max_nodes: int,
    max_edges: int,
) -> Selection:
    """What the call asks for: an entity's or a query's neighbourhood, one type, or everything,
    chosen over `snapshot` (`select_over`)."""
    centers: list[str] = []
    type_filter: str | None = None
    entity = str(args.get("entity") or "").strip()
    label = str(args.get("label_filter") or "").strip()
    query = str(args.get("query") or "").strip()
    if entity:
        name = snapshot.resolve(entity)
        if name is None:
            raise await _not_found(ctx, await read_entities(ctx, ws.rag), entity)
        centers.append(name)
    if label and label != "*":
        name = snapshot.resolve(label)
        if name is not None:
            centers.append(name)
        elif label.casefold() in snapshot.types():
            type_filter = label
        else:
            raise await _not_found(ctx, await read_entities(ctx, ws.rag), label)
    if query:
        hits = await _query_centers(
            ctx, ws, snapshot, query, int(args["graph_options"]["max_seed_entities"])
        )
        scope["query"] = query
        scope["query_entities"] = hits
        centers.extend(hits)
        if not centers:
            scope["mode"] = "query_neighbourhood"
            return Selection([], [])
    if centers:
        scope.update({"mode": "neighbourhood", "centers": list(dict.fromkeys(centers)), "max_depth": max_depth})
        selection = await select_over(
            ctx, ws.rag, snapshot, select_neighbourhood, centers, filters, max_depth, max_nodes, max_edges
        )
        scope["more_beyond_depth"] = selection.more_beyond_depth
        return selection
    if type_filter:
        scope.update({"mode": "entity_type", "entity_type": type_filter})
    return await select_over(ctx, ws.rag, snapshot, select_whole, filters, max_nodes, max_edges, type_filter)


async def _query_centers(ctx: RequestContext, ws: Any, snapshot: GraphSnapshot, query: str, limit: int) -> list[str]:
    """The entities a query names (longest names first), then those nearest it in meaning."""
    named: list[str] = await ctx.run_cpu(names_in_text, snapshot, query)
    nearest: list[str] = []
    try:
        outcome = await semantic_search(ws.rag, snapshot, SearchRequest(query, "semantic"), limit)
        best = outcome.matches[0].score if outcome.matches else 0.0
        cutoff = max(SEED_MIN_SIMILARITY, SEED_RELATIVE_SIMILARITY * best)
        nearest = [match.name for match in outcome.matches if match.score >= cutoff]
    except Exception:
        log.warning("semantic lookup of the query's entities failed; using names only", exc_info=True)
    return list(dict.fromkeys(named + nearest))[:limit]


def _inline_records(
    snapshot: GraphSnapshot, selection: Selection, include_properties: bool, fits: bool, limit: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """The JSON result's nodes and edges: complete when they fit, else lean and cut to fit."""
    if fits:
        return (
            [node_record(snapshot, name, include_properties) for name in selection.nodes],
            [edge_record(edge, include_properties) for edge in selection.edges],
            None,
        )
    nodes = [node_record(snapshot, name, False) for name in selection.nodes]
    edges = [edge_record(edge, False) for edge in selection.edges]
    size = len(orjson.dumps({"nodes": nodes, "edges": edges}))
    if size <= limit:
        return nodes, edges, "the result lists nodes and edges without properties; the export file has them all"
    share = limit / size
    kept = nodes[: int(len(nodes) * share)]
    names = {node["id"] for node in kept}
    kept_edges = [edge for edge in edges if edge["source"] in names and edge["target"] in names][
        : int(len(edges) * share)
    ]
    return (
        kept,
        kept_edges,
        (
            f"the result lists {len(kept)} of {len(nodes)} nodes and {len(kept_edges)} of {len(edges)} edges without "
            "properties; the export file has them all"
        ),
    )


def _pagination(offset: int, limit: int, returned: int, total: int) -> dict[str, Any]:
    more = offset + returned < total
    return {
        "offset": offset,
        "limit": limit,
        "returned": returned,
        "total": total,
        "has_more": more,
        "next_offset": offset + returned if more else None,
    }


# -------------------------------------------------------------------- graph/search_entities
@handles(m.SEARCH_ENTITIES)
async def search_entities(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_search_entities`."""
    started = time.perf_counter()
    options = args["search_options"]
    request = SearchRequest(
        query=str(args["query"]),
        search_type=str(options["search_type"]),
        fields=tuple(options.get("search_fields") or ["name"]),
        entity_types=folded(options.get("entity_types")),
        case_sensitive=bool(options["case_sensitive"]),
        min_score=float(options["min_score"]) if options.get("min_score") is not None else None,
    )
    limit, offset = int(args["limit"]), int(args["offset"])
    if request.search_type == "regex":
        compile_pattern(request.query, request.case_sensitive, MAX_REGEX_CHARS)  # bad patterns fail before any work
    ws = await ctx.state.engines.get(ctx.workspace)
    snapshot = await read_entities(ctx, ws.rag)
    index_used = {"semantic": "entity embeddings"}.get(request.search_type, "entity names")
    if not snapshot.nodes:
        outcome = SearchOutcome([], 0)
    elif request.search_type == "semantic":
        try:
            outcome = await semantic_search(ws.rag, snapshot, request, offset + limit)
        except RagError:
            raise
        except Exception:
            log.exception("semantic entity search failed")
            raise RagError(
                ErrorCode.STORAGE_ERROR,
                "The entity embedding index could not be searched.",
                suggested_action="Retry, or use search_type fuzzy.",
            ) from None
    elif request.search_type == "exact":
        outcome = await ctx.run_cpu(exact_search, snapshot, request)
    elif request.search_type == "regex":
        outcome = await ctx.run_cpu(regex_search, snapshot, request, MAX_REGEX_CHARS)
    else:
        outcome = await ctx.run_cpu(fuzzy_search, snapshot, request)
    page = outcome.matches[offset : offset + limit]
    shown = await entity_properties(ws.rag, snapshot, [match.name for match in page])
    documents = await source_documents(ws.catalog, shown)
    entities = [
        {
            "name": match.name,
            "type": snapshot.node_type(match.name),
            "description": shorten(readable(snapshot.nodes[match.name].get("description")), 300),
            "degree": snapshot.degree(match.name),
            "score": match.score,
            "match_reason": shorten(match.reason, 500),
            "highlighted": shorten(match.highlighted, 2100),
            "source_documents": documents.get(match.name, []),
        }
        for match in page
    ]
    total = len(outcome.matches)
    result: dict[str, Any] = {
        "query": request.query,
        "search_type": request.search_type,
        "entities": entities,
        "total_matches": total,
        "pagination": _pagination(offset, limit, len(entities), total),
        "search_metadata": {
            "query": request.query,
            "search_type": request.search_type,
            "search_fields": list(request.fields),
            "entity_types": sorted(request.entity_types),
            "case_sensitive": request.case_sensitive,
            "min_score": request.min_score,
            "processing_time_s": round(time.perf_counter() - started, 4),
            "index_used": index_used,
            "entities_searched": outcome.searched,
            "partial": outcome.partial_reason is not None,
            "partial_reason": outcome.partial_reason,
            "notes": outcome.notes,
        },
    }
    result["message"] = messages.search_message(result, empty_graph=not snapshot.nodes)
    return result


# --------------------------------------------------------------- graph/entity_relationships
@handles(m.ENTITY_RELATIONSHIPS)
async def entity_relationships(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_entity_relationships` (alias `lightrag_get_entity`)."""
    ws = await ctx.state.engines.get(ctx.workspace)
    requested, max_depth = str(args["entity_id"]), int(args["max_depth"])
    snapshot, name = await _around(ctx, ws.rag, requested, max_depth)
    filters = RelationFilters.from_arguments(args["relationship_filters"])
    limit, offset = int(args["limit"]), int(args["offset"])
    found = await run_selection(ctx, ws.rag, snapshot, walk, name, filters, max_depth)
    page = found.hops[offset : offset + limit]
    edges = await chosen_properties(ws.rag, snapshot, [name], [hop.edge for hop in page])
    page = [replace(hop, edge=edge) for hop, edge in zip(page, edges, strict=True)]
    documents = await source_documents(ws.catalog, {name: snapshot.nodes[name]})
    total = len(found.hops)
    result: dict[str, Any] = {
        "entity": _entity_details(snapshot, name, documents.get(name, [])),
        "relationships": [hop_record(snapshot, hop) for hop in page],
        "relationship_counts": found.counts,
        "pagination": _pagination(offset, limit, len(page), total),
        "filters_applied": {**filters.applied(), "max_depth": max_depth},
        "truncated": found.cut,
    }
    result["message"] = messages.relationships_message(result)
    keep_part(ws.rag, snapshot)
    return result


async def _around(ctx: RequestContext, rag: Any, requested: str, max_depth: int) -> tuple[GraphSnapshot, str]:
    """The graph around the entity `requested` names (as given, else its one case-insensitive match)
    and its stored name: the part a walk of `max_depth` hops needs where the storage reads one
    (`read_neighbourhood`), else the whole graph.  ENTITY_NOT_FOUND names the closest names."""
    part = await read_neighbourhood(ctx, rag, requested, max_depth)
    if part is not None:
        return part, requested
    whole = None if reads_parts(rag) else await read_snapshot(ctx, rag)
    name = whole.resolve(requested) if whole is not None else await resolve_name(ctx, rag, requested)
    if name is None:
        entities = whole if whole is not None else await read_entities(ctx, rag)
        if not entities.nodes:
            raise RagError(
                ErrorCode.ENTITY_NOT_FOUND,
                "The knowledge base has no entities yet.",
                suggested_action="Upload documents with upload_to_lightrag first.",
            )
        raise await _not_found(ctx, entities, requested)
    if whole is not None:
        return whole, name
    part = await read_neighbourhood(ctx, rag, name, max_depth)
    return part or await read_snapshot(ctx, rag), name


def _entity_details(snapshot: GraphSnapshot, name: str, documents: list[dict[str, Any]]) -> dict[str, Any]:
    attrs = snapshot.nodes[name]
    created = attrs.get("created_at")
    created_at: str | None = None
    if isinstance(created, int | float) or (isinstance(created, str) and created.isdigit()):
        created_at = datetime.fromtimestamp(float(created), UTC).isoformat(timespec="seconds")
    shown = {"entity_id", "entity_type", "description", "source_id", "file_path", "created_at"}
    return {
        "name": name,
        "type": snapshot.node_type(name),
        "description": shorten("\n".join(split_multi(attrs.get("description"))), 20_000),
        "degree": snapshot.degree(name),
        "source_documents": documents,
        "source_chunks": len(split_multi(attrs.get("source_id"))),
        "created_at": created_at,
        "properties": {
            key: json_safe(value) for key, value in attrs.items() if key not in shown and value not in (None, "")
        },
    }
