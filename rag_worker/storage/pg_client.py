"""LightRAG's process-wide PostgreSQL client (`postgres_impl.PostgreSQLDB`), as this project runs it:
one repair of LightRAG 1.5.7, a lighter hand-back of the embedded engine's connections, the
drop of its pool after the embedded engine restarted, and quiet table probes while a knowledge
base is first created.

The repair: a reconnect that fails once deadlocks the client for good.  `_ensure_pool` holds
`_pool_reconnect_lock` while `initdb` runs; `initdb` retries a refused connection, and its retry's
`before_sleep` hook (`_reset_pool`) takes that same lock — `asyncio.Lock` is not re-entrant, so the
task waits for itself, and every later storage call of the process waits behind it.  It happened
whenever the server was down for longer than one connection attempt (the embedded engine killed
while documents indexed: they stayed "processing" until the worker restarted).  The lock is made
re-entrant for the task that holds it; other tasks still wait as LightRAG meant.

The lighter hand-back: LightRAG's pool runs asyncpg's reset query (`pg_advisory_unlock_all(); CLOSE
ALL; UNLISTEN *; RESET ALL`) every time a connection goes back to the pool, i.e. after every
statement: a second round trip and a second statement in the engine per query (2 % of the worker's
py-spy samples while indexing on the engine, about as many as the queries' own execution).  It
clears session state a checkout may leave: session advisory locks, cursors, LISTENs, `SET`s.  On
the embedded engine nothing leaves any: its storages are the four of `ENGINE_STORAGES` (no Apache
AGE `search_path`; an HNSW index, not VCHORDRQ's session settings), LightRAG's advisory locks are
transaction-scoped, and our session advisory locks live on a connection of their own (`locks.py`).
So the engine's pools skip that query; asyncpg still rolls back a transaction left open and drops
listeners (`Connection._reset`).  A server configured explicitly keeps LightRAG's full reset.

Nothing here imports LightRAG or asyncpg at module level: a worker on the local files never loads them.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from config.backends import BY_CLASS

log = logging.getLogger("rag_worker.storage.pg_client")

_REPAIRED = "_lightrag_mcp_reentrant_reconnect"
_OPENING: ContextVar[bool] = ContextVar("lightrag_mcp_opening", default=False)
#: What LightRAG 1.5.7 logs at ERROR when it probes one of its tables before creating it.
_MISSING_TABLE = re.compile(r'PostgreSQL database, error:relation "lightrag_\w+" does not exist')
#: The embedded engines' socket directories (`POSTGRES_HOST`) in this process.
_ENGINE_HOSTS: set[str] = set()


class TaskReentrantLock:
    """An `asyncio.Lock` the task that holds it may enter again (released when its last exit runs)."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._depth = 0

    def locked(self) -> bool:
        return self._lock.locked()

    async def __aenter__(self) -> None:
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            self._depth += 1
            return
        await self._lock.acquire()
        self._owner, self._depth = task, 1

    async def __aexit__(self, *exc_info: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()


def uses_postgres_client(storage_classes: dict[str, Any]) -> bool:
    """Do these LightRAG constructor arguments (`kv_storage=...`) name a PostgreSQL storage?"""
    classes = [value for key, value in storage_classes.items() if key.endswith("_storage") and isinstance(value, str)]
    return any(name in BY_CLASS and BY_CLASS[name][0].name == "postgres" for name in classes)


def repair_reconnect() -> None:
    """Make every PostgreSQLDB's reconnect lock re-entrant (idempotent; see the module's docstring)."""
    from lightrag.kg.postgres_impl import PostgreSQLDB  # deferred: it imports the asyncpg driver

    if getattr(PostgreSQLDB, _REPAIRED, False):
        return
    original_init = PostgreSQLDB.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._pool_reconnect_lock = TaskReentrantLock()

    PostgreSQLDB.__init__ = __init__
    PostgreSQLDB.initdb = _lighter_release(PostgreSQLDB.initdb)
    setattr(PostgreSQLDB, _REPAIRED, True)
    db = _shared_client()
    if db is not None:  # built before the repair (a test's, a script's): it gets the lock too
        db._pool_reconnect_lock = TaskReentrantLock()


def engine_host(host: str) -> None:
    """Name the embedded engine's socket directory: pools to it skip the reset query (module docstring)."""
    _ENGINE_HOSTS.add(host)


def _lighter_release(initdb: Any) -> Any:
    """Every pool LightRAG builds (first use, and each reconnect) goes through `initdb`."""

    async def lighter_initdb(self: Any) -> Any:
        result = await initdb(self)
        if self.pool is not None and str(self.host) in _ENGINE_HOSTS:
            self.pool._reset = _nothing_more
        return result

    return lighter_initdb


async def _nothing_more(connection: Any) -> None:
    """The pool's reset callback after asyncpg's own `_reset` (rollback, listeners): nothing else."""


def drop_pool() -> None:
    """After the engine restarted, LightRAG's connection pool may hold connections wedged
    mid-operation by the crash ("another operation is in progress"), which are never released:
    every later call would wait for one forever.  Terminate that pool (its holders fail and let
    go); LightRAG builds a new one on the next call."""
    if close_pool():
        log.info("LightRAG's connections to the dead engine were dropped; the next call reconnects")


def close_pool() -> bool:
    """Terminate LightRAG's connection pool, if there is one (also at a worker's shutdown, before
    the engine may stop: a pool left open retried its connection floor against the stopping
    engine and logged a traceback).  True when there was one."""
    db = _shared_client()
    if db is None:
        return False
    pool, db.pool = getattr(db, "pool", None), None
    # A reconnect that is still retrying the dead server holds the reconnect lock for its whole
    # backoff (seconds): new calls must not queue behind it.
    db._pool_reconnect_lock = TaskReentrantLock()
    if pool is not None:
        pool.terminate()
    return pool is not None


def _shared_client() -> Any:
    from lightrag.kg.postgres_impl import ClientManager  # deferred: it imports the asyncpg driver

    return ClientManager._instances.get("db")


class _TableProbeFilter(logging.Filter):
    """Drops LightRAG's "relation ... does not exist" errors logged while a knowledge base opens:
    on a new engine or database it probes each of its tables before creating it, and an operator
    read eight ERROR lines at every new user's first call.  The same error outside an opening is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_OPENING.get() and _MISSING_TABLE.search(record.getMessage()))


_PROBE_FILTER = _TableProbeFilter()


@contextmanager
def quiet_table_probes() -> Iterator[None]:
    """Inside: LightRAG's probes of tables it is about to create are not logged (tasks started
    inside inherit it)."""
    lightrag_log = logging.getLogger("lightrag")
    if _PROBE_FILTER not in lightrag_log.filters:
        lightrag_log.addFilter(_PROBE_FILTER)
    token = _OPENING.set(True)
    try:
        yield
    finally:
        _OPENING.reset(token)
