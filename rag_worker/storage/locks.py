"""Who may write a workspace: one process at a time, holding its locks while the workspace is open.

* Local files: the workspace's directory under WORKING_DIR is owned through an OS file lock
  (`flock` on `<directory>/.lock`).  Another server process on the same data directory (a
  second LibreChat connection of the same user, VS Code beside LibreChat) waits within its
  call's budget (`lock_wait`), touching `<directory>/.wanted` while it waits; the holder sees
  the fresh marker and lets go of the workspace once it has been idle WANTED_IDLE_SECONDS (its
  registry's sweep), instead of after LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS. A holder that stays
  busy longer than the wait leaves the waiter WORKSPACE_BUSY naming its pid (SPEC §3).
* PostgreSQL: replicas have data directories of their own but share the database, so a
  workspace whose storages include PostgreSQL is also held with a session advisory lock
  (`pg_try_advisory_lock`, a 64-bit key hashed from the workspace name) on one dedicated
  connection per worker.  Its `application_name` ("lightrag-mcp <host> <pid>") lets a refused
  replica name the holder (pg_locks + pg_stat_activity).  When that connection drops,
  PostgreSQL has released every lock it held: `AdvisoryLocks` tells its owner, which closes
  those workspaces rather than write them unprotected.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from config.storages import StorageSet
from protocol import ErrorCode, RagError

log = logging.getLogger("rag_worker.storage.locks")

LOCK_WAIT_SECONDS = 5.0  # the shortest wait for a workspace another process holds (see lock_wait)
RETRY_S = 0.2
WANTED_MARKER = ".wanted"
WANTED_FRESH_SECONDS = 2.0  # a waiter touches the marker every RETRY_S: older means nobody waits
WANTED_IDLE_SECONDS = 1.0  # a wanted workspace idle this long is let go (an answer in flight finishes first)
APPLICATION = "lightrag-mcp"
_ADVISORY_NAMESPACE = b"lightrag-mcp workspace\x00"  # keeps our keys apart from other applications'
CONNECT_TIMEOUT_S = 10.0
CHECK_TIMEOUT_S = 5.0
_STICKY_ROUTING = (
    "Retry shortly: the other replica lets go of a knowledge base once it has been idle for "
    "LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS. Administrators: route each user's calls to one replica "
    "(sticky routing on the user header, X-User-Id by default, or on Mcp-Session-Id)."
)


# --- local files: an OS file lock ------------------------------------------------------------


def lock_wait(settings: Any) -> float:
    """How long a call waits for a workspace another process holds: the budget an ingestion call
    has to answer in (LIGHTRAG_MCP_WAIT_SECONDS), at least LOCK_WAIT_SECONDS — time enough for an
    idle holder to notice the waiter and let go."""
    return max(LOCK_WAIT_SECONDS, float(settings.wait_seconds))


@dataclass
class FileLock:
    """A held `flock` on a workspace directory's `.lock` file (released when the fd closes)."""

    fd: int
    directory: Path | None = None

    @classmethod
    async def acquire(cls, directory: Path, wait: float = LOCK_WAIT_SECONDS) -> FileLock:
        """Take the lock, waiting up to `wait` seconds and saying so to the holder (the `.wanted`
        marker); WORKSPACE_BUSY naming the holder after that."""
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _record_holder(fd)
                return cls(fd, directory)
            except BlockingIOError:
                _touch(directory / WANTED_MARKER)
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise RagError(
                        ErrorCode.WORKSPACE_BUSY,
                        f"This knowledge base is in use by another server process ({describe_holder(holder)}).",
                        details={"held_by": holder},
                    ) from None
                await anyio.sleep(RETRY_S)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def wanted(self) -> bool:
        """Does another process wait for this workspace right now (a fresh `.wanted` marker)?"""
        if self.directory is None:
            return False
        try:
            touched = (self.directory / WANTED_MARKER).stat().st_mtime
        except OSError:
            return False
        return time.time() - touched <= WANTED_FRESH_SECONDS


