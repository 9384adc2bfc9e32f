"""Knowledge-graph edits: update, create, rename, merge entities (SPEC §4 Knowledge graph)."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext


async def update_entity(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_update_entity`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_update_entity is not built yet.")
