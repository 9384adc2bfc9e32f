"""Which storages hold the knowledge bases: LightRAG's own variable names, checked at start-up.

Everything a backend is comes from its row in `config.backends`; this module applies the
rows to the settings.

`resolve_storages` turns the settings into a `StorageSet` (the four LightRAG storage
classes) and raises `ConfigError` with one line naming the variable when something is
wrong: an unknown class, a class of the wrong kind, a missing connection variable, a
driver that is not installed (LightRAG would try to pip-install it at run time), or a
`*_WORKSPACE` override that would put every user into one workspace.

`probe_servers` checks that each configured server accepts a TCP connection, so a server
that is down is reported before serving (or, with LIGHTRAG_MCP_STORAGE_FALLBACK, the
server runs on local storages for knowledge bases that are not already on the server).
It lives here, beside the table, because both processes probe: the front at start-up
(mcp_front.startup) and the worker when it places knowledge bases and watches a slow call
(rag_worker.storage) — and the front never imports the worker.

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

from config.backends import BY_CLASS, KINDS, LOCAL, VARIABLES, Backend, ServerAddressSource, classes_of
from config.settings import ConfigError, Settings


@dataclass(frozen=True)
class StorageSet:
    """The four storage classes a knowledge base lives in."""

    kv: str
    vector: str
    graph: str
    doc_status: str
    #: On the embedded database engine the worker starts (WORKING_DIR/engine), not on a server
    #: someone configured: placement tells the two apart, so a later server configuration with
    #: the same classes never opens an engine knowledge base on the wrong server.
    embedded: bool = False

    def as_kwargs(self) -> dict[str, str]:
        """LightRAG's constructor arguments."""
        return {"kv_storage": self.kv, "vector_storage": self.vector, "graph_storage": self.graph, "doc_status_storage": self.doc_status}

    def as_dict(self) -> dict[str, str]:
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def backends(self) -> list[Backend]:
        return list(dict.fromkeys(BY_CLASS[getattr(self, kind)][0] for kind in KINDS))

    @property
    def is_local(self) -> bool:
        return all(backend.is_local for backend in self.backends)

    @property
    def needs_no_server(self) -> bool:
        """Local files or the embedded engine: nothing an administrator runs."""
        return self.embedded or self.is_local

    def describe(self) -> str:
        classes = ", ".join(f"{kind}={getattr(self, kind)}" for kind in KINDS)
        return f"the embedded database engine ({classes})" if self.embedded else classes


LOCAL_STORAGES = StorageSet(LOCAL["kv"], LOCAL["vector"], LOCAL["graph"], LOCAL["doc_status"])
#: LightRAG's PostgreSQL storages on the embedded engine (rag_worker.storage.embedded_engine).
ENGINE_STORAGES = StorageSet(
    kv="PGKVStorage", vector="PGVectorStorage", graph="PGTableGraphStorage", doc_status="PGDocStatusStorage", embedded=True
)
#: LIGHTRAG_MCP_DEFAULT_STORAGE's values.
DEFAULT_STORAGES = {"files": LOCAL_STORAGES, "engine": ENGINE_STORAGES}


def storages_explicit(settings: Settings, environ: Mapping[str, str] | None = None) -> bool:
    """Whether any LIGHTRAG_*_STORAGE variable is set (else LIGHTRAG_MCP_DEFAULT_STORAGE decides)."""
    env = os.environ if environ is None else environ
    return any(_value(settings, env, VARIABLES[kind]) for kind in KINDS)


def _value(settings: Settings, environ: Mapping[str, str], name: str) -> str:
    try:
        return str(getattr(settings, name.lower()) or "").strip()
    except AttributeError:
        return str(environ.get(name, "")).strip()


def resolve_storages(settings: Settings, environ: Mapping[str, str] | None = None) -> StorageSet:
    """The configured storages, or ConfigError naming the first wrong variable.

    With no LIGHTRAG_*_STORAGE set, LIGHTRAG_MCP_DEFAULT_STORAGE's choice: the local files or
    the embedded engine (which needs no connection variable: the worker starts it)."""
    env = os.environ if environ is None else environ
    if not storages_explicit(settings, env):
        return DEFAULT_STORAGES[str(settings.default_storage)]
    chosen: dict[str, str] = {}
    for kind in KINDS:
        variable = VARIABLES[kind]
        name = _value(settings, env, variable) or LOCAL[kind]
        found = BY_CLASS.get(name)
        if found is None or found[1] != kind:
            allowed = sorted(classes_of(kind))
            what = "is not a storage class LightRAG has" if found is None else f"is a {found[1]} storage, not a {kind} one"
            raise ConfigError(f"{variable}={name!r} {what}; use one of: {', '.join(allowed)}")
        chosen[kind] = name
    storages = StorageSet(chosen["kv"], chosen["vector"], chosen["graph"], chosen["doc_status"])
    for backend in storages.backends:
        missing = [name for name in backend.required if not _value(settings, env, name)]
        if missing:
            users = ", ".join(VARIABLES[k] for k in KINDS if BY_CLASS[chosen[k]][0] is backend)
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
    addresses: list[ServerAddress] = []
    if storages.embedded:
        return addresses  # the worker starts it; its socket is known once it runs
    for backend in storages.backends:
        if backend.address is not None:
            address = _address(backend.name, backend.address, settings, env)
            if address is not None:
                addresses.append(address)
    return addresses


def _address(backend: str, source: ServerAddressSource, settings: Settings, env: Mapping[str, str]) -> ServerAddress | None:
    """Where one backend's server is: host and port variables, or a URI (None: a socket path or a file)."""
    if source.host is not None:
        host = _value(settings, env, source.host) or "localhost"
        port = int(_value(settings, env, source.port) or source.default_port) if source.port else source.default_port
        return ServerAddress(backend, host, port, f"{source.host}/{source.port}" if source.port else source.host)
    assert source.uri is not None
    parsed = urlsplit(_value(settings, env, source.uri))
    if not parsed.hostname or parsed.hostname.startswith("/") or parsed.scheme in {"file", "unix"}:
        return None
    try:
        port = parsed.port or source.default_port
    except ValueError:
        raise ConfigError(f"{source.uri} has an invalid port") from None
    return ServerAddress(backend, parsed.hostname, port, source.uri)


def probe_servers(addresses: list[ServerAddress], timeout: float = 3.0) -> list[str]:
    """One line per server that refuses a connection (empty when all answer).

    A host that is an absolute path is a unix socket directory (PostgreSQL's convention, which
    asyncpg follows): its socket `<dir>/.s.PGSQL.<port>` is connected instead of a TCP port."""
    problems = []
    for address in addresses:
        try:
            _connect(address, timeout)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            problems.append(f"{address.backend} at {address.host}:{address.port} ({address.variables}) is not reachable: {reason}")
    return problems


def _connect(address: ServerAddress, timeout: float) -> None:
    if not address.host.startswith("/"):
        with socket.create_connection((address.host, address.port), timeout=timeout):
            return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.settimeout(timeout)
        unix.connect(f"{address.host.rstrip('/')}/.s.PGSQL.{address.port}")


def storage_summary(storages: StorageSet) -> dict[str, Any]:
    """For health: classes and backends, no connection details."""
    backends = ["embedded engine"] if storages.embedded else [b.name for b in storages.backends]
    return {"storages": storages.as_dict(), "backends": backends, "local": storages.needs_no_server}
