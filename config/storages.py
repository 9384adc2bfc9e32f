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

    def describe(self) -> str:
        return ", ".join(f"{kind}={getattr(self, kind)}" for kind in KINDS)


LOCAL_STORAGES = StorageSet(**LOCAL)

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
        found = BY_CLASS.get(name)
        if found is None or found[1] != kind:
            allowed = sorted(classes_of(kind))
            what = "is not a storage class LightRAG has" if found is None else f"is a {found[1]} storage, not a {kind} one"
            raise ConfigError(f"{variable}={name!r} {what}; use one of: {', '.join(allowed)}")
        chosen[kind] = name
    storages = StorageSet(**chosen)
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
    addresses = []
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
