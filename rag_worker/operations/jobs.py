"""Batch jobs as data: what a batch or folder run holds, and where it is kept.

A job is a list of items (a file path, a text or a URL) with a state each.  It is saved
as one JSON file under the workspace's local directory (`<workspace>/batches/<id>.json`,
written atomically) after every change that matters, so a worker that dies mid-batch
leaves a record the next worker resumes from.  Jobs are operational state next to the
workspace's lock file, whatever storage backend holds the knowledge base.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from rag_worker.storage.durable import write_atomic

JOB_STATES = ("queued", "processing", "completed", "failed", "cancelled")
FINISHED_JOB_STATES = frozenset({"completed", "failed", "cancelled"})
# pending: not started; queued: handed to LightRAG, indexing; the rest are final.
ITEM_FINAL_STATES = frozenset({"processed", "unchanged", "failed", "skipped", "cancelled"})
MAX_RESULTS_SHOWN = 100
KEEP_FINISHED_JOBS = 200


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class JobItem:
    """One thing to index and what became of it."""

    index: int
    item_type: str  # file, text or url
    content: str | None  # the path, text or URL; a text is dropped once LightRAG holds it
    title: str | None = None
    metadata: dict[str, Any] | None = None
    status: str = "pending"
    name: str | None = None  # the document name (relative path, title, host/path)
    document_id: str | None = None
    action: str | None = None  # indexed, replaced, already_indexed, unchanged
    error_code: str | None = None
    error_message: str | None = None
    processing_time_s: float | None = None

    @property
    def final(self) -> bool:
        return self.status in ITEM_FINAL_STATES

    def fail(self, code: str, message: str) -> None:
        self.status, self.error_code, self.error_message = "failed", code, message[:1000]

    def view(self) -> dict[str, Any]:
        shown = {
            "item_index": self.index,
            "item_type": self.item_type,
            "name": self.name or self.title,
            "status": self.status,
            "action": self.action,
            "document_id": self.document_id,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "processing_time_s": self.processing_time_s,
        }
        return {key: value for key, value in shown.items() if value is not None}


@dataclass
class Job:
    """A batch (`lightrag_batch_process`) or a folder run (`lightrag_insert_file` on a folder)."""

    id: str
    kind: str  # batch or folder
    workspace: str
    options: dict[str, Any]
    roots: list[str]  # the client's roots when the job was made (for file items after a restart)
    items: list[JobItem]
    status: str = "queued"
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    folder: dict[str, Any] | None = None  # name prefix, skipped files, removed documents, truncated
    note: str | None = None
    user_id: str | None = None  # the caller's user id (its `{user}` allowed directories after a restart)

    @classmethod
    def new(
        cls,
        kind: str,
        workspace: str,
        options: dict[str, Any],
        roots: list[str],
        items: list[JobItem],
        user_id: str | None = None,
    ) -> Job:
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
        job_id = f"{kind}-{stamp}-{secrets.token_hex(4)}"
        return cls(job_id, kind, workspace, options, roots, items, user_id=user_id)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_JOB_STATES

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.status] = counts.get(item.status, 0) + 1
        return counts

    def progress(self) -> dict[str, Any]:
        counts = self.counts()
        total = len(self.items)
        done = sum(counts.get(state, 0) for state in ITEM_FINAL_STATES)
        return {
            "completed": counts.get("processed", 0) + counts.get("unchanged", 0),
            "failed": counts.get("failed", 0),
            "skipped": counts.get("skipped", 0) + counts.get("cancelled", 0),
            "remaining": total - done,
            "percentage": round(100.0 * done / total, 1) if total else 100.0,
        }

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: bytes) -> Job:
        raw = orjson.loads(data)
        raw["items"] = [JobItem(**item) for item in raw.get("items", [])]
        return cls(**raw)


class JobStore:
    """The job files of one workspace directory."""

    def __init__(self, workspace_dir: Path) -> None:
        self.directory = workspace_dir / "batches"

    def path(self, job_id: str) -> Path:
        if not job_id.replace("-", "").isalnum():  # ids are ours: kind-stamp-hex
            raise KeyError(job_id)
        return self.directory / f"{job_id}.json"

    def save(self, job: Job) -> None:
        job.updated_at = now_iso()
        write_atomic(self.path(job.id), job.to_json())

    def load(self, job_id: str) -> Job | None:
        try:
            return Job.from_json(self.path(job_id).read_bytes())
        except (KeyError, OSError, ValueError, TypeError):
            return None

    def unfinished(self) -> list[Job]:
        jobs = []
        for path in sorted(self.directory.glob("*.json")):
            job = self.load(path.stem)
            if job is not None and not job.finished:
                jobs.append(job)
        return jobs

    def prune(self) -> None:
        """Keep the newest finished jobs only."""
        paths = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for path in paths[KEEP_FINISHED_JOBS:]:
            job = self.load(path.stem)
            if job is not None and job.finished:
                with contextlib.suppress(OSError):
                    path.unlink()


def job_view(job: Job) -> dict[str, Any]:
    """A job as a tool result: state, progress, per-item results (bounded), folder summary, message."""
    progress = job.progress()
    shown = [item for item in job.items if item.status == "failed"]
    shown += [item for item in job.items if item.status != "failed"]
    view: dict[str, Any] = {
        "batch_id": job.id,
        "kind": job.kind,
        "status": job.status,
        "total_items": len(job.items),
        "progress": progress,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "results": [item.view() for item in sorted(shown[:MAX_RESULTS_SHOWN], key=lambda i: i.index)],
        "results_truncated": len(job.items) > MAX_RESULTS_SHOWN,
    }
    if job.folder is not None:
        view["summary"] = folder_summary(job)
    view["message"] = _job_message(job, view)
    return view


def folder_summary(job: Job) -> dict[str, Any]:
    assert job.folder is not None
    processed = [item for item in job.items if item.status == "processed"]
    return {
        "folder": job.folder.get("prefix"),
        "files_found": len(job.items),
        "added": sum(1 for item in processed if item.action == "indexed"),
        "replaced": sum(1 for item in processed if item.action == "replaced"),
        "unchanged": sum(1 for item in job.items if item.status == "unchanged")
        + sum(1 for item in processed if item.action == "already_indexed"),
        "failed": sum(1 for item in job.items if item.status == "failed"),
        "indexing": sum(1 for item in job.items if item.status in {"pending", "queued"}),
        "removed": int(job.folder.get("removed_count", 0)),
        "removed_documents": list(job.folder.get("removed", []))[:MAX_RESULTS_SHOWN],
        "skipped": int(job.folder.get("skipped_count", 0)),
        "skipped_files": [
            {"path": path, "reason": reason} for path, reason in list(job.folder.get("skipped", []))[:MAX_RESULTS_SHOWN]
        ],
        "truncated": bool(job.folder.get("truncated")),
    }


def _job_message(job: Job, view: dict[str, Any]) -> str:
    progress = view["progress"]
    total = view["total_items"]
    if job.folder is not None:
        s = view["summary"]
        text = (
            f"Folder '{s['folder']}': {s['files_found']} file(s) — {s['added']} added, {s['replaced']} replaced, "
            f"{s['unchanged']} unchanged, {s['failed']} failed, {s['removed']} removed; {s['skipped']} skipped "
            "(unsupported, empty, too large or outside the allowed directories)."
        )
        if s["truncated"]:
            text += " The folder has more files than LIGHTRAG_MCP_MAX_FOLDER_FILES allows; the rest were not indexed."
    else:
        text = (
            f"Batch of {total} item(s): {progress['completed']} done, {progress['failed']} failed, "
            f"{progress['skipped']} skipped or cancelled."
        )
    if job.status in {"queued", "processing"}:
        text += (
            f" Still working ({total - progress['remaining']} of {total} finished). Call lightrag_get_status with "
            f"batch_id '{job.id}' to follow it, or with cancel: true to stop it."
        )
    elif job.status == "cancelled":
        text += " The batch was cancelled; documents already queued finish indexing and stay."
    elif job.status == "failed":
        text += f" The batch failed: {job.note or 'see the failed items'}."
    return text
