"""Backups written before documents are deleted (`create_backup` of lightrag_delete_documents).

One JSON file per call under `<workspace data dir>/backups/`: for each document its full
text (`full_docs`), its doc-status row, our catalog record, its chunks, and the entities and
relations it touched (marking those only it supported, which the delete removes).  Clients
only ever see the file's name relative to the workspace, never a server path.
"""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from protocol import ErrorCode, RagError
from rag_worker.context import RequestContext
from rag_worker.operations.deletion import Contribution
from rag_worker.storage.durable import write_atomic
from rag_worker.storage.workspace import Workspace

log = logging.getLogger("rag_worker.operations.backups")

BACKUP_DIR = "backups"
BACKUP_FORMAT = "lightrag-mcp-document-backup/1"


def new_backup_id() -> str:
    return f"backup-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


async def document_backup(ws: Workspace, found: Contribution) -> dict[str, Any]:
    """Everything the delete of one document removes or rewrites, as plain data."""
    full_doc = await ws.rag.full_docs.get_by_id(found.doc_id) or {}
    chunk_rows = await ws.rag.text_chunks.get_by_ids(found.chunk_ids) if found.chunk_ids else []
    only_entities, only_relations = set(found.only_entities), set(found.only_relations)
    return {
        "document_id": found.doc_id,
        "filename": found.filename,
        "content": full_doc.get("content"),
        "status_row": found.row,
        "catalog_record": found.record,
        "chunks": [
            {"chunk_id": chunk_id, **row}
            for chunk_id, row in zip(found.chunk_ids, chunk_rows, strict=True)
            if isinstance(row, dict)
        ],
        "entities": [
            {"name": name, "only_this_document": name in only_entities, **dict(found.nodes[name])}
            for name in found.entities
        ],
        "relations": [
            {"source": src, "target": tgt, "only_this_document": (src, tgt) in only_relations, **dict(data)}
            for (src, tgt), data in found.edges.items()
        ],
    }


def _write(path: Path, payload: dict[str, Any]) -> int:
    """Serialize and write atomically (temp file, fsync, rename); returns the size in bytes."""
    data = orjson.dumps(payload, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    write_atomic(path, data)
    return len(data)


async def write_backup(ctx: RequestContext, ws: Workspace, documents: list[Contribution]) -> dict[str, Any]:
    """Back up `documents` before they are deleted; BACKUP_FAILED (nothing deleted) when it cannot."""
    backup_id = new_backup_id()
    location = f"{BACKUP_DIR}/{backup_id}.json"
    try:
        payload = {
            "format": BACKUP_FORMAT,
            "backup_id": backup_id,
            "created_at": datetime.now(UTC).isoformat(),
            "workspace": ws.name,
            "lightrag_version": ctx.state.lightrag_version,
            "documents": [await document_backup(ws, found) for found in documents],
        }
        path = ctx.state.engines.workspace_dir(ws.name) / BACKUP_DIR / f"{backup_id}.json"
        size = await ctx.run_cpu(_write, path, payload)
    except Exception:
        log.exception("backup %s failed", backup_id)
        raise RagError(
            ErrorCode.BACKUP_FAILED,
            "The backup requested before deleting could not be written, so nothing was deleted.",
        ) from None
    log.info("backup %s: %d document(s), %d bytes", backup_id, len(documents), size)
    return {"backup_id": backup_id, "backup_location": location, "backup_size": size}
