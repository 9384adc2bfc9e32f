"""The audit log of a workspace (SPEC §3): every mutating call, appended as one JSON line.

Entry: when (UTC), who (user id or "default"), what (tool + a bounded summary of its
arguments: names, ids and sizes, never file contents, base64 or text bodies), result ("ok"
or the error code, with a few result fields) and the correlation id.  The file lives in
the workspace's directory (`mcp_audit.jsonl`), so it survives restarts; past
MAX_FILE_BYTES it is rotated once (`.1`), which bounds the disk it uses.

The front marks mutating calls (`audit: true` in the envelope context); the worker's
dispatch wraps their handler with `record_call`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import orjson

from protocol import RagError

log = logging.getLogger("rag_worker.operations.audit")

AUDIT_FILE = "mcp_audit.jsonl"
MAX_FILE_BYTES = 4 * 2**20
MAX_STRING = 160
MAX_ITEMS = 10
MAX_KEYS = 20
MAX_SUMMARY_CHARS = 3000
#: Argument names whose values are bodies (file content, text, descriptions, history):
#: only their size is recorded.
BODY_KEYS = frozenset({"content", "text", "description", "conversation_history", "data", "body"})
RESULT_KEYS = (
    "document_id",
    "action",
    "status",
    "track_id",
    "batch_id",
    "entity_id",
    "cleared_caches",
    "deleted_documents",
    "failed_deletions",
)

_write_lock = threading.Lock()


def audit_path(workspace_dir: Path) -> Path:
    return workspace_dir / AUDIT_FILE


def _summarize(key: str, value: Any, depth: int) -> Any:
    if key in BODY_KEYS and value is not None:
        if isinstance(value, str):
            return f"<{len(value)} chars>"
        if isinstance(value, list | dict):
            return f"<{len(value)} items>"
        return "<omitted>"
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + f"…<{len(value)} chars>"
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list):
        items = [_summarize(key, item, depth + 1) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"+{len(value) - MAX_ITEMS} more")
        return items
    if isinstance(value, dict):
        if depth >= 3:
            return f"<{len(value)} keys>"
        keys = list(value)[:MAX_KEYS]
        summary = {str(k): _summarize(str(k), value[k], depth + 1) for k in keys}
        if len(value) > MAX_KEYS:
            summary["…"] = f"+{len(value) - MAX_KEYS} more keys"
        return summary
    return f"<{type(value).__name__}>"


def summarize_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A bounded, content-free picture of a call's arguments."""
    summary = _summarize("", arguments, 0)
    if len(orjson.dumps(summary)) > MAX_SUMMARY_CHARS:
        return {"arguments": sorted(arguments)[:MAX_KEYS], "note": "summary too long; argument names only"}
    assert isinstance(summary, dict)
    return summary


def _result_summary(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        return {}
    picked = {key: _summarize(key, result[key], 1) for key in RESULT_KEYS if key in result}
    for key in ("deleted", "failed", "documents", "items"):
        if isinstance(result.get(key), list):
            picked[f"{key}_count"] = len(result[key])
    return picked


def append_entry(path: Path, entry: dict[str, Any]) -> None:
    """Append one line (rotating a full file first); never raises."""
    line = orjson.dumps(entry, default=str) + b"\n"
    try:
        with _write_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size + len(line) > MAX_FILE_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
    except OSError:
        log.exception("could not append to the audit log")


def read_entries(path: Path, start: float | None, end: float | None, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Entries between `start` and `end` (epoch seconds), newest first, at most `limit`;
    also returns how many matched in all. Blocking: run it in a thread."""
    matched: list[dict[str, Any]] = []
    for candidate in (path, path.with_name(path.name + ".1")):
        try:
            lines = candidate.read_bytes().splitlines()
        except OSError:
            continue
        for raw in reversed(lines):
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            at = float(entry.get("ts") or 0)
            if (start is None or at >= start) and (end is None or at <= end):
                matched.append(entry)
    return matched[:limit], len(matched)




async def record_call(ctx: Any, tool: str, arguments: dict[str, Any], run: Callable[[], Awaitable[Any]]) -> Any:
    """Run the call and append its outcome to the workspace's audit log, whatever happens.

    `arguments` are summarised as the caller sent them (not with the defaults `run` fills in)."""
    started = time.time()
    entry: dict[str, Any] = {
        "ts": round(started, 3),
        "time": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "user": ctx.user_id or "default",
        "tool": tool,
        "arguments": summarize_arguments(arguments),
        "correlation_id": ctx.correlation_id,
    }
    path = audit_path(ctx.state.engines.workspace_dir(ctx.workspace))
    try:
        result = await run()
    except RagError as exc:
        entry |= {"result": exc.code.value, "error": exc.message[:300]}
        raise
    except anyio.get_cancelled_exc_class():
        entry["result"] = "REQUEST_CANCELLED"
        raise
    except Exception:
        entry["result"] = "INTERNAL_ERROR"
        raise
    else:
        entry |= {"result": "ok", "outcome": _result_summary(result)}
        return result
    finally:
        entry["duration_ms"] = round((time.time() - started) * 1000, 1)
        append_entry(path, entry)
