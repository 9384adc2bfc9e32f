"""Named knowledge bases on disk: which workspaces nest in a caller's, what each is called,
and how many documents a closed one holds when its local files can say.

A named knowledge base is a workspace `<owner>__kb_<slug>_<hash>` (the front builds the name;
`protocol.context.KNOWLEDGE_BASE_INFIX`).  The slug is lossy, so the name as the caller first
wrote it is kept in a small marker file in the workspace's directory, written the first time
a call names it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from config.backends import LOCAL
from config.shared_kbs import SHARED_WORKSPACE_PREFIX
from config.storages import StorageSet
from protocol import ErrorCode, RagError
from protocol.context import DEFAULT_KNOWLEDGE_BASE, KNOWLEDGE_BASE_INFIX, CallContext
from rag_worker.storage.durable import write_atomic
from rag_worker.storage.placement import MARKER as STORAGE_MARKER

log = logging.getLogger("rag_worker.storage.knowledge_bases")

NAME_MARKER = "knowledge_base.json"
DOC_STATUS_FILE = "kv_store_doc_status.json"  # where LightRAG's JsonDocStatusStorage keeps a workspace's rows
MAX_COUNTED_FILE_BYTES = 32 * 2**20  # a larger doc-status file is not read just to count it

_recorded: set[str] = set()  # workspaces whose name marker this process has seen or written


def record_knowledge_base(data_dir: str, call: CallContext) -> None:
    """Keep the name a call gave its knowledge base, the first time one names it.

    Never fails the call: without the marker the listing shows the workspace's slug."""
    if call.knowledge_base is None or call.workspace in _recorded:
        return
    marker = Path(data_dir) / call.workspace / NAME_MARKER
    try:
        if not marker.exists():
            write_atomic(marker, json.dumps({"name": call.knowledge_base}).encode())
        _recorded.add(call.workspace)
    except OSError as exc:
        log.warning("could not record the name of knowledge base %s: %s", call.workspace, exc)


def check_knowledge_base(data_dir: str, call: CallContext, *, creates: bool, max_count: int) -> None:
    """Refuse a call naming a knowledge base it may not use: one that does not exist, unless the call
    writes (then it is created, up to `max_count` per user; 0 = no bound).

    Before this, any name opened (and so created) a workspace, even on a listing or a question: 300
    random names made 300 directories.  A shared knowledge base exists by configuration (the front
    checked the right), written to or not.  Blocking I/O: run it in a thread."""
    if call.knowledge_base is None or call.workspace.startswith(SHARED_WORKSPACE_PREFIX):
        return
    if (Path(data_dir) / call.workspace).is_dir():
        return
    owner = call.workspace.partition(KNOWLEDGE_BASE_INFIX)[0]
    existing = nested_workspaces(data_dir, owner)
    asked = call.knowledge_base if len(call.knowledge_base) <= 60 else call.knowledge_base[:60] + "…"
    if not creates:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"You have no knowledge base named '{asked}'. Yours: {_names_of(data_dir, owner, existing)}.",
            suggested_action=(
                "Pass one of those names as workspace (lightrag_list_knowledge_bases lists them), or omit it for "
                "the default; indexing a document with a new name creates that knowledge base."
            ),
        )
    if max_count and len(existing) >= max_count:
        raise RagError(
            ErrorCode.QUOTA_EXCEEDED,
            f"You already have {len(existing)} named knowledge bases, the most allowed "
            f"(LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES={max_count}); '{asked}' was not created.",
            suggested_action="Use one of your knowledge bases (lightrag_list_knowledge_bases lists them), "
            "or ask the administrator to raise the limit.",
        )


def _names_of(data_dir: str, owner: str, nested: list[str], shown: int = 20) -> str:
    """`default, project-a, …` — what lightrag_list_knowledge_bases would name, at most `shown` of them."""
    names = sorted(
        (recorded_name(Path(data_dir) / workspace) or slug_of(workspace, owner) for workspace in nested[:shown]),
        key=str.lower,
    )
    more = f" and {len(nested) - shown} more" if len(nested) > shown else ""
    return ", ".join([DEFAULT_KNOWLEDGE_BASE, *names]) + more


def recorded_name(directory: Path) -> str | None:
    """The knowledge base's name as first written, when its marker holds one."""
    try:
        name = json.loads((directory / NAME_MARKER).read_text()).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name else None


def slug_of(workspace: str, owner: str) -> str:
    """The readable part of a nested workspace's name (`project_a` of `<owner>__kb_project_a_1f2e3d4c`)."""
    return workspace[len(owner) + len(KNOWLEDGE_BASE_INFIX) :].rpartition("_")[0] or workspace


def nested_workspaces(data_dir: str, owner: str) -> list[str]:
    """The workspaces of `owner`'s named knowledge bases, sorted; never another owner's.

    Owner workspace names never contain `__` (they are slugs), so only `owner`'s own
    knowledge bases start with `owner__kb_`."""
    prefix = owner + KNOWLEDGE_BASE_INFIX
    try:
        with os.scandir(data_dir) as entries:
            found = [entry.name for entry in entries if entry.name.startswith(prefix) and entry.is_dir()]
    except OSError:
        return []
    return sorted(found)


def stored_knowledge_bases(
    data_dir: str, owner: str, configured: StorageSet, limit: int, open_now: Collection[str] = ()
) -> tuple[list[dict[str, Any]], int]:
    """`owner`'s default knowledge base and (at most `limit` of) its named ones as rows
    {workspace, name, default, documents[, name_recorded: false]}, and how many named ones exist.

    Names sorted (the default first).  Documents are counted from local files, except in the
    workspaces `open_now` (None: the caller asks the open store).  Blocking I/O: run it in a thread."""
    nested = nested_workspaces(data_dir, owner)
    root = Path(data_dir)
    rows = [_stored_row(root, owner, None, configured, owner not in open_now)]
    named = [_stored_row(root, ws, owner, configured, ws not in open_now) for ws in nested[:limit]]
    rows += sorted(named, key=lambda row: str(row["name"]).lower())
    return rows, len(nested)


def _stored_row(root: Path, workspace: str, owner: str | None, configured: StorageSet, count: bool) -> dict[str, Any]:
    directory = root / workspace
    row: dict[str, Any] = {"workspace": workspace, "name": DEFAULT_KNOWLEDGE_BASE, "default": owner is None}
    if owner is not None:
        name = recorded_name(directory)
        row["name"] = name or slug_of(workspace, owner)
        if name is None:
            row["name_recorded"] = False
    row["documents"] = local_document_count(directory, configured) if count else None
    return row


def local_document_count(directory: Path, configured: StorageSet) -> int | None:
    """Documents in a closed workspace, read from its local doc-status file; None when unknown.

    Blocking file I/O (run it in a thread).  Unknown: its document states live on a storage
    server (counting would mean opening it), or its file is too large to read just to count."""
    try:
        doc_status = json.loads((directory / STORAGE_MARKER).read_text())["storages"]["doc_status"]
    except FileNotFoundError:
        # Never opened here: it will live where the configuration says.  The embedded engine is this
        # data directory's own, so a knowledge base never opened holds nothing there; one made
        # before markers existed has local files, which placement keeps it on.
        doc_status = LOCAL["doc_status"] if configured.embedded else configured.doc_status
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if doc_status != LOCAL["doc_status"]:
        return None
    status_file = directory / DOC_STATUS_FILE
    try:
        if status_file.stat().st_size > MAX_COUNTED_FILE_BYTES:
            return None
        rows = json.loads(status_file.read_bytes())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return None
    return len(rows) if isinstance(rows, dict) else None
