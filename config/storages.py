"""Which storages hold the knowledge bases: LightRAG's own variable names, checked at start-up.

`resolve_storages` turns the settings into a `StorageSet` (the four LightRAG storage
classes) and raises `ConfigError` with one line naming the variable when something is
wrong: an unknown class, a class of the wrong kind, a missing connection variable, a
driver that is not installed (LightRAG would try to pip-install it at run time), or a
`*_WORKSPACE` override that would put every user into one workspace.

`probe_servers` checks that each configured server accepts a TCP connection, so a server
that is down is reported before serving (or, with LIGHTRAG_MCP_STORAGE_FALLBACK, the
server runs on local storages for knowledge bases that are not already on the server).

Nothing here imports LightRAG or a driver: the front runs these checks.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from config.settings import ConfigError, Settings

KINDS = ("kv", "vector", "graph", "doc_status")
VARIABLES = {
    "kv": "LIGHTRAG_KV_STORAGE",
    "vector": "LIGHTRAG_VECTOR_STORAGE",
    "graph": "LIGHTRAG_GRAPH_STORAGE",
    "doc_status": "LIGHTRAG_DOC_STATUS_STORAGE",
}
LOCAL = {"kv": "JsonKVStorage", "vector": "NanoVectorDBStorage", "graph": "NetworkXStorage", "doc_status": "JsonDocStatusStorage"}


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per family
class Backend:
    """A storage server family: its classes, connection variables, driver and extra."""

    name: str
    classes: Mapping[str, tuple[str, ...]]  # kind → class names
    required: tuple[str, ...]
    driver: str | None  # importable module the LightRAG implementation needs
    extra: str | None  # pip extra of this project that installs it
    workspace_variable: str | None  # LightRAG's override that forces one workspace


BACKENDS: tuple[Backend, ...] = (
    Backend("local", {k: (v,) for k, v in LOCAL.items()}, (), None, None, None),
    Backend("faiss", {"vector": ("FaissVectorDBStorage",)}, (), "faiss", None, None),
    Backend(
        "postgres",
        {
            "kv": ("PGKVStorage",),
            "vector": ("PGVectorStorage",),
            "graph": ("PGTableGraphStorage", "PGGraphStorage"),
            "doc_status": ("PGDocStatusStorage",),
        },
        ("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DATABASE"),
        "asyncpg",
        "postgres",
        "POSTGRES_WORKSPACE",
    ),
    Backend(
        "redis",
        {"kv": ("RedisKVStorage",), "doc_status": ("RedisDocStatusStorage",)},
        ("REDIS_URI",),
        "redis",
        "redis",
        "REDIS_WORKSPACE",
    ),
    Backend("milvus", {"vector": ("MilvusVectorDBStorage",)}, ("MILVUS_URI",), "pymilvus", "milvus", "MILVUS_WORKSPACE"),
    Backend(
        "neo4j",
        {"graph": ("Neo4JStorage",)},
        ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD"),
        "neo4j",
        None,
        "NEO4J_WORKSPACE",
    ),
    Backend("qdrant", {"vector": ("QdrantVectorDBStorage",)}, ("QDRANT_URL",), "qdrant_client", None, "QDRANT_WORKSPACE"),
    Backend(
        "mongo",
        {
            "kv": ("MongoKVStorage",),
            "vector": ("MongoVectorDBStorage",),
            "graph": ("MongoGraphStorage",),
            "doc_status": ("MongoDocStatusStorage",),
        },
        ("MONGO_URI", "MONGO_DATABASE"),
        "pymongo",
        None,
        "MONGODB_WORKSPACE",
    ),
)
_BY_CLASS = {cls: (backend, kind) for backend in BACKENDS for kind, names in backend.classes.items() for cls in names}


@dataclass(frozen=True)
class StorageSet:
    """The four storage classes a knowledge base lives in."""

    kv: str
    vector: str
    graph: str
    doc_status: str

    def as_kwargs(self) -> dict[str, str]:
        """LightRAG's constructor arguments."""
        return {"kv_storage": self.kv, "vector_storage": self.vector, "graph_storage": self.graph, "doc_status_storage": self.doc_status}

    def as_dict(self) -> dict[str, str]:
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def backends(self) -> list[Backend]:
        return list(dict.fromkeys(_BY_CLASS[getattr(self, kind)][0] for kind in KINDS))

    @property
    def is_local(self) -> bool:
        return all(backend.name in {"local", "faiss"} for backend in self.backends)

    def describe(self) -> str:
        return ", ".join(f"{kind}={getattr(self, kind)}" for kind in KINDS)


