"""The caches `lightrag_clear_cache` can measure and clear, mapped onto what really exists.

| type      | what it is here                                                               |
|-----------|-------------------------------------------------------------------------------|
| llm       | LightRAG's LLM cache entries written at query time (keyword extraction, ...)  |
| query     | LightRAG's cached answers (cache_type "query"; answer caching is off here)     |
| embedding | the worker's LRU of recent query-text vectors (shared by all workspaces)       |
| document  | parsed-document caches: there are none (0, said plainly)                       |
| graph     | NetworkX's in-memory graph: written out, then re-read from its file            |

Never cleared: LightRAG's extraction cache (keys ``default:extract:*`` and the other
``default:*`` indexing entries).  Deleting a document rebuilds the entities it shared with
other documents from that cache; LightRAG's own ``aclear_cache()`` drops it, after which a
delete leaves the deleted document's text in shared entities (reference: LightRAG 1.5.7).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("rag_worker.operations.caches")

CACHE_TYPES = ("llm", "query", "embedding", "document", "graph")
INDEXING_MODE = "default"  # LightRAG's cache-key mode for extraction/summary entries


def _key_parts(key: str) -> tuple[str, str]:
    """(mode, cache_type) of a flattened LightRAG cache key ``{mode}:{cache_type}:{hash}``."""
    parts = key.split(":", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else (INDEXING_MODE, "unknown")


def _cache_type_of(key: str) -> str | None:
    """Which of our types an LLM-cache key belongs to; None for entries that must stay."""
    mode, cache_type = _key_parts(key)
    if mode == INDEXING_MODE:
        return None
    return "query" if cache_type == "query" else "llm"


def _iso(seconds: Any) -> str | None:
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return None
    return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds") if value > 0 else None


async def _llm_cache_entries(rag: Any) -> dict[str, dict[str, Any]] | None:
    """Every entry of LightRAG's LLM cache, or None when its storage cannot list keys.

    JSON KV storage (the local default) holds them in a shared dict guarded by its lock."""
    storage = rag.llm_response_cache
    data = getattr(storage, "_data", None)
    lock = getattr(storage, "_storage_lock", None)
    if data is None or lock is None:
        return None
    async with lock:
        return {str(key): dict(value) for key, value in data.items()}


def _size(entries: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    times = [float(entry.get("create_time") or 0) for _, entry in entries]
    times = [t for t in times if t > 0]
    return {
        "entries": len(entries),
        "size_bytes": sum(len(key) + len(orjson.dumps(entry, default=str)) for key, entry in entries),
        "oldest_entry": _iso(min(times)) if times else None,
        "newest_entry": _iso(max(times)) if times else None,
    }


def _query_vectors(embedding_func: Any) -> Any:
    return getattr(getattr(embedding_func, "func", None), "query_cache", None)


def _graph_file(rag: Any) -> Path | None:
    name = getattr(rag.chunk_entity_relation_graph, "_graphml_xml_file", None)
    return Path(name) if name else None


async def measure(rag: Any, embedding_func: Any) -> dict[str, dict[str, Any]]:
    """Size of each cache type, plus the extraction cache that is always kept."""
    sizes: dict[str, dict[str, Any]] = {}
    entries = await _llm_cache_entries(rag)
    if entries is None:
        unknown = {"entries": None, "size_bytes": None, "note": "this cache storage cannot list its entries"}
        sizes["llm"] = sizes["query"] = sizes["extraction_kept"] = dict(unknown)
    else:
        grouped: dict[str | None, list[tuple[str, dict[str, Any]]]] = {"llm": [], "query": [], None: []}
        for key, entry in entries.items():
            grouped[_cache_type_of(key)].append((key, entry))
        sizes["llm"] = {**_size(grouped["llm"]), "scope": "workspace"}
        sizes["query"] = {
            **_size(grouped["query"]),
            "scope": "workspace",
            "note": "answers are not cached by this server (a cached answer would ignore new documents)",
        }
        sizes["extraction_kept"] = {
            **_size(grouped[None]),
            "scope": "workspace",
            "note": "entity-extraction results: kept, because deleting a document rebuilds shared entities from them",
        }
    vectors = _query_vectors(embedding_func)
    if vectors is None:
        sizes["embedding"] = {"entries": 0, "size_bytes": 0, "note": "this embedding binding keeps no cache"}
    else:
        held = list(vectors.items())
        sizes["embedding"] = {
            "entries": len(held),
            "size_bytes": sum(len(text.encode()) + int(vector.nbytes) for text, vector in held),
            "scope": "server process (recent query texts of every knowledge base it serves)",
        }
    sizes["document"] = {"entries": 0, "size_bytes": 0, "note": "parsed documents are not cached"}
    sizes["graph"] = await _graph_size(rag)
    return sizes


async def _graph_size(rag: Any) -> dict[str, Any]:
    graph_storage = rag.chunk_entity_relation_graph
    if type(graph_storage).__name__ != "NetworkXStorage":
        return {"entries": 0, "size_bytes": 0, "note": f"{type(graph_storage).__name__} keeps no in-memory graph here"}
    graph = await graph_storage._get_graph()
    path = _graph_file(rag)
    return {
        "entries": int(graph.number_of_nodes() + graph.number_of_edges()),
        "size_bytes": path.stat().st_size if path is not None and path.exists() else 0,
        "scope": "workspace",
        "note": "nodes + edges held in memory; size is the graph file it is read from",
    }


async def clear(rag: Any, embedding_func: Any, types: set[str], *, pipeline_busy: bool) -> list[str]:
    """Clear the given cache types; returns warnings for what was skipped."""
    warnings: list[str] = []
    if types & {"llm", "query"}:
        entries = await _llm_cache_entries(rag)
        if entries is None:
            warnings.append(
                f"The LLM cache in {type(rag.llm_response_cache).__name__} cannot be cleared selectively; "
                "it was left as it is (clearing it whole would break later document deletes)."
            )
        else:
            doomed = [key for key in entries if _cache_type_of(key) in types]
            if doomed:
                await rag.llm_response_cache.delete(doomed)
                await rag.llm_response_cache.index_done_callback()
    if "embedding" in types:
        vectors = _query_vectors(embedding_func)
        if vectors is not None:
            vectors.clear()
    if "graph" in types:
        if pipeline_busy:
            warnings.append("Indexing is running, so the in-memory graph was not reloaded; try again when it ends.")
        else:
            await _reload_graph(rag)
    return warnings


async def _reload_graph(rag: Any) -> None:
    """Write the NetworkX graph out, then make the next read load it from the file."""
    storage = rag.chunk_entity_relation_graph
    if type(storage).__name__ != "NetworkXStorage":
        return
    await storage.index_done_callback()
    async with storage._storage_lock:
        storage.storage_updated.value = True
    await storage._get_graph()  # reload now, so the sizes after are the file's
