"""LightRAG instances, one per workspace: created lazily, cached (bounded), finalized cleanly.

A workspace's local files are owned by one process at a time through an OS file lock
(SPEC §3): a second server process that needs the same workspace waits briefly, then
gets WORKSPACE_BUSY.  LightRAG keeps JSON KV data in a process-wide dict keyed by
workspace name, so this registry is the only place that constructs instances.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from config.settings import Settings, unwritable_reason
from protocol import ErrorCode, RagError
from rag_worker.bindings import build_components
from rag_worker.storage.catalog import DocumentCatalog
from rag_worker.storage.journals import DeleteJournal
from rag_worker.storage.lightrag_setup import new_lightrag
from rag_worker.storage.placement import StoragePlacement
from rag_worker.storage.removal import finish_interrupted_deletes
from rag_worker.storage.workspace import Workspace

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]
UNFINISHED_STATES = ("pending", "parsing", "analyzing", "processing")

log = logging.getLogger("rag_worker.storage.engine")

LOCK_WAIT_SECONDS = 5.0
OPEN_LEASE_S = 60.0  # how long opening a workspace on server storages may block the loop
MAX_OPEN_WORKSPACES = 8


class DataDirUnwritable(Exception):
    """The worker cannot write WORKING_DIR (disk full, permissions): it exits with EXIT_DATA_DIR."""


class EngineRegistry:
    """Owns every LightRAG instance in this worker."""

    def __init__(
        self,
        settings: Settings,
        limiter: anyio.CapacityLimiter,
        spawn: Spawn,
        announce_blocking: Callable[[float, str], Awaitable[None]] | None = None,
    ) -> None:
        self._settings = settings
        self._announce_blocking = announce_blocking
        self._limiter = limiter
        self._spawn = spawn
        self._root = Path(settings.data_dir)
        self._open: OrderedDict[str, Workspace] = OrderedDict()
        self._opening = anyio.Lock()
        self._components: Any = None
        self.placement = StoragePlacement(settings)

    def check_data_dir(self) -> None:
        """Fail start-up (not a later call) when the data directory is not writable."""
        reason = unwritable_reason(self._root, f".write-probe-{os.getpid()}")
        if reason is not None:
            log.error("the data directory is not writable: %s", reason)
            raise DataDirUnwritable(reason)

    def open_workspaces(self) -> list[str]:
        return list(self._open)

    def opened(self, workspace: str) -> Workspace | None:
        """The workspace if it is open (without opening it)."""
        return self._open.get(workspace)

    def workspace_dir(self, workspace: str) -> Path:
        return self._root / workspace

    async def get(self, workspace: str) -> Workspace:
        """The open workspace named `workspace`, opening it (and resuming its work) if needed."""
        entry = self._open.get(workspace)
        if entry is not None:
            self._open.move_to_end(workspace)
            return entry
        async with self._opening:
            entry = self._open.get(workspace)
            if entry is None:
                entry = await self._open_workspace(workspace)
                await self._finish_interrupted_deletes(entry)
                self._open[workspace] = entry
                await self._evict_beyond(MAX_OPEN_WORKSPACES)
                await self._resume_unfinished(entry)
            return entry

    async def _open_workspace(self, workspace: str) -> Workspace:
        lock_fd = await self._lock_workspace(workspace)
        try:
            storages, fallback = self.placement.for_workspace(self.workspace_dir(workspace))
            components = await self._shared_components()
            self._check_embedding_model(workspace, components)
            # Server storage clients may set up synchronously (Milvus: seconds): say so first.
            announce = self._announce_blocking if not storages.is_local else None
            if announce is not None:
                await announce(OPEN_LEASE_S, f"opening a knowledge base on {storages.describe()}")
            try:
                rag = await new_lightrag(self._root, workspace, components, **storages.as_kwargs())
                catalog = DocumentCatalog(rag)
                await catalog.initialize()
            finally:
                if announce is not None:
                    await announce(0, "opened")
            self.placement.record(self.workspace_dir(workspace), storages, fallback)
        except BaseException:
            os.close(lock_fd)
            raise
        log.info("opened workspace %s on %s%s", workspace, storages.describe(), " (fallback)" if fallback else "")
        deletes = DeleteJournal(self.workspace_dir(workspace))
        return Workspace(workspace, rag, catalog, lock_fd, components, deletes, storages, fallback)

    def _check_embedding_model(self, workspace: str, components: dict[str, Any]) -> None:
        """Never mix vectors of two embedding models in one local index (SPEC §6)."""
        marker = self.workspace_dir(workspace) / "embedding_model.json"
        model_id = str(components.get("embedding_model_id") or components.get("embedding_name"))
        if marker.exists():
            recorded = json.loads(marker.read_text()).get("model_id")
            if recorded != model_id:
                raise RagError(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"This knowledge base was indexed with the embedding model {recorded!r}, but the server "
                    f"now uses {model_id!r}; vectors of different models cannot be mixed.",
                    suggested_action=(
                        "Switch the embedding configuration back, or point WORKING_DIR at a new data "
                        "directory and re-index the documents."
                    ),
                )
        else:
            marker.write_text(json.dumps({"model_id": model_id}))

    async def _finish_interrupted_deletes(self, entry: Workspace) -> None:
        """Durability: deletes a previous worker started are finished before anything reads."""
        if entry.deletes.pending():
            try:
                async with entry.ingest_lock:
                    await finish_interrupted_deletes(entry)
            except Exception:  # the workspace still opens; the journal keeps the ids for the next opening
                log.exception("workspace %s: finishing interrupted deletes failed", entry.name)

    async def _resume_unfinished(self, entry: Workspace) -> None:
        """Durability: documents a previous worker left unfinished are processed again."""
        counts = await entry.rag.doc_status.get_status_counts()
        unfinished = sum(int(counts.get(state, 0)) for state in UNFINISHED_STATES)
        if unfinished:
            log.info("workspace %s: resuming %d unfinished document(s)", entry.name, unfinished)
            self.start_processing(entry)

    def start_processing(self, entry: Workspace) -> None:
        """Run LightRAG's pipeline in the background (it outlives the call that queued work)."""

        async def process() -> None:
            try:
                await entry.rag.apipeline_process_enqueue_documents()
            except Exception:
                log.exception("indexing pipeline of workspace %s failed", entry.name)

        self._spawn(process)

    async def _lock_workspace(self, workspace: str) -> int:
        directory = self.workspace_dir(workspace)
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _record_holder(fd)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise RagError(
                        ErrorCode.WORKSPACE_BUSY,
                        f"This knowledge base is in use by another server process ({describe_holder(holder)}).",
                        details={"held_by": holder},
                    ) from None
                await anyio.sleep(0.2)

    def lock_holder(self, workspace: str) -> dict[str, Any] | None:
        """Who holds `workspace` when another process does (pid, since), else None. Never waits."""
        if workspace in self._open:
            return None
        try:
            fd = os.open(self.workspace_dir(workspace) / ".lock", os.O_RDONLY)
        except OSError:
            return None  # never opened: nobody holds it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            return _read_holder(fd) or {}
        finally:
            os.close(fd)  # closing drops a lock we took

    async def _shared_components(self) -> dict[str, Any]:
        """Embedding model, tokenizer and LLM function: built once, shared by all workspaces."""
        if self._components is None:
            self._components = await build_components(self._settings, self._limiter)
        return dict(self._components)

    async def _evict_beyond(self, limit: int) -> None:
        while len(self._open) > limit:
            _, entry = self._open.popitem(last=False)
            await self._finalize(entry)

    async def _finalize(self, entry: Workspace) -> None:
        try:
            with anyio.move_on_after(10, shield=True):
                await entry.catalog.finalize()
                await entry.rag.finalize_storages()
        except Exception:
            log.exception("finalizing workspace %s failed", entry.name)
        finally:
            with contextlib.suppress(OSError):
                os.close(entry.lock_fd)

    async def close_all(self) -> None:
        while self._open:
            _, entry = self._open.popitem(last=False)
            await self._finalize(entry)


def _record_holder(fd: int) -> None:
    """Write who holds the workspace into its lock file, for another process's busy message."""
    info = {"pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)


def _read_holder(fd: int) -> dict[str, Any] | None:
    try:
        info = json.loads(os.pread(fd, 256, 0) or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    return {"pid": info.get("pid"), "since": info.get("since")}


def describe_holder(holder: dict[str, Any] | None) -> str:
    """`pid 4242, since 2026-11-24T08:12:03Z` — a process, never the other client's user."""
    if not holder or not holder.get("pid"):
        return "another lightrag-mcp process"
    since = f", since {holder['since']}" if holder.get("since") else ""
    return f"pid {holder['pid']} on this machine{since}"
