"""Per-workspace quotas (SPEC §3): documents and stored document bytes, off by default.

`check_quota` runs before a new document is enqueued (the ingestion path calls it); the
per-minute call rate is limited by the front (`mcp_front.rate_limit`).
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode, RagError
from rag_worker.operations.listing import workspace_views

MB = 2**20


async def document_usage(ctx: Any, ws: Any) -> dict[str, Any]:
    """Documents in the workspace and the bytes they stored (original file size when we
    recorded it, else the length of the indexed text)."""
    sizes = {doc_id: int(view["file_size"] or 0) for doc_id, view in (await workspace_views(ctx, ws)).items()}
    return {"documents": len(sizes), "stored_bytes": sum(sizes.values()), "sizes": sizes}


def quota_limits(settings: Any) -> dict[str, Any]:
    return {
        "max_documents": int(settings.max_documents) or None,
        "max_storage_mb": float(settings.max_storage_mb) or None,
    }


async def check_quota(ctx: Any, ws: Any, adding_bytes: int, *, replacing: str | None = None) -> None:
    """Raise QUOTA_EXCEEDED when adding a document of `adding_bytes` would pass a limit.

    `replacing`: the id of a document this one replaces (it frees its slot and bytes)."""
    limits = quota_limits(ctx.state.settings)
    if limits["max_documents"] is None and limits["max_storage_mb"] is None:
        return
    usage = await document_usage(ctx, ws)
    replaced = replacing is not None and replacing in usage["sizes"]
    documents = usage["documents"] - (1 if replaced else 0)
    stored = usage["stored_bytes"] - (usage["sizes"][replacing] if replaced and replacing else 0)
    max_documents = limits["max_documents"]
    if max_documents is not None and documents + 1 > max_documents:
        raise RagError(
            ErrorCode.QUOTA_EXCEEDED,
            f"This knowledge base already holds {documents} documents, its limit is {max_documents}.",
            details={"documents": documents, "max_documents": max_documents},
        )
    max_mb = limits["max_storage_mb"]
    if max_mb is not None and stored + adding_bytes > max_mb * MB:
        raise RagError(
            ErrorCode.QUOTA_EXCEEDED,
            f"Adding this document ({adding_bytes / MB:.2f} MB) would bring the knowledge base to "
            f"{(stored + adding_bytes) / MB:.2f} MB of documents; its limit is {max_mb:g} MB.",
            details={"stored_bytes": stored, "adding_bytes": adding_bytes, "max_storage_mb": max_mb},
        )
