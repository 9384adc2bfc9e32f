"""Fixtures of the backend suite: each real storage server starts once per test session on a
free 127.0.0.1 port in a temporary directory and stops at the end (also after failures), and
each test gets a configuration of its own on it (a fresh PostgreSQL database, Redis DB index
and Milvus database), so tests never see each other's data.

A server that cannot be installed or started FAILS the tests that need it with the reason:
CI must not pass without testing the backends.  LIGHTRAG_MCP_SKIP_BACKENDS=1 skips them
explicitly instead (the embedded engine and the local files still run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from tests.backends.servers import (
    SKIP_ENV,
    BackendUnavailable,
    MilvusServer,
    PostgresServer,
    RedisServer,
    redis_milvus_env,
    skip_requested,
)
from tests.engine_rows import engine_psql

#: engine: the default (the embedded PostgreSQL the server starts itself); files: LightRAG's local
#: JSON, NanoVectorDB and GraphML files, still selectable and still serving older knowledge bases.
BACKENDS = ["engine", "files", "postgres", "redis_milvus"]


class Server(Protocol):
    def close(self) -> None: ...


S = TypeVar("S", bound=Server)


def running(what: str, factory: Callable[[], S]) -> Iterator[S]:
    """A fixture's server: started (or the test fails with the reason, or is skipped when
    asked), yielded, and closed afterwards, also after a failure."""
    if skip_requested():
        pytest.skip(f"{SKIP_ENV} is set: the {what} backend tests are skipped")
    server: S | None = None
    try:
        server = factory()
    except BackendUnavailable as exc:
        reason = str(exc)
    if server is None:  # outside the except block: the reason once, without the exception chain
        pytest.fail(
            f"The {what} server for the backend tests is not available: {reason}\n"
            f"Set {SKIP_ENV}=1 to skip the backend tests on a machine that cannot install it.",
            pytrace=False,
        )
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    yield from running("PostgreSQL 15 + pgvector", PostgresServer)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    yield from running("Redis", RedisServer)


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[MilvusServer]:
    yield from running("milvus-lite", MilvusServer)


@pytest.fixture
def private_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the test's own (the outage test stops and restarts it)."""
    yield from running("PostgreSQL 15 + pgvector", PostgresServer)


@dataclass
class Backend:
    """One storage configuration for the server under test, and a look into its store."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    postgres: PostgresServer | None = None
    redis: RedisServer | None = None
    milvus: MilvusServer | None = None

    @property
    def in_postgres(self) -> bool:
        """LightRAG's PostgreSQL storages: the embedded engine's or a server's."""
        return self.name == "engine" or self.postgres is not None

    def stored(self, data_dir: Path) -> dict[str, int]:
        """What the storage server itself holds for this configuration (proof that the data
        went there, not into local files): row, key or vector counts; {} on the local files."""
        if self.postgres is not None:
            server, database = self.postgres, self.env["POSTGRES_DATABASE"]
            return postgres_counts(lambda sql: server.psql(database, sql))
        if self.name == "engine":
            return postgres_counts(lambda sql: engine_psql(data_dir, sql))
        if self.redis is not None and self.milvus is not None:
            return {
                "redis_keys": redis_keys(self.redis, int(self.env["REDIS_URI"].rsplit("/", 1)[1])),
                "milvus_vectors": self.milvus.rows(self.env["MILVUS_DB_NAME"]),
            }
        return {}


def postgres_counts(psql: Callable[[str], str]) -> dict[str, int]:
    tables = psql("SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'lightrag_%'").split()
    counts: dict[str, int] = {}
    for prefix, key in (
        ("lightrag_doc_status", "doc_status"),
        ("lightrag_doc_chunks", "chunks"),
        ("lightrag_vdb_chunks", "chunk_vectors"),
        ("lightrag_vdb_entity", "entity_vectors"),
        ("lightrag_graph_nodes", "graph_nodes"),
    ):
        counts[key] = sum(
            int(psql(f"SELECT count(*) FROM {table}").strip())
            for table in tables
            if table == prefix or table.startswith(prefix + "_")
        )
    return counts


def redis_keys(server: RedisServer, database: int) -> int:
    import redis

    client = redis.Redis(host="127.0.0.1", port=server.port, db=database)
    try:
        return int(client.dbsize())  # type: ignore[arg-type]
    finally:
        client.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that asks for `backend` runs once per storage configuration."""
    name = request.param
    if name == "engine":
        return Backend(name)  # the default: no variable
    if name == "files":
        return Backend(name, {"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"})
    if name == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        return Backend(name, server.env(server.new_database()), postgres=server)
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    milvus_server: MilvusServer = request.getfixturevalue("milvus_server")
    return Backend(name, redis_milvus_env(redis_server, milvus_server), redis=redis_server, milvus=milvus_server)
