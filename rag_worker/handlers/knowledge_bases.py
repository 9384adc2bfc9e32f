"""`lightrag_list_knowledge_bases`: the caller's default knowledge base and each named one.

The call runs in the caller's own workspace (the front sends no knowledge base for it), and
only workspaces nested in that one are listed: never another caller's.  Counting never opens
a knowledge base: an open one answers from its doc-status store, a closed one from its local
doc-status file, else the count is unknown.
"""

from __future__ import annotations

import logging
from typing import Any

from protocol import methods as m
from rag_worker.context import RequestContext
from rag_worker.dispatch import handles
from rag_worker.storage.knowledge_bases import stored_knowledge_bases
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.knowledge_bases")


@handles(m.LIST_KNOWLEDGE_BASES)
async def list_knowledge_bases(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    engines = ctx.state.engines
    rows, named = await ctx.run_cpu(
        stored_knowledge_bases,
        ctx.state.settings.data_dir,
        ctx.workspace,
        engines.placement.configured,
        m.MAX_LISTED_KNOWLEDGE_BASES,
        frozenset(engines.open_workspaces()),
    )
    for row in rows:
        workspace = row.pop("workspace")
        opened = engines.opened(workspace)
        if opened is not None:  # fresher than its files, and the only count of one on a storage server
            row["documents"] = await _document_count(opened)
        elif row["documents"] is None and engines.embedded.alive():
            row["documents"] = await engines.embedded.document_count(workspace)
    more = named - (len(rows) - 1)
    result: dict[str, Any] = {"knowledge_bases": rows, "message": _message(rows, more)}
    if more:
        result["more"] = more
    return result


async def _document_count(workspace: Workspace) -> int | None:
    """Documents of an open knowledge base; None when its store does not answer (the listing still does)."""
    try:
        counts = await workspace.status_counts()
    except Exception as exc:
        log.warning("counting the documents of %s failed: %s", workspace.name, type(exc).__name__)
        return None
    return sum(int(count) for count in counts.values())


def _message(rows: list[dict[str, Any]], more: int) -> str:
    """One line per knowledge base, the default first."""
    lines = [f"{len(rows)} knowledge base{'s' if len(rows) != 1 else ''}; pass a name as `workspace` to any tool:"]
    for row in rows:
        count = row["documents"]
        documents = "document count unknown" if count is None else f"{count} document{'s' if count != 1 else ''}"
        notes = [" (used when workspace is omitted)" if row["default"] else ""]
        if row.get("name_recorded") is False:
            notes.append(" (name not recorded: its exact spelling may differ)")
        lines.append(f"- {row['name']}: {documents}{''.join(notes)}")
    if more:
        lines.append(f"… and {more} more not listed.")
    return "\n".join(lines)
