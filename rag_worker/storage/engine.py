"""LightRAG instances, one per workspace: opened lazily, kept within a bound, closed when idle.

One worker serves every user's workspace, so what stays open is bounded:
LIGHTRAG_MCP_MAX_OPEN_WORKSPACES instances at most — the least recently used *idle* one closes
when another opens; a workspace in use (`Workspace.in_use`/`busy`) is never closed, so when all
are busy the bound is exceeded for a while and logged.  A background sweep closes workspaces
unused for LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS, which frees their memory and releases their
locks so another process or replica may take them.  Closing commits what LightRAG buffers;
documents still queued resume when the workspace opens again (SPEC §2).

A workspace is owned by one process at a time (`rag_worker.storage.locks`): an OS file lock on
its local directory, plus a PostgreSQL advisory lock when its storages include PostgreSQL.
LightRAG keeps JSON KV data in a process-wide dict keyed by workspace name, so this registry
is the only place that constructs instances, and one workspace is opened or closed at a time
(a gate per workspace name).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from config.settings import Settings, unwritable_reason
from protocol import ErrorCode, RagError
from rag_worker.embedded.embedding_lanes import release_freed_memory
from rag_worker.graph.snapshot import forget_unused as forget_unused_snapshots
from rag_worker.storage.catalog import DocumentCatalog, document_name
from rag_worker.storage.embedded_engine import EmbeddedEngine
from rag_worker.storage.engine_template import apply_table_settings
from rag_worker.storage.indexing_runs import Indexing, Spawn
from rag_worker.storage.intake import IntakeQueue, recover
from rag_worker.storage.journals import DeleteJournal
from rag_worker.storage.known_documents import load_known_documents
from rag_worker.storage.lightrag_setup import new_lightrag
from rag_worker.storage.locks import (
    LOCK_WAIT_SECONDS,
    AdvisoryLocks,
    FileLock,
    WorkspaceLocks,
    describe_holder,
    file_lock_holder,
    lock_wait,
    uses_postgres,
)
from rag_worker.storage.pg_client import close_pool, quiet_table_probes
from rag_worker.storage.placement import StoragePlacement
from rag_worker.storage.removal import finish_interrupted_deletes
from rag_worker.storage.shared_readers import WRITING, SharedReaders, is_shared, never_saves
from rag_worker.storage.workspace import Workspace
from rag_worker.storage.workspace_models import WorkspaceModels

__all__ = ["DataDirUnwritable", "EngineRegistry", "Spawn", "describe_holder"]


log = logging.getLogger("rag_worker.storage.engine")

OPEN_LEASE_S = 60.0  # how long opening a workspace on server storages may block the loop
CLOSE_TIMEOUT_S = 10.0
LONGEST_SWEEP_S = 15.0  # the sweep also checks the PostgreSQL lock connection this often
WANTED_POLL_S = 1.0  # how often an open workspace is checked for another process waiting for it
UNUSED_POLL_S = 0.5
SHARED_WRITER_IDLE_S = 2.0  # a shared knowledge base's writer lets go this soon after its last work...
SHARED_LOCK_WAIT_S = 30.0  # ...and its next writer, in another process, waits this long: writes queue, not fail


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
        after_processing: Callable[[Workspace], Awaitable[None]] | None = None,
    ) -> None:
        self._settings = settings
        self._announce_blocking = announce_blocking
        self._spawn = spawn
        self._root = Path(settings.data_dir)
        self._max_open = int(settings.max_open_workspaces)
        self._idle_seconds = float(settings.workspace_idle_seconds)
        self._open: dict[str, Workspace] = {}
        self._gates: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)  # opening/closing one workspace
        self._constructing = anyio.Lock()  # LightRAG instances are built one at a time
        self._trimming = anyio.Lock()
        self._closing: dict[str, anyio.Event] = {}  # workspaces closing after their lock was lost
        self._stopped = anyio.Event()
        self._advisory = AdvisoryLocks(self._advisory_lost)
        self.placement = StoragePlacement(settings)
        self._readers = SharedReaders(self._root, self._open_read_only, spawn)
        self.embedded = EmbeddedEngine(self._root)  # started by the first knowledge base placed in it
        self._indexing = Indexing(spawn, after_processing)
        self._models = WorkspaceModels(settings, limiter)

    def check_data_dir(self) -> None:
        """Fail start-up (not a later call) when the data directory is not writable."""
        reason = unwritable_reason(self._root, f".write-probe-{os.getpid()}")
        if reason is not None:
            log.error("the data directory is not writable: %s", reason)
            raise DataDirUnwritable(reason)

    async def start_engine_early(self) -> None:
        """When new knowledge bases go to the embedded engine, start it now, in the background
        (a first start runs initdb: seconds; a failure is the first call's STORAGE_ERROR); then
        watch it, restarting it when it dies while knowledge bases in it are open."""
        if self.placement.configured.embedded:
            try:
                await self.embedded.ensure_running()
            except RagError as exc:
                log.warning("the embedded engine did not start at worker start-up: %s", exc.message)
        async with anyio.create_task_group() as watching:  # until close_all (a worker's shutdown, a test's end)
            watching.start_soon(self.embedded.watch, lambda: any(entry.storages.embedded for entry in self._open.values()))
            await self._stopped.wait()
            watching.cancel_scope.cancel()

    def open_workspaces(self) -> list[str]:
        return list(self._open)

    def indexing(self) -> bool:
        """Documents are being indexed or deleted in the background: a pipeline run or the intake's
        feeder works, documents wait in an intake queue, or a delete's run goes on (a planned
        recycle waits for the end: a delete it cut short would be done again at the next opening)."""
        return any(entry.indexing_runs > 0 or entry.intake.feeding or len(entry.intake) > 0 or entry.deleting
                   for entry in self._open.values())

    def opened(self, workspace: str) -> Workspace | None:
        """The workspace if it is open (without opening it)."""
        return self._open.get(workspace)

    def workspace_dir(self, workspace: str) -> Path:
        return self._root / workspace

    # --- opening ---------------------------------------------------------------------------

    async def get(self, workspace: str) -> Workspace:
        """The open workspace named `workspace`, opening it (and resuming its work) if needed.

        The calling task holds it until the task ends (a call's, a batch job's): a workspace in
        use is never closed under it."""
        entry = self._open.get(workspace)
        if entry is not None:
            entry.lease_to_current_task()
            if entry.storages.embedded and not self.embedded.alive():
                await self.embedded.ensure_running()  # it died: restarted (its pool reconnects)
            return entry
        if is_shared(workspace) and not WRITING.get():
            return await self._read_shared(workspace)
        entry = await self._open_once(workspace)
        if len(self._open) > self._max_open:
            self._spawn(self._keep_bound)  # closing another workspace is not this call's wait
        return entry

    async def _open_once(self, workspace: str) -> Workspace:
        await self._wait_for_closing(workspace)
        async with self._gates[workspace]:
            entry = self._open.get(workspace)
            if entry is None:
                self._readers.retire(workspace)  # a write: this process's read-only copy gives way to the writer
                entry = await self._open_workspace(workspace)
                entry.known = await load_known_documents(entry.rag.doc_status)  # before any row is written
                await recover(entry)
                self._open[workspace] = entry
                entry.lease_to_current_task()  # before the next await: nothing closes it under us
                await self._resume_work(entry)
            entry.lease_to_current_task()
            return entry

    async def _read_shared(self, workspace: str) -> Workspace:
        """A shared workspace for a reading call: the writer's instance when this process holds it,
        else a read-only one that takes no lock (`rag_worker.storage.shared_readers`)."""
        entry = self._readers.current(workspace)
        if entry is not None:
            return entry
        async with self._gates[workspace]:
            writer = self._open.get(workspace)
            if writer is not None:
                writer.lease_to_current_task()
                return writer
            return await self._readers.fresh(workspace)

    async def _open_read_only(self, workspace: str) -> Workspace:
        """A LightRAG instance of `workspace` without its locks, for reading only (never committed)."""
        directory = self.workspace_dir(workspace)
        storages, fallback = self.placement.for_workspace(directory)
        async with self._constructing:
            components = await self._models.for_workspace(workspace)
            rag, catalog = await self._construct(workspace, storages, components, read_only=True)
        never_saves(rag)
        unlocked = WorkspaceLocks(workspace, FileLock(-1))  # holds nothing: a reader never writes
        deletes, intake = DeleteJournal(directory), IntakeQueue(directory)
        return Workspace(workspace, rag, catalog, unlocked, components, deletes, intake, storages, fallback)

    async def _wait_for_closing(self, workspace: str) -> None:
        closing = self._closing.get(workspace)
        if closing is None:
            return
        with anyio.move_on_after(LOCK_WAIT_SECONDS):
            await closing.wait()
        if workspace in self._closing:
            raise RagError(
                ErrorCode.WORKSPACE_BUSY,
                "This knowledge base is being closed after its storage lock was lost; it reopens once the calls "
                "still running on it have finished.",
            )

    async def _open_workspace(self, workspace: str) -> Workspace:
        directory = self.workspace_dir(workspace)
        wait = SHARED_LOCK_WAIT_S if is_shared(workspace) else lock_wait(self._settings)
        locks = WorkspaceLocks(workspace, await FileLock.acquire(directory, wait))
        try:
            storages, fallback = self.placement.for_workspace(directory)
            if storages.embedded:
                await self.embedded.ensure_running()
            # The advisory lock keeps replicas sharing a server apart; the embedded engine is this
            # data directory's own, whose file locks already do that (and it survives an engine restart).
            if uses_postgres(storages) and not storages.embedded:
                await self._advisory.acquire(workspace)
                locks.advisory = self._advisory
            async with self._constructing:
                components = await self._models.for_workspace(workspace)
                rag, catalog = await self._construct(workspace, storages, components)
            self.placement.record(directory, storages, fallback)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await locks.release()
            raise
        log.info("opened workspace %s on %s%s", workspace, storages.describe(), " (fallback)" if fallback else "")
        deletes, intake = DeleteJournal(directory), IntakeQueue(directory)
        return Workspace(workspace, rag, catalog, locks, components, deletes, intake, storages, fallback)

    async def _construct(
        self, workspace: str, storages: Any, components: dict[str, Any], read_only: bool = False
    ) -> tuple[Any, DocumentCatalog]:
        # Server storage clients may set up synchronously (Milvus: seconds): say so first.
        announce = self._announce_blocking if not storages.is_local else None
        if announce is not None:
            await announce(OPEN_LEASE_S, f"opening a knowledge base on {storages.describe()}")
        try:
            tables = self.embedded.creating_tables() if storages.embedded else contextlib.nullcontext()
            async with tables:
                if storages.embedded:
                    await self.embedded.convert_tables()
                with quiet_table_probes():
                    rag = await new_lightrag(self._root, workspace, components, read_only=read_only, **storages.as_kwargs())
                    catalog = DocumentCatalog(rag)
                    await catalog.initialize()
                    if storages.embedded and not read_only:
                        tuned = await apply_table_settings(rag.doc_status.db)
                        if tuned:
                            log.info("settings given to %d tables of the engine (autovacuum, vectors in the row)", len(tuned))
        finally:
            if announce is not None:
                await announce(0, "opened")
        return rag, catalog

    async def _resume_work(self, entry: Workspace) -> None:
        """Durability: what a previous worker left unfinished goes on.  Deletes it had started come
        first, in the background: LightRAG's cascade takes a minute at 10,000 documents, which the
        first call after a restart used to wait for (LibreChat gives up at 60 s).  Until each is
        done the document is listed and a delete call for it answers that it is being deleted, as
        after a delete call that answered before its run ended; uploads wait for them (the ingest
        lock, taken before this returns); then the old versions replaced documents wait for go,
        and indexing resumes.  The old version a queued new one waits for is the remover's."""
        interrupted = [doc_id for doc_id in entry.deletes.pending() if doc_id not in entry.intake.awaiting_removal]
        if not interrupted:
            await self._resume_indexing(entry)
            return
        for doc_id in interrupted:
            row = await entry.status_row(doc_id) or {}
            entry.deleting[doc_id] = document_name(doc_id, row, await entry.catalog.get(doc_id) or {})
        holding = anyio.Event()

        async def finish() -> None:
            entry.lease_to_current_task()  # open until the deletes end
            try:
                async with entry.ingest_lock:
                    holding.set()
                    await finish_interrupted_deletes(entry, interrupted)
            except Exception:  # the journal keeps the ids for the next opening
                log.exception("workspace %s: finishing interrupted deletes failed", entry.name)
            finally:
                holding.set()
                for doc_id in interrupted:
                    entry.deleting.pop(doc_id, None)
            await self._resume_indexing(entry)

        self._spawn(finish)
        await holding.wait()  # nobody else has the workspace yet: the deletes hold its ingest lock first

    async def _resume_indexing(self, entry: Workspace) -> None:
        """The old versions replaced documents wait for go, and unfinished documents are processed."""
        self._indexing.remove_previous_versions(entry)
        await self._indexing.resume_unfinished(entry)

    def start_processing(self, entry: Workspace) -> None:
        """Hand what the intake queue holds to LightRAG and keep its pipeline running (`Indexing.start`),
        once the old versions replaced documents wait for are deleted (`Indexing.remove_previous_versions`)."""
        self._indexing.remove_previous_versions(entry)
        self._indexing.start(entry)

    def lock_holder(self, workspace: str) -> dict[str, Any] | None:
        """Who holds `workspace`'s local files when another process does (pid, since), else None."""
        if workspace in self._open:
            return None
        return file_lock_holder(self.workspace_dir(workspace))

    # --- closing ---------------------------------------------------------------------------

    async def sweep_forever(self) -> None:
        """Background, until `close_all`: every WANTED_POLL_S let go of idle workspaces another process
        waits for; every interval close idle ones, keep the bound, check the lock connection."""
        interval = min(self._idle_seconds / 4, LONGEST_SWEEP_S) if self._idle_seconds > 0 else LONGEST_SWEEP_S
        next_sweep = time.monotonic() + interval
        while not self._stopped.is_set():
            with anyio.move_on_after(max(min(interval, WANTED_POLL_S), 0.1)):
                await self._stopped.wait()
            if not self._stopped.is_set():
                await self.release_wanted()
            if not self._stopped.is_set() and time.monotonic() >= next_sweep:
                await self.sweep()
                next_sweep = time.monotonic() + interval

    async def release_wanted(self) -> None:
        """Let go of the idle workspaces another process is waiting for (it serves the call instead),
        and of shared knowledge bases idle SHARED_WRITER_IDLE_S (their next writer may be another process)."""
        shared_since = time.monotonic() - SHARED_WRITER_IDLE_S
        for entry in list(self._open.values()):
            if entry.locks.wanted(entry.last_used):
                await self._close_if_idle(entry, "wanted by another process")
            elif is_shared(entry.name) and entry.last_used <= shared_since:
                await self._close_if_idle(entry, "shared knowledge base: its next writer may be another process")

    async def sweep(self) -> None:
        """Close the workspaces idle for LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS; keep the bound; let go
        of graph snapshots no graph call used for a while."""
        if forget_unused_snapshots():
            # glibc keeps what they freed until trimmed: a graph export's snapshot held 290 MB of
            # the worker's RSS at 5,000 documents after being let go
            await anyio.to_thread.run_sync(release_freed_memory)
        if self._idle_seconds > 0:
            idle_since = time.monotonic() - self._idle_seconds
            for entry in [entry for entry in self._open.values() if entry.last_used <= idle_since]:
                await self._close_if_idle(entry, "idle")
            self._readers.close_idle(self._idle_seconds)
        await self._keep_bound()
        await self._advisory.check()

    async def _keep_bound(self) -> None:
        """Close least recently used idle workspaces while more than the bound are open."""
        async with self._trimming:  # one at a time, or two would each close one for the same excess
            while len(self._open) > self._max_open:
                for entry in sorted(self._open.values(), key=lambda entry: entry.last_used):
                    if await self._close_if_idle(entry, "least recently used"):
                        break
                else:
                    log.warning(
                        "%d workspaces open, over LIGHTRAG_MCP_MAX_OPEN_WORKSPACES=%d: all are in use; idle ones "
                        "close as they finish",
                        len(self._open),
                        self._max_open,
                    )
                    return

    async def _close_if_idle(self, entry: Workspace, why: str) -> bool:
        async with self._gates[entry.name]:
            if self._open.get(entry.name) is not entry or await entry.busy():
                return False
            if not await self._committed(entry):
                return False  # stays open: what it buffers is not lost, the next sweep tries again
            if await entry.busy():
                return False
            del self._open[entry.name]  # no await since busy()'s last look: still idle
            log.info("closing workspace %s (%s)", entry.name, why)
            await self._close(entry)
            return True

    async def _committed(self, entry: Workspace) -> bool:
        try:
            with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True) as bounded:
                await entry.commit()
        except Exception:
            log.exception("workspace %s stays open: saving what LightRAG buffers failed", entry.name)
            return False
        if bounded.cancelled_caught:
            log.error("workspace %s stays open: saving what LightRAG buffers took over %.0f s", entry.name, CLOSE_TIMEOUT_S)
        return not bounded.cancelled_caught

    async def _close(self, entry: Workspace) -> None:
        """Finalize `entry` (bounded in time), then release its locks whatever happened."""
        try:
            with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
                await entry.close()
        except Exception:
            log.exception("closing workspace %s failed", entry.name)
        finally:
            with anyio.CancelScope(shield=True):
                await entry.locks.release()

    def _advisory_lost(self, workspaces: list[str]) -> None:
        """The PostgreSQL lock connection dropped: no new call gets these workspaces, and each
        closes once the work still running on it ends (it reopens under a new lock).

        That work is not cut short: LightRAG 1.5.7 runs its pipeline in cancellation-resistant
        tasks, and its own cancellation marks the documents failed (not resumed)."""
        for name in workspaces:
            entry = self._open.pop(name, None)
            if entry is None:
                continue
            closing = self._closing[name] = anyio.Event()

            async def close_when_unused(entry: Workspace = entry, closing: anyio.Event = closing) -> None:
                while await entry.busy():
                    await anyio.sleep(UNUSED_POLL_S)
                async with self._gates[entry.name]:
                    await self._close(entry)
                if self._closing.get(entry.name) is closing:
                    del self._closing[entry.name]
                closing.set()

            self._spawn(close_when_unused)

    async def close_all(self) -> None:
        """Shutdown: close every workspace, in use or not, and end the sweep."""
        self._stopped.set()
        self._readers.close_all()
        while self._open:
            _, entry = self._open.popitem()
            await self._close(entry)
        await self._advisory.close()
        close_pool()
        await self.embedded.release()  # the last process of this data directory stops the engine
