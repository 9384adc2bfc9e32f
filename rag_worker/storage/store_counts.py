"""Sizes of a knowledge base's stores without reading them whole (issue 25): a count in the
database where the storage is one, the in-memory structure where LightRAG keeps one anyway.

One row per storage class in each table; a class without a row is counted the slow, generic way
(its rows or labels read whole), so a new backend is correct before it is fast.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

GraphSize = Callable[[Any], Awaitable[tuple[int, int | None]]]
ChunkCount = Callable[[Any], Awaitable[int]]


async def _networkx_size(graph: Any) -> tuple[int, int | None]:
    nx_graph = await graph._get_graph()  # in memory already: LightRAG keeps the whole graph there
    return int(nx_graph.number_of_nodes()), int(nx_graph.number_of_edges())


async def _pg_table_size(graph: Any) -> tuple[int, int | None]:
    where = "WHERE workspace = $1 AND namespace = $2"
    nodes = await graph._fetchval(f"SELECT count(*) FROM lightrag_graph_nodes {where}", graph.workspace, graph.namespace)
    edges = await graph._fetchval(f"SELECT count(*) FROM lightrag_graph_edges {where}", graph.workspace, graph.namespace)
    return int(nodes or 0), int(edges or 0)


async def _labels_size(graph: Any) -> tuple[int, int | None]:
    return len(await graph.get_all_labels()), None  # relations: no cheap, generic count


async def _pg_processed_chunks(doc_status: Any) -> int:
    row = await doc_status.db.query(
        "SELECT COALESCE(SUM(GREATEST(chunks_count, 0)), 0) AS chunks FROM LIGHTRAG_DOC_STATUS "
        "WHERE workspace = $1 AND status = 'processed'",
        [doc_status.workspace],
    )
    return int((row or {}).get("chunks") or 0)


async def _rows_processed_chunks(doc_status: Any) -> int:
    from lightrag.base import DocStatus  # deferred: LightRAG is imported once, off the loop

    processed = await doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
    return sum(max(int(getattr(row, "chunks_count", 0) or 0), 0) for row in processed.values())


GRAPH_SIZES: dict[str, GraphSize] = {"NetworkXStorage": _networkx_size, "PGTableGraphStorage": _pg_table_size}
PROCESSED_CHUNKS: dict[str, ChunkCount] = {"PGDocStatusStorage": _pg_processed_chunks}


async def graph_size(graph: Any) -> tuple[int, int | None]:
    """(entities, relations) of a graph storage; relations None where no count is cheap."""
    return await GRAPH_SIZES.get(type(graph).__name__, _labels_size)(graph)


async def processed_chunks(doc_status: Any) -> int:
    """Chunks of the processed documents."""
    return await PROCESSED_CHUNKS.get(type(doc_status).__name__, _rows_processed_chunks)(doc_status)
