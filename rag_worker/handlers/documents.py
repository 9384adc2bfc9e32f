"""Document-management methods: list and delete documents (SPEC §4 Documents)."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext


async def list_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_list_documents`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_list_documents is not built yet.")


async def delete_documents(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    """`lightrag_delete_documents`."""
    raise RagError(ErrorCode.INTERNAL_ERROR, "lightrag_delete_documents is not built yet.")
