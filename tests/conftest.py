"""Shared fixtures: the anyio backend, and the environment a real client starts us with."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable  # the project's venv interpreter when run via `make test`


# The longest suites first, the many short unit tests last.  `make test` hands whole files to two
# processes (xdist --dist loadfile --no-loadscope-reorder) in this order: dealt by number of tests,
# the soak (one test, 7.5 min) came last and ran alone while the other process sat idle.
SUITE_ORDER = ("reliability", "backends", "integration", "unit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def suite_rank(item: pytest.Item) -> int:
        suite = item.path.parent.name
        return SUITE_ORDER.index(suite) if suite in SUITE_ORDER else len(SUITE_ORDER)

    items.sort(key=suite_rank)  # stable: each file's tests keep their order


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def engines_a_test_started_are_stopped(request: pytest.FixtureRequest) -> Iterator[None]:
    """An embedded engine outlives a killed worker by design (the next one reuses it), and one a
    failed test started has no last user to stop it: whatever engine still runs in the test's
    own temporary directory when the test ends is stopped (it left 4 running in one CI run)."""
    own = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if own is None:
        return
    from rag_worker.storage.embedded_engine import stop_engine

    for pid_file in own.rglob("postmaster.pid"):
        stop_engine(pid_file.parent)


@pytest.fixture(autouse=True, scope="session")
def no_engine_outlives_the_suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The per-test sweep above runs when a test ends; an engine started after that (seen under
    load in full CI runs, from 3 tests whose workers were still shutting down) is stopped here,
    and named in the run's output, with the test directory it was in."""
    yield
    from rag_worker.storage.embedded_engine import stop_engine

    base = tmp_path_factory.getbasetemp()
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    for pid_file in base.rglob("postmaster.pid"):
        if stop_engine(pid_file.parent) and capture and reporter:
            with capture.global_and_fixture_disabled():  # shown, even in a quiet run
                reporter.write_line(f"stopped an engine left running in {pid_file.parent.relative_to(base)}")


@pytest.fixture(autouse=True)
def lightrags_postgres_client_is_per_test() -> Iterator[None]:
    """LightRAG keeps one PostgreSQL client per process (`ClientManager`), bound to the event loop
    and the server it first met.  A worker has one loop and one engine; a test process runs each
    test in a loop of its own, often on an engine of its own.  A client one test left behind (a
    LightRAG not finalized, or one that failed half-way) served the next tests a pool on a closed
    loop and a deleted socket ("Event loop is closed").  It is forgotten after every test."""
    yield
    postgres = sys.modules.get("lightrag.kg.postgres_impl")
    if postgres is None:
        return
    from rag_worker.storage.pg_client import close_pool

    with contextlib.suppress(Exception):  # its loop may be closed already
        close_pool()
    manager = postgres.ClientManager
    manager._instances.update(db=None, ref_count=0, vector_signature=None)
    manager._lock = asyncio.Lock()


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """Only what LibreChat passes to a stdio server (HOME, PATH, SHELL, TERM) plus `extra`."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SHELL": "/bin/sh",
        "TERM": "dumb",
        # Fast supervision in tests; each test overrides what it exercises.
        # Shared 2-core machines stall processes for a second at times: keep the production
        # ping timeout; the supervision tests shorten it where they exercise it.
        "LIGHTRAG_MCP_PING_INTERVAL": "1",
        "LIGHTRAG_MCP_PING_TIMEOUT": "3",
        "LIGHTRAG_MCP_BACKOFF_INITIAL": "0.1",
        "LIGHTRAG_MCP_BACKOFF_MAX": "1",
    }
    env.update(extra)
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME: the server's default data directory lands inside it."""
    path = tmp_path / "home"
    path.mkdir()
    return path
