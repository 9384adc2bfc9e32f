"""The worker's share of health and statistics: storage probes, model and LLM checks,
knowledge-base counts, document statistics, disk usage and the audit log of a workspace.

Everything here reads the caller's own workspace only.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from config.bindings import public_host, resolve_bindings
from config.reporting import iso, parse_instant, percentiles
from rag_worker.operations.audit import audit_path, read_entries
from rag_worker.operations.listing import workspace_views
from rag_worker.storage.store_counts import graph_size, processed_chunks

log = logging.getLogger("rag_worker.operations.diagnostics")

PROBE_KEY = "__lightrag_mcp_health_probe__"
LLM_PROBE_TIMEOUT = 3.0
UNFINISHED = ("pending", "parsing", "analyzing", "processing")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


async def _timed(probe: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        await probe
        return {"ok": True, "latency_ms": _ms(started)}
    except Exception as exc:  # the probe's failure is the finding; details go to the log
        log.warning("storage probe failed: %s", type(exc).__name__)
        return {"ok": False, "latency_ms": _ms(started), "error": type(exc).__name__}


async def probe_storages(rag: Any) -> dict[str, Any]:
    """One cheap read per storage, timed."""
    probes = {
        "kv": (rag.full_docs, rag.full_docs.get_by_id(PROBE_KEY)),
        "vector": (rag.chunks_vdb, rag.chunks_vdb.get_by_id(PROBE_KEY)),
        "graph": (rag.chunk_entity_relation_graph, rag.chunk_entity_relation_graph.has_node(PROBE_KEY)),
        "doc_status": (rag.doc_status, rag.doc_status.get_status_counts()),
    }
    return {name: {"class": type(storage).__name__, **await _timed(call)} for name, (storage, call) in probes.items()}


async def probe_embedding(rag: Any, components: dict[str, Any]) -> dict[str, Any]:
    """Embed two short texts (two, so the single-query cache cannot answer), timed."""
    started = time.perf_counter()
    info: dict[str, Any] = {
        "model": components.get("embedding_name"),
        "dim": rag.embedding_func.embedding_dim,
    }
    try:
        vectors = await rag.embedding_func([f"health check {time.time()}", "knowledge base"])
        return {**info, "ok": len(vectors) == 2, "latency_ms": _ms(started)}
    except Exception as exc:
        log.warning("embedding probe failed: %s", type(exc).__name__)
        return {**info, "ok": False, "latency_ms": _ms(started), "error": type(exc).__name__}


async def probe_llm(settings: Any) -> dict[str, Any]:
    """Whether an LLM is configured and, if so, whether its host answers HTTP (no key is sent)."""
    llm = resolve_bindings(settings).llm
    if llm is None:
        return {"configured": False, "status": "not configured: built-in extractor"}
    import httpx

    base = llm.host.rstrip("/")
    url = f"{base}/api/tags" if llm.binding == "ollama" else (f"{base}/models" if llm.binding == "openai" else base)
    info: dict[str, Any] = {
        "configured": True,
        "binding": llm.binding,
        "model": llm.model,
        "host": public_host(llm.host),
    }
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=LLM_PROBE_TIMEOUT) as client:
            response = await client.get(url)
        return {**info, "status": "reachable", "http_status": response.status_code, "latency_ms": _ms(started)}
    except httpx.HTTPError as exc:
        return {**info, "status": "unreachable", "error": type(exc).__name__, "latency_ms": _ms(started)}


async def knowledge_base_counts(ws: Any) -> dict[str, Any]:
    """Documents by status, entities, relations, chunks and the indexing queue (counted, not read whole)."""
    rag = ws.rag
    by_status = await ws.status_counts()
    entities, relations = await graph_size(rag.chunk_entity_relation_graph)
    return {
        "documents": sum(by_status.values()),
        "documents_by_status": by_status,
        "entities": entities,
        "relations": relations,
        "chunks": await processed_chunks(rag.doc_status),
        "queue": sum(by_status.get(state, 0) for state in UNFINISHED),
        "lexical_index": rag.lexical.status() if hasattr(rag, "lexical") else None,
    }


def _in_range(stamp: Any, start: float | None, end: float) -> bool:
    try:
        at = parse_instant(str(stamp)) if stamp else None
    except ValueError:
        return False
    return at is not None and (start is None or at >= start) and at <= end


async def document_stats(ctx: Any, ws: Any, start: float | None, end: float) -> dict[str, Any]:
    """Documents finished in the period (by their last state change) and how long they took."""
    finished = [
        view
        for view in (await workspace_views(ctx, ws)).values()
        if view["status"] in ("processed", "failed") and _in_range(view["updated_at"], start, end)
    ]
    durations = [view["processing_time_s"] for view in finished if view["status"] == "processed" and view["processing_time_s"] is not None]
    by_type: dict[str, int] = {}
    for view in finished:
        mime = str(view["mime_type"] or "unknown")
        by_type[mime] = by_type.get(mime, 0) + 1
    counts = await knowledge_base_counts(ws)
    return {
        "processed": sum(1 for view in finished if view["status"] == "processed"),
        "failed": sum(1 for view in finished if view["status"] == "failed"),
        "by_type": by_type,
        "processing_time_s": percentiles(durations),
        "processing_time_note": "from queueing to the final state, per document",
        "total_by_status": counts["documents_by_status"],
        "queue": counts["queue"],
        "entities": counts["entities"],
        "relations": counts["relations"],
        "chunks": counts["chunks"],
    }


def directory_usage(directory: Path, top: int = 10) -> dict[str, Any]:
    """Bytes of every file under `directory`, the largest listed by name. Blocking."""
    sizes: dict[str, int] = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = Path(root, name)
            try:
                sizes[str(path.relative_to(directory))] = path.stat().st_size
            except OSError:
                continue
    largest = sorted(sizes.items(), key=lambda item: item[1], reverse=True)[:top]
    return {"total_bytes": sum(sizes.values()), "files": len(sizes), "largest_files": dict(largest)}


def read_audit(workspace_dir: Path, start: float | None, end: float, limit: int) -> dict[str, Any]:
    entries, matched = read_entries(audit_path(workspace_dir), start, end, limit)
    return {
        "entries": entries,
        "returned": len(entries),
        "matched": matched,
        "period_start": iso(start),
        "period_end": iso(end),
    }