LOCAL_STORAGES = StorageSet(**LOCAL)

# LightRAG's PostgreSQL client retries a lost connection for minutes (10 tries, backoff 3 s → 30 s):
# right for a batch job, wrong for a chat call.  Unless the administrator sets them, a call
# gives up after ~4 s and answers STORAGE_ERROR; the next call tries again.
INTERACTIVE_DRIVER_DEFAULTS = {
    "POSTGRES_CONNECTION_RETRIES": "3",
    "POSTGRES_CONNECTION_RETRY_BACKOFF": "0.5",
    "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "2",
}


def _value(settings: Settings, environ: Mapping[str, str], name: str) -> str:
    try:
        return str(getattr(settings, name.lower()) or "").strip()
    except AttributeError:
        return str(environ.get(name, "")).strip()


def resolve_storages(settings: Settings, environ: Mapping[str, str] | None = None) -> StorageSet:
    """The configured storages, or ConfigError naming the first wrong variable."""
    env = os.environ if environ is None else environ
    chosen: dict[str, str] = {}
    for kind in KINDS:
        variable = VARIABLES[kind]
        name = _value(settings, env, variable) or LOCAL[kind]
        found = _BY_CLASS.get(name)
        if found is None or found[1] != kind:
            allowed = sorted(cls for cls, (_, k) in _BY_CLASS.items() if k == kind)
            what = "is not a storage class LightRAG has" if found is None else f"is a {found[1]} storage, not a {kind} one"
            raise ConfigError(f"{variable}={name!r} {what}; use one of: {', '.join(allowed)}")
        chosen[kind] = name
    storages = StorageSet(**chosen)
    for backend in storages.backends:
        missing = [name for name in backend.required if not _value(settings, env, name)]
        if missing:
            users = ", ".join(VARIABLES[k] for k in KINDS if _BY_CLASS[chosen[k]][0] is backend)
            raise ConfigError(f"{', '.join(missing)} must be set for {users} ({backend.name})")
        if backend.workspace_variable and _value(settings, env, backend.workspace_variable):
            raise ConfigError(
                f"{backend.workspace_variable} must not be set: it would put every user into one workspace "
                "(lightrag-mcp gives each user their own)"
            )
        if backend.driver and importlib.util.find_spec(backend.driver) is None:
            install = f"pip install 'lightrag-mcp[{backend.extra}]'" if backend.extra else f"pip install {backend.driver}"
            raise ConfigError(f"{backend.name} storage needs the '{backend.driver}' package: {install}")
    return storages


@dataclass(frozen=True)
class ServerAddress:
    backend: str
    host: str
    port: int
    variables: str  # where the address came from, for messages


def server_addresses(storages: StorageSet, settings: Settings, environ: Mapping[str, str] | None = None) -> list[ServerAddress]:
    """Host and port of each storage server the configuration uses (no secrets)."""
    env = os.environ if environ is None else environ
    addresses = []
    for backend in storages.backends:
        if backend.name == "postgres":
            host = _value(settings, env, "POSTGRES_HOST") or "localhost"
            port = int(_value(settings, env, "POSTGRES_PORT") or 5432)
            addresses.append(ServerAddress("postgres", host, port, "POSTGRES_HOST/POSTGRES_PORT"))
        elif backend.name in {"redis", "milvus", "neo4j", "qdrant", "mongo"}:
            variable = backend.required[0]
            parsed = urlsplit(_value(settings, env, variable))
            if parsed.hostname and not parsed.hostname.startswith("/") and parsed.scheme not in {"file", "unix"}:
                default = {"redis": 6379, "milvus": 19530, "neo4j": 7687, "qdrant": 6333, "mongo": 27017}[backend.name]
                try:
                    port = parsed.port or default
                except ValueError:
                    raise ConfigError(f"{variable} has an invalid port") from None
                addresses.append(ServerAddress(backend.name, parsed.hostname, port, variable))
    return addresses


def probe_servers(addresses: list[ServerAddress], timeout: float = 3.0) -> list[str]:
    """One line per server that refuses a TCP connection (empty when all answer)."""
    problems = []
    for address in addresses:
        try:
            with socket.create_connection((address.host, address.port), timeout=timeout):
                pass
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            problems.append(f"{address.backend} at {address.host}:{address.port} ({address.variables}) is not reachable: {reason}")
    return problems


def storage_summary(storages: StorageSet) -> dict[str, Any]:
    """For health: classes and backends, no connection details."""
    return {"storages": storages.as_dict(), "backends": [b.name for b in storages.backends], "local": storages.is_local}