def _touch(marker: Path) -> None:
    """Mark the workspace wanted (an empty file whose modification time says when)."""
    with contextlib.suppress(OSError):
        marker.touch()


def file_lock_holder(directory: Path) -> dict[str, Any] | None:
    """Who holds the directory's lock when another process does (pid, since), else None. Never waits."""
    try:
        fd = os.open(directory / ".lock", os.O_RDONLY)
    except OSError:
        return None  # never opened: nobody holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return _read_holder(fd) or {}
    finally:
        os.close(fd)  # closing drops a lock we took


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
    """`pid 4242 on this machine, since …` or `lightrag-mcp on host-b, pid 4242` — a process, never a user."""
    if not holder or not holder.get("pid"):
        return "another lightrag-mcp process"
    if holder.get("host") and holder["host"] != _hostname():
        return f"{APPLICATION} on {holder['host']}, pid {holder['pid']}"
    since = f", since {holder['since']}" if holder.get("since") else ""
    return f"pid {holder['pid']} on this machine{since}"


# --- PostgreSQL: session advisory locks ------------------------------------------------------


def uses_postgres(storages: StorageSet) -> bool:
    """Does a workspace on these storages keep data in PostgreSQL (and so need the advisory lock)?"""
    return any(backend.name == "postgres" for backend in storages.backends)


