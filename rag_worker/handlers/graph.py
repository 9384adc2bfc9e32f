"""Knowledge-graph methods: export, search, relationships (SPEC §4 Knowledge graph)."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext


async def get_graph(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_graph` (alias `lightrag_visualize_subgraph`)."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_get_graph is not built yet.")


async def search_entities(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_search_entities`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_search_entities is not built yet.")


async def entity_relationships(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_get_entity_relationships` (alias `lightrag_get_entity`)."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_get_entity_relationships is not built yet.")

