"""Reading a shared knowledge base without holding it (SPEC §3 "Shared knowledge bases").

LibreChat runs one server process per user on one data directory, and every one of them reads
the team's handbook.  A workspace's writer holds its files with an exclusive lock
(`rag_worker.storage.locks`); readers must not queue behind it (no WORKSPACE_BUSY for readers).
So a process that does not hold a shared workspace reads it through a read-only instance:

* opened without any lock, and never written: no commit, no finalize, no LLM-cache save, no
  intake recovery or resumed indexing (those are the writer's);
* fresh: before serving, a reader compares the workspace's commit stamp (name, size and
  mtime of each storage file LightRAG writes) with the one it loaded, at most every
  `CHECK_S`; when the writer has committed since, and its files have settled for `SETTLE_S`,
  a new instance is loaded (the old one serves the calls still running on it, then stops);
* consistent: a load whose stamp changed while it read is done again (a torn read of a file
  the writer was rewriting is never served).

With PostgreSQL storages reads are always fresh: the stamp of a workspace without local
storage files never changes, and the instance reads the database.  A write call (the worker
knows from the method's spec) takes the ordinary locked path: this process's read-only copy is
retired first, since LightRAG keeps JSON data in process-wide tables keyed by workspace name.
"""

from __future__ import annotations

import contextvars
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from config.shared_kbs import SHARED_WORKSPACE_PREFIX
from rag_worker.storage.workspace import Workspace, forget_process_wide_data, stop_call_queues

log = logging.getLogger("rag_worker.storage.shared_readers")

CHECK_S = 1.0  # a reader looks for a newer commit at most this often
SETTLE_S = 0.3  # a commit is loaded once its files have not changed for this long
LOADS = 3  # loads tried when the writer commits while one reads
#: The files LightRAG's local storages commit (JSON KV and doc status, NanoVectorDB, NetworkX).
_COMMITTED = ("kv_store_", "vdb_", "graph_")

#: Does the current call change its knowledge base?  Set per call by the dispatcher from the
#: method's spec; anything else (a batch job, a script) counts as writing: it takes the lock.
WRITING: contextvars.ContextVar[bool] = contextvars.ContextVar("writing", default=True)

Stamp = tuple[tuple[str, int, int], ...]


def is_shared(workspace: str) -> bool:
    return workspace.startswith(SHARED_WORKSPACE_PREFIX)


def commit_stamp(directory: Path) -> Stamp:
    """What the workspace's committed files look like now: (name, size, mtime_ns) of each."""
    stamp = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(_COMMITTED) and entry.is_file():
                    info = entry.stat()
                    stamp.append((entry.name, info.st_size, info.st_mtime_ns))
    except OSError:
        return ()
    return tuple(sorted(stamp))


def settled(stamp: Stamp) -> bool:
    newest = max((mtime for _, _, mtime in stamp), default=0)
    return time.time_ns() - newest >= SETTLE_S * 1e9


@dataclass
class Reader:
    entry: Workspace
    stamp: Stamp
    checked: float = field(default_factory=time.monotonic)


OpenReadOnly = Callable[[str], Awaitable[Workspace]]
Spawn = Callable[[Callable[[], Any]], Any]


class SharedReaders:
    """This process's read-only instances of shared workspaces, one per workspace."""

    def __init__(self, root: Path, open_read_only: OpenReadOnly, spawn: Spawn) -> None:
        self._root = root
        self._open_read_only = open_read_only
        self._spawn = spawn
        self._readers: dict[str, Reader] = {}

    def __contains__(self, workspace: str) -> bool:
        return workspace in self._readers

    def workspaces(self) -> list[str]:
        return list(self._readers)

    def current(self, workspace: str) -> Workspace | None:
        """The reader's instance when it needs no look at the disk yet (checked within CHECK_S)."""
        reader = self._readers.get(workspace)
        if reader is None or time.monotonic() - reader.checked >= CHECK_S:
            return None
        reader.entry.lease_to_current_task()
        return reader.entry

    async def fresh(self, workspace: str) -> Workspace:
        """A read-only instance holding the writer's last commit.  Call it under the workspace's gate."""
        reader = self._readers.get(workspace)
        directory = self._root / workspace
        if reader is not None:
            stamp = commit_stamp(directory)
            reader.checked = time.monotonic()
            if stamp == reader.stamp or not settled(stamp):
                reader.entry.lease_to_current_task()
                return reader.entry
            log.info("shared workspace %s: the writer committed; loading the new state", workspace)
            self.retire(workspace)
        entry, stamp = await self._load(workspace, directory)
        self._readers[workspace] = Reader(entry, stamp)
        entry.lease_to_current_task()
        return entry

    async def _load(self, workspace: str, directory: Path) -> tuple[Workspace, Stamp]:
        for attempt in range(1, LOADS + 1):
            before = commit_stamp(directory)
            entry = await self._open_read_only(workspace)
            after = commit_stamp(directory)
            if before == after or attempt == LOADS:
                return entry, after
            log.info("shared workspace %s changed while it loaded; loading again", workspace)
            self._drop(entry)
            await anyio.sleep(SETTLE_S)
        raise AssertionError("unreachable")

    def retire(self, workspace: str) -> None:
        """Forget this process's read-only copy: the next opening (read or write) loads the files.

        Calls still running on the old instance finish on it (it holds its own data)."""
        reader = self._readers.pop(workspace, None)
        if reader is not None:
            self._drop(reader.entry)

    def _drop(self, entry: Workspace) -> None:
        forget_process_wide_data(entry.name)

        async def stop_when_unused() -> None:
            while entry.in_use():
                await anyio.sleep(CHECK_S)
            await stop_call_queues(entry.rag)

        self._spawn(stop_when_unused)

    def close_idle(self, idle_seconds: float) -> None:
        """Drop readers unused for `idle_seconds` (they hold the knowledge base in memory)."""
        idle_since = time.monotonic() - idle_seconds
        for name in [name for name, reader in self._readers.items() if reader.entry.last_used <= idle_since]:
            if not self._readers[name].entry.in_use():
                log.info("closing read-only copy of shared workspace %s (idle)", name)
                self.retire(name)

    def close_all(self) -> None:
        """Shutdown: forget every read-only copy (nothing to save)."""
        while self._readers:
            _, reader = self._readers.popitem()
            forget_process_wide_data(reader.entry.name)


def never_saves(rag: Any) -> None:
    """A read-only instance ends a query without saving LightRAG's LLM cache (it writes nothing)."""

    async def query_done() -> None:
        return None

    rag._query_done = query_done