def advisory_key(workspace: str) -> int:
    """The workspace's advisory-lock key: a signed 64-bit slice of a hash of a fixed prefix + its name."""
    digest = hashlib.sha256(_ADVISORY_NAMESPACE + workspace.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _hostname() -> str:
    return socket.gethostname()[:40]  # application_name holds at most 63 bytes


def replica_name() -> str:
    """This worker's `application_name` on the lock connection: `lightrag-mcp <host> <pid>`."""
    return f"{APPLICATION} {_hostname()} {os.getpid()}"


def holder_from_application(name: str | None) -> dict[str, Any]:
    """`{"host", "pid"}` from a holder's application_name ({} when it is not one of ours)."""
    parts = (name or "").split(" ")
    if len(parts) >= 3 and parts[0] == APPLICATION and parts[-1].isdigit():
        return {"host": " ".join(parts[1:-1]), "pid": int(parts[-1])}
    return {}


_HOLDER_SQL = """
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid
LIMIT 1"""

Connect = Callable[[], Awaitable[Any]]
OnLost = Callable[[list[str]], None]


class AdvisoryLocks:
    """One worker's PostgreSQL advisory locks, one per open workspace, on one dedicated connection.

    The connection opens at the first lock and stays open; `on_lost` is called with the
    workspaces whose locks went away with it when it drops (noticed by asyncpg, or by `check`)."""

    def __init__(self, on_lost: OnLost, connect: Connect | None = None) -> None:
        self._on_lost = on_lost
        self._connect = connect or connect_for_locks
        self._connection: Any = None
        self._use = anyio.Lock()  # an asyncpg connection runs one query at a time
        self._held: set[str] = set()

    def holds(self, workspace: str) -> bool:
        return workspace in self._held

    async def acquire(self, workspace: str, wait: float = LOCK_WAIT_SECONDS) -> None:
        """Hold `workspace`'s lock, waiting up to `wait` s; WORKSPACE_BUSY naming the holder after that."""
        key = advisory_key(workspace)
        deadline = time.monotonic() + wait
        while True:
            async with self._use:
                connection = await self._open_connection()
                if await connection.fetchval("SELECT pg_try_advisory_lock($1::bigint)", key):
                    self._held.add(workspace)
                    return
                if time.monotonic() >= deadline:
                    row = await connection.fetchrow(_HOLDER_SQL, (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)
                    raise _replica_busy(holder_from_application(row[0] if row else None))
            await anyio.sleep(RETRY_S)

    async def release(self, workspace: str) -> None:
        if workspace not in self._held:
            return  # never held, or gone with a lost connection
        self._held.discard(workspace)
        async with self._use:
            connection = self._connection
            if connection is None:
                return
            try:
                with anyio.fail_after(CHECK_TIMEOUT_S):
                    await connection.fetchval("SELECT pg_advisory_unlock($1::bigint)", advisory_key(workspace))
            except Exception as exc:  # a broken connection: dropping it releases the lock for sure
                log.warning("releasing the lock of workspace %s failed (%s): dropping the lock connection", workspace, exc)
                connection.terminate()

    async def check(self) -> None:
        """Keep-alive: a lock connection that no longer answers is dropped, and its workspaces with it."""
        async with self._use:
            connection = self._connection
            if connection is None or not self._held:
                return
            try:
                with anyio.fail_after(CHECK_TIMEOUT_S):
                    await connection.fetchval("SELECT 1")
            except Exception as exc:
                log.error("the PostgreSQL lock connection does not answer (%s): dropping it", type(exc).__name__)
                connection.terminate()
                self._lost(connection)

    async def close(self) -> None:
        """Release every lock (closing the session releases them) and the connection."""
        connection, self._connection = self._connection, None
        self._held.clear()
        if connection is not None:
            connection.remove_termination_listener(self._lost)
            with anyio.move_on_after(CHECK_TIMEOUT_S, shield=True):
                await connection.close()

    async def _open_connection(self) -> Any:
        if self._connection is not None and self._connection.is_closed():
            self._lost(self._connection)  # asyncpg may not have told us yet
        if self._connection is None:
            self._connection = await self._connect()
            self._connection.add_termination_listener(self._lost)
            log.info("PostgreSQL lock connection open as %r", replica_name())
        return self._connection

    def _lost(self, connection: Any) -> None:
        """The lock connection closed without us closing it: its locks are gone."""
        if connection is not self._connection:
            return  # an old connection, already handled
        self._connection = None
        lost, self._held = sorted(self._held), set()
        if lost:
            log.error(
                "LOST the PostgreSQL lock connection: the locks of %d workspace(s) are released; closing them so "
                "they are not written unprotected (they reopen under a new lock at their next call)",
                len(lost),
            )
            self._on_lost(lost)


def _replica_busy(holder: dict[str, Any]) -> RagError:
    who = describe_holder(holder) if holder else "another server connected to the same database"
    return RagError(
        ErrorCode.WORKSPACE_BUSY,
        f"This knowledge base is in use by another replica ({who}); one replica at a time serves a knowledge base.",
        suggested_action=_STICKY_ROUTING,
        details={"held_by": holder},
    )


async def connect_for_locks() -> Any:
    """The dedicated lock connection, to the database LightRAG's pool uses, with the same settings."""
    import asyncpg
    from lightrag.kg.postgres_impl import ClientManager  # deferred: it imports the asyncpg driver

    config = ClientManager.get_config()
    return await asyncpg.connect(
        host=config["host"],
        port=int(config["port"]),
        user=config["user"],
        password=config["password"],
        database=config["database"],
        ssl=_ssl_option(config),
        timeout=CONNECT_TIMEOUT_S,
        server_settings={"application_name": replica_name()},
    )


def _ssl_option(config: dict[str, Any]) -> Any:
    """asyncpg's `ssl` for POSTGRES_SSL_MODE, as LightRAG's pool sets it."""
    mode = str(config.get("ssl_mode") or "").lower()
    if mode in {"verify-ca", "verify-full"}:
        from lightrag.kg.postgres_impl import PostgreSQLDB

        return PostgreSQLDB(config)._create_ssl_context()  # LightRAG's own rules (root cert, client cert, CRL)
    return {"require": True, "prefer": True, "disable": False}.get(mode)


@dataclass
class WorkspaceLocks:
    """What an open workspace holds: its directory's file lock and, on PostgreSQL, its advisory lock."""

    workspace: str
    file: FileLock
    advisory: AdvisoryLocks | None = None

    def wanted(self, idle_since: float) -> bool:
        """Should a workspace last used at `idle_since` (monotonic) be let go for another process?"""
        return time.monotonic() - idle_since >= WANTED_IDLE_SECONDS and self.file.wanted()

    async def release(self) -> None:
        try:
            if self.advisory is not None:
                await self.advisory.release(self.workspace)
        finally:
            self.file.release()
