"""The real storage servers of the backend tests and benchmark: install what is missing, then
start and stop PostgreSQL 15 + pgvector, Redis and milvus-lite's server on 127.0.0.1.

Installation is for a fresh Debian 12 machine run as root with network access to apt and PyPI
only (CI): PostgreSQL 15 and Redis from bookworm's packages, pgvector built from Debian trixie's
*source* package (bookworm has no pgvector for PostgreSQL 15) through a private apt source list
that never touches the system's apt configuration, and the Python drivers from PyPI.  Each step
runs under one file lock (parallel test sessions wait for each other) and is skipped when its
result is already there, so a warm machine pays a few stat calls.

Every server listens on 127.0.0.1 on a free port, keeps its data in a private temporary
directory, and is a child of this process that gets SIGTERM if this process dies, so an
interrupted test session leaves no server behind.  `stop()` and `close()` end them cleanly.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.util
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("tests.backends")

SKIP_ENV = "LIGHTRAG_MCP_SKIP_BACKENDS"
CACHE_DIR = Path(os.environ.get("LIGHTRAG_MCP_BACKENDS_CACHE") or Path.home() / ".cache" / "lightrag-mcp-backends")
PG_MAJOR = "15"
PG_BIN = Path(f"/usr/lib/postgresql/{PG_MAJOR}/bin")
PG_PACKAGES = [f"postgresql-{PG_MAJOR}", f"postgresql-server-dev-{PG_MAJOR}", "dpkg-dev", "make", "gcc"]
REDIS_PACKAGES = ["redis-server"]
# Python module → PyPI distribution the backends need in this interpreter's environment.
PY_DRIVERS = {
    "asyncpg": "asyncpg",
    "pgvector": "pgvector",
    "redis": "redis",
    "pymilvus": "pymilvus",
    "milvus_lite": "milvus-lite",
}
APT_TIMEOUT = 1200.0
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PR_SET_PDEATHSIG = 1


class BackendUnavailable(RuntimeError):
    """A storage server could not be installed or started; the message says why and what to do."""


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "").strip().lower() in {"1", "true", "yes"}


# --- running commands ----------------------------------------------------------------------


def run(
    command: list[str],
    *,
    what: str,
    timeout: float = 300,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    as_user: str | None = None,
) -> str:
    """Run `command`; on failure raise BackendUnavailable naming `what` with the output's tail."""
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            **_user_kwargs(as_user),
        )
    except FileNotFoundError as exc:
        raise BackendUnavailable(f"{what}: {command[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise BackendUnavailable(f"{what}: `{' '.join(command[:3])} …` did not finish within {timeout:.0f} s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise BackendUnavailable(f"{what} failed (exit {done.returncode}): `{' '.join(command)}`\n{tail}")
    return done.stdout


def _user_kwargs(user: str | None) -> dict[str, Any]:
    """subprocess arguments that run a child as `user` (only when we are root and it differs)."""
    if user is None or os.geteuid() != 0 or user == "root":
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _die_with_parent() -> None:
    """In a child between fork and exec: get SIGTERM when the process that started us dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float, what: str, alive: Callable[[], bool], log_path: Path) -> None:
    """Poll `check` until it is true; on failure the error carries the server log's tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not alive():
            raise BackendUnavailable(f"{what}: the process exited during start-up\n{_tail(log_path)}")
        time.sleep(0.1)
    raise BackendUnavailable(f"{what}: not ready within {timeout:.0f} s\n{_tail(log_path)}")


def _tail(path: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


# --- installation ----------------------------------------------------------------------------


@contextlib.contextmanager
def install_lock() -> Iterator[None]:
    """One installer at a time across processes (parallel test sessions, benchmark runs)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / "install.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _apt_env() -> dict[str, str]:
    return {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}


def _package_installed(package: str) -> bool:
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip().endswith(" installed")


_apt_updated = False


def apt_install(packages: list[str], why: str) -> None:
    """`apt-get install -y` the packages of `packages` that are not installed yet."""
    global _apt_updated
    missing = [package for package in packages if not _package_installed(package)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BackendUnavailable(
            f"{why}: {' '.join(missing)} must be installed, which needs root "
            f"(run: sudo apt-get install -y {' '.join(missing)}), or set {SKIP_ENV}=1 to skip the backend tests"
        )
    started = time.monotonic()
    wait_for_dpkg = ["-o", "DPkg::Lock::Timeout=600"]
    if not _apt_updated:
        run(["apt-get", *wait_for_dpkg, "update"], what="apt-get update", timeout=APT_TIMEOUT, env=_apt_env())
        _apt_updated = True
    run(
        ["apt-get", *wait_for_dpkg, "install", "-y", *missing],
        what=f"apt-get install {' '.join(missing)}",
        timeout=APT_TIMEOUT,
        env=_apt_env(),
    )
    log.warning("installed %s in %.1f s", " ".join(missing), time.monotonic() - started)


def debian_mirror() -> str:
    """The Debian mirror the system already uses (deb822 or one-line sources), else deb.debian.org."""
    candidates: list[str] = []
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if path.suffix not in {".list", ".sources"}:
            continue
        with contextlib.suppress(OSError):
            text = path.read_text(errors="replace")
            candidates += re.findall(r"^\s*URIs:\s*(\S+)", text, flags=re.MULTILINE)
            candidates += re.findall(r"^\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)", text, flags=re.MULTILINE)
    for uri in candidates:
        if uri.startswith(("http://", "https://")) and uri.rstrip("/").endswith("/debian"):
            return uri.rstrip("/")
    return DEFAULT_MIRROR


def pg_config(option: str) -> Path:
    return Path(run([str(PG_BIN / "pg_config"), option], what="pg_config").strip())


def pgvector_installed() -> bool:
    try:
        return (pg_config("--sharedir") / "extension" / "vector.control").exists() and (
            pg_config("--pkglibdir") / "vector.so"
        ).exists()
    except BackendUnavailable:
        return False


def build_pgvector() -> float:
    """Build and install pgvector from Debian trixie's source package; returns the seconds spent."""
    started = time.monotonic()
    apt_install(PG_PACKAGES, "building pgvector")  # the server headers, dpkg-source, make, gcc
    apt_dir = CACHE_DIR / "apt"
    lists = apt_dir / "lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    (apt_dir / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    source_list = apt_dir / "sources.list"
    source_list.write_text(f"deb-src {debian_mirror()} trixie main\n")
    # A private apt view: only our source list, our own lists and caches; the system's
    # sources, lists and caches are neither read for sources nor written.
    private = [
        "-o", f"Dir::Etc::sourcelist={source_list}",
        "-o", "Dir::Etc::sourceparts=/nonexistent",
        "-o", f"Dir::State::Lists={lists}",
        "-o", f"Dir::Cache={apt_dir / 'cache'}",
        "-o", "APT::Sandbox::User=root",  # the _apt user cannot enter root's home
    ]  # fmt: skip
    updated = run(
        ["apt-get", *private, "update"], what="apt-get update (trixie sources)", timeout=APT_TIMEOUT, env=_apt_env()
    )
    if not any(lists.glob("*trixie*Sources*")):  # apt-get update exits 0 when a fetch fails
        tail = "\n".join(updated.strip().splitlines()[-10:])
        raise BackendUnavailable(f"apt-get update could not fetch Debian trixie's source index (network?)\n{tail}")
    work = CACHE_DIR / "pgvector"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    run(
        ["apt-get", *private, "source", "--download-only", "pgvector"],
        what="apt-get source pgvector",
        timeout=APT_TIMEOUT,
        cwd=work,
        env=_apt_env(),
    )
    [dsc] = sorted(work.glob("pgvector_*.dsc"))
    run(["dpkg-source", "-x", dsc.name, "src"], what="dpkg-source -x pgvector", cwd=work, env=_apt_env())
    make = ["make", "-C", str(work / "src"), f"PG_CONFIG={PG_BIN / 'pg_config'}", "with_llvm=no"]
    jobs = f"-j{os.cpu_count() or 1}"
    run([*make, jobs], what="building pgvector", timeout=900)
    run([*make, "install"], what="installing pgvector", timeout=300)
    if not pgvector_installed():
        raise BackendUnavailable("pgvector was built and installed but PostgreSQL 15 does not see vector.control")
    return time.monotonic() - started


def ensure_python_drivers() -> None:
    missing = [dist for module, dist in PY_DRIVERS.items() if importlib.util.find_spec(module) is None]
    if missing:
        run(
            [sys.executable, "-m", "pip", "install", "--quiet", *missing],
            what=f"pip install {' '.join(missing)}",
            timeout=APT_TIMEOUT,
        )
        importlib.invalidate_caches()


@dataclass
class InstallReport:
    seconds: dict[str, float] = field(default_factory=dict)


INSTALL_REPORT = InstallReport()
_installed: dict[str, Exception | None] = {}


def _once(kind: str, install: Callable[[], None]) -> None:
    """Run `install` once per process; a failure is remembered and raised again for each caller."""
    if kind not in _installed:
        started = time.monotonic()
        try:
            with install_lock():
                install()
            _installed[kind] = None
        except Exception as exc:  # remembered, raised below for every caller
            _installed[kind] = exc
        INSTALL_REPORT.seconds[kind] = round(time.monotonic() - started, 2)
    failure = _installed[kind]
    if failure is not None:
        raise BackendUnavailable(f"installing {kind} failed: {failure}") from failure


def ensure_postgres() -> None:
    def install() -> None:
        if not (PG_BIN / "pg_ctl").exists() or not (PG_BIN / "postgres").exists():
            apt_install(PG_PACKAGES, "PostgreSQL 15")
        if not pgvector_installed():
            INSTALL_REPORT.seconds["pgvector build"] = round(build_pgvector(), 2)
        ensure_python_drivers()

    _once("postgresql", install)


def ensure_redis() -> None:
    def install() -> None:
        if redis_binary() is None:
            apt_install(REDIS_PACKAGES, "Redis")
        ensure_python_drivers()

    _once("redis", install)


def ensure_milvus() -> None:
    _once("milvus-lite", ensure_python_drivers)


def redis_binary() -> str | None:
    return shutil.which("redis-server") or next(
        (str(path) for path in [Path("/usr/bin/redis-server")] if path.exists()), None
    )


def milvus_binary() -> str:
    beside = Path(sys.executable).parent / "milvus-lite"
    found = str(beside) if beside.exists() else shutil.which("milvus-lite")
    if not found:
        raise BackendUnavailable("milvus-lite's command is missing after `pip install milvus-lite`")
    return found


# --- servers -------------------------------------------------------------------------------


class _Child:
    """A server process we started (foreground, dies with us), with its log file."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def spawn(self, command: list[str], log_path: Path, *, as_user: str | None = None, cwd: Path | None = None) -> None:
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in reap()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(cwd or "/")},
            preexec_fn=_die_with_parent,
            **_user_kwargs(as_user),
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def reap(self, timeout: float = 30) -> None:
        """Wait for the process to end (SIGTERM, then SIGKILL once `timeout` has passed)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(10)
            self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None


class PostgresServer:
    """PostgreSQL 15 with pgvector in a private data directory, listening on 127.0.0.1 only.

    The bootstrap superuser `postgres` can connect only through the Unix socket in the private
    directory; LightRAG connects over TCP as the password-authenticated owner of its database."""

    user = "lightrag"

    def __init__(self, *, durable: bool = False) -> None:
        ensure_postgres()
        self.port = free_port()
        self.password = secrets.token_hex(16)
        self.durable = durable
        self._owner = "postgres" if os.geteuid() == 0 else None
        self.root = Path(tempfile.mkdtemp(prefix="lightrag-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.socket_dir.mkdir()
        self.log_path = self.root / "postgres.log"
        if self._owner:
            entry = pwd.getpwnam(self._owner)
            for path in (self.root, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._child = _Child()
        self._databases = 0
        self.start_seconds: dict[str, float] = {}
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        started = time.monotonic()
        password_file = self.root / "superuser.pw"
        password_file.write_text(secrets.token_hex(16) + "\n")
        if self._owner:
            os.chown(password_file, pwd.getpwnam(self._owner).pw_uid, -1)
        run(
            [
                str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", f"--pwfile={password_file}",
                "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync",
            ],
            what="initdb",
            as_user=self._owner,
            timeout=120,
        )  # fmt: skip
        password_file.unlink()
        self.start_seconds["initdb"] = round(time.monotonic() - started, 2)
        self.start()
        self.psql("postgres", f"CREATE ROLE {self.user} LOGIN PASSWORD '{self.password}'")
        self.psql("postgres", "CREATE EXTENSION vector; DROP EXTENSION vector")  # pgvector loads

    def start(self) -> None:
        """Start the server (again) on the same port and data directory."""
        if self._child.alive():
            return
        started = time.monotonic()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "max_connections": "200",
            "fsync": "on" if self.durable else "off",
        }
        command = [str(PG_BIN / "postgres"), "-D", str(self.data)]
        for name, value in settings.items():
            command += ["-c", f"{name}={value}"]
        self._child.spawn(command, self.log_path, as_user=self._owner, cwd=self.root)
        ready = [str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"]
        wait_until(
            lambda: subprocess.run(ready, capture_output=True).returncode == 0,
            90,
            f"PostgreSQL on 127.0.0.1:{self.port}",
            self._child.alive,
            self.log_path,
        )
        self.start_seconds["start"] = round(time.monotonic() - started, 2)

    def stop(self, mode: str = "fast") -> None:
        """`pg_ctl stop -m <mode>` (the data directory stays for a later start())."""
        if not self._child.alive():
            self._child.reap()
            return
        with contextlib.suppress(BackendUnavailable):
            run(
                [str(PG_BIN / "pg_ctl"), "stop", "-D", str(self.data), "-m", mode, "-w", "-t", "60"],
                what="pg_ctl stop",
                as_user=self._owner,
                timeout=90,
            )
        self._child.reap()

    def close(self) -> None:
        self.stop("fast")
        shutil.rmtree(self.root, ignore_errors=True)

    def psql(self, database: str, sql: str) -> str:
        return run(
            [
                str(PG_BIN / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
                "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql,
            ],
            what=f"psql {sql.split()[0]}",
            as_user=self._owner,
            timeout=120,
        )  # fmt: skip

    def new_database(self, prefix: str = "lightrag") -> str:
        """A fresh database owned by the LightRAG user, with pgvector created in it."""
        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}"
        self.psql("postgres", f"CREATE DATABASE {name} OWNER {self.user}")
        self.psql(name, "CREATE EXTENSION vector")
        return name

    def env(self, database: str) -> dict[str, str]:
        """The server's environment for all four PostgreSQL storages on `database`."""
        return {
            "LIGHTRAG_KV_STORAGE": "PGKVStorage",
            "LIGHTRAG_VECTOR_STORAGE": "PGVectorStorage",
            "LIGHTRAG_GRAPH_STORAGE": "PGTableGraphStorage",
            "LIGHTRAG_DOC_STATUS_STORAGE": "PGDocStatusStorage",
            "POSTGRES_HOST": "127.0.0.1",
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            "POSTGRES_DATABASE": database,
        }


class RedisServer:
    """redis-server on 127.0.0.1 with no persistence; each user of it gets its own DB index."""

    DATABASES = 1024

    def __init__(self) -> None:
        ensure_redis()
        binary = redis_binary()
        if binary is None:
            raise BackendUnavailable("redis-server is missing after installing the redis-server package")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="lightrag-redis-"))
        self.log_path = self.root / "redis.log"
        self._child = _Child()
        self._next_db = 0
        started = time.monotonic()
        self._child.spawn(
            [
                binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
                "--dir", str(self.root), "--daemonize", "no", "--databases", str(self.DATABASES),
                "--protected-mode", "yes",
            ],
            self.log_path,
            cwd=self.root,
        )  # fmt: skip
        try:
            wait_until(self._pong, 30, f"Redis on 127.0.0.1:{self.port}", self._child.alive, self.log_path)
        except BaseException:
            self.close()
            raise
        self.start_seconds = round(time.monotonic() - started, 2)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def new_database(self) -> int:
        self._next_db += 1
        if self._next_db >= self.DATABASES:
            raise BackendUnavailable(f"more than {self.DATABASES - 1} Redis databases asked of one server")
        return self._next_db

    def uri(self, database: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    def close(self) -> None:
        self._child.reap()
        shutil.rmtree(self.root, ignore_errors=True)


MILVUS_ROWS = """
import sys
from pymilvus import MilvusClient
client = MilvusClient(uri=sys.argv[1], timeout=10)
total = 0
if sys.argv[2] in client.list_databases():
    client.use_database(sys.argv[2])
    for name in client.list_collections():
        total += int(client.get_collection_stats(name).get("row_count", 0))
client.close()
print(total)
"""


class MilvusServer:
    """milvus-lite's gRPC server on 127.0.0.1 (its default host is 0.0.0.0: always pass --host)."""

    def __init__(self) -> None:
        ensure_milvus()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="lightrag-milvus-"))
        self.log_path = self.root / "milvus.log"
        self._child = _Child()
        self._databases = 0
        started = time.monotonic()
        self._child.spawn(
            [
                milvus_binary(),
                "server",
                "--data-dir",
                str(self.root / "data"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            self.log_path,
            cwd=self.root,
        )
        try:
            wait_until(
                self._answers,
                60,
                f"milvus-lite on 127.0.0.1:{self.port}",
                self._child.alive,
                self.log_path,
            )
        except BaseException:
            self.close()
            raise

        self.start_seconds = round(time.monotonic() - started, 2)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
        except OSError:
            return False
        try:
            self.rows("default")
            return True
        except BackendUnavailable:
            return False

    def rows(self, database: str) -> int:
        """Vectors stored in `database` (all collections), 0 when it does not exist.

        Asked from a short-lived process: pymilvus keeps a process-wide gRPC channel alive
        with keepalive pings that milvus-lite's server answers with GOAWAY (too_many_pings)."""
        return int(
            run([sys.executable, "-c", MILVUS_ROWS, self.uri, database], what="counting Milvus rows", timeout=60)
        )

    def new_database(self, prefix: str = "lightrag") -> str:
        self._databases += 1
        return f"{prefix}_{os.getpid()}_{self._databases}"

    def close(self) -> None:
        self._child.reap()
        shutil.rmtree(self.root, ignore_errors=True)


def redis_milvus_env(redis: RedisServer, milvus: MilvusServer) -> dict[str, str]:
    """Redis KV and doc status, Milvus vectors, the NetworkX graph (local files) beside them."""
    return {
        "LIGHTRAG_KV_STORAGE": "RedisKVStorage",
        "LIGHTRAG_DOC_STATUS_STORAGE": "RedisDocStatusStorage",
        "LIGHTRAG_VECTOR_STORAGE": "MilvusVectorDBStorage",
        "LIGHTRAG_GRAPH_STORAGE": "NetworkXStorage",
        "REDIS_URI": redis.uri(redis.new_database()),
        "MILVUS_URI": milvus.uri,
        "MILVUS_DB_NAME": milvus.new_database(),
    }
