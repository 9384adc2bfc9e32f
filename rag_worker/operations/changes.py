"""Telling the front that a workspace's set of documents changed (`documents/changed`).

The front turns it into MCP `notifications/resources/list_changed` for the sessions of that
workspace (`mcp_front.resources`).  Sent after indexing finished or failed (the pipeline ran
dry) and after documents were deleted.  The notice is a hint to list again, so a spare one is
harmless and a lost one (the pipe closing) is never an error of the work that caused it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from protocol import methods as m
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.changes")

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]


async def announce_documents_changed(notify: Notify, workspace: str) -> None:
    """Send `documents/changed` for `workspace`; never raises (the front may be gone)."""
    try:
        await notify(m.DOCUMENTS_CHANGED, {"workspace": workspace})
    except Exception as exc:
        log.debug("documents/changed for %s not sent: %s", workspace, type(exc).__name__)


async def announce_indexing_done(notify: Notify, ws: Workspace) -> None:
    """After a pipeline run returns: announce, unless another run still holds the pipeline.

    A run that found the pipeline busy returns at once (LightRAG hands its documents to the run
    in progress); that run announces when it finishes, with every document in a final state."""
    try:
        busy = await ws.pipeline_busy()
    except Exception:  # a workspace closed meanwhile: announcing once too often is harmless
        busy = False
    if not busy:
        await announce_documents_changed(notify, ws.name)
