"""The storage backends, one row each: everything this project knows about a storage family.

A row names LightRAG's classes per kind (kv, vector, graph, doc_status), the variables a
connection needs, where the server's address is read from and its default port, the driver
LightRAG's implementation imports (and the modules whose exceptions mean the server failed),
the pip extra that installs it, LightRAG's one-workspace override we refuse, where our
document catalog lives on it, and driver settings that suit interactive calls.  Everything
else is derived: the class lists in the settings' help, `resolve_storages` and
`server_addresses` (config.storages), the storage-error classification and the catalog's
store (rag_worker.storage).  Adding a backend is a row here plus its connection settings
in `config.settings`.

Plain data: no LightRAG, no driver, no settings import (config.settings reads this table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

KINDS = ("kv", "vector", "graph", "doc_status")
#: LightRAG's variable that names the class of each kind.
VARIABLES = {
    "kv": "LIGHTRAG_KV_STORAGE",
    "vector": "LIGHTRAG_VECTOR_STORAGE",
    "graph": "LIGHTRAG_GRAPH_STORAGE",
    "doc_status": "LIGHTRAG_DOC_STATUS_STORAGE",
}
KIND_NOUNS = {"kv": "KV", "vector": "Vector", "graph": "Graph", "doc_status": "Document-status"}


@dataclass(frozen=True)
class ServerAddressSource:
    """Where a server's host and port are configured: a URI variable, or host and port variables."""

    default_port: int
    uri: str | None = None  # e.g. REDIS_URI=redis://host:6379
    host: str | None = None  # e.g. POSTGRES_HOST (LightRAG's default: localhost)
    port: str | None = None


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per family
class Backend:
    """A storage family: its classes, connection variables, server address, driver and extra."""

    name: str
    classes: Mapping[str, tuple[str, ...]]  # kind → class names (the first is the usual one)
    required: tuple[str, ...] = ()  # variables that must be set
    driver: str | None = None  # importable module the LightRAG implementation needs
    extra: str | None = None  # pip extra of this project that installs it
    workspace_variable: str | None = None  # LightRAG's override that forces one workspace
    address: ServerAddressSource | None = None  # None: files in the data directory, no server
    error_modules: tuple[str, ...] = ()  # top-level modules whose exceptions mean "storage failed"
    #: Where our document catalog lives when its KV storage is this backend's: None is one more
    #: namespace of that KV storage; a name is a store of ours (rag_worker.storage.catalog_stores).
    catalog_store: str | None = None
    #: Driver variables set for interactive calls unless the administrator sets them.
    interactive_defaults: Mapping[str, str] = field(default_factory=dict)
    #: What a class needs beyond the backend, shown in the settings' help.
    class_notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return self.address is None


#: How LightRAG's vector searches read pgvector's HNSW indexes (its `WHERE workspace = $1 ...
#: ORDER BY distance LIMIT top_k`, top_k 40), measured on a 5,000-document engine with 200 text
#: passages as questions:
#: - `hnsw.ef_search`: how many candidates a search keeps.  pgvector's 40 found 46 % of the 40
#:   nearest relations and 70 % of the 40 nearest entities; 400 finds 94 % and 99 % (95 % and 98 %
#:   at 2,000 documents on the engine's sparser indexes, `embedded_engine.HNSW_M`), in 14 and 5 ms
#:   a search instead of 2.4 and 1.3 (122,000 relations, 29,000 entities);
#: - `hnsw.iterative_scan`: the filter drops other knowledge bases' rows from those candidates, so
#:   one sharing its tables (every user of an embedded engine, or of a server) got a few of the
#:   rows it asked for: 6 of 40 for one holding a tenth of the table.  pgvector 0.8's iterative
#:   scan reads on until the filtered rows fill the limit (relaxed: rows found late may come
#:   slightly out of order).
#: Checked on pgvector 0.8.0 (the test servers) and 0.8.5 (the engine), not on an older one, which
#: has no iterative scan: where a server refuses the setting, its administrator sets
#: POSTGRES_SERVER_SETTINGS (which replaces these).
VECTOR_SEARCH_SETTINGS = {"hnsw.ef_search": "400", "hnsw.iterative_scan": "relaxed_order"}

LOCAL = {"kv": "JsonKVStorage", "vector": "NanoVectorDBStorage", "graph": "NetworkXStorage", "doc_status": "JsonDocStatusStorage"}

BACKENDS: tuple[Backend, ...] = (
    Backend("local", {kind: (name,) for kind, name in LOCAL.items()}),
    Backend("faiss", {"vector": ("FaissVectorDBStorage",)}, driver="faiss"),
    Backend(
        "postgres",
        {
            "kv": ("PGKVStorage",),
            "vector": ("PGVectorStorage",),
            "graph": ("PGTableGraphStorage", "PGGraphStorage"),
            "doc_status": ("PGDocStatusStorage",),
        },
        required=("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DATABASE"),
        driver="asyncpg",
        extra="postgres",
        workspace_variable="POSTGRES_WORKSPACE",
        address=ServerAddressSource(5432, host="POSTGRES_HOST", port="POSTGRES_PORT"),
        error_modules=("asyncpg",),
        catalog_store="postgres_table",  # PGKVStorage only knows LightRAG's own tables
        # LightRAG's PostgreSQL client retries a lost connection for minutes (10 tries, backoff
        # 3 s → 30 s): right for a batch job, wrong for a chat call.  A call gives up after ~4 s
        # and answers STORAGE_ERROR; the next call tries again.
        interactive_defaults={
            "POSTGRES_CONNECTION_RETRIES": "3",
            "POSTGRES_CONNECTION_RETRY_BACKOFF": "0.5",
            "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "2",
            # the session settings LightRAG's pool asks for ("name=value&..."); an administrator's
            # own POSTGRES_SERVER_SETTINGS replaces them
            "POSTGRES_SERVER_SETTINGS": "&".join(f"{name}={value}" for name, value in VECTOR_SEARCH_SETTINGS.items()),
        },
        class_notes={"PGGraphStorage": "Apache AGE"},
    ),
    Backend(
        "redis",
        {"kv": ("RedisKVStorage",), "doc_status": ("RedisDocStatusStorage",)},
        required=("REDIS_URI",),
        driver="redis",
        extra="redis",
        workspace_variable="REDIS_WORKSPACE",
        address=ServerAddressSource(6379, uri="REDIS_URI"),
        error_modules=("redis",),
    ),
    Backend(
        "milvus",
        {"vector": ("MilvusVectorDBStorage",)},
        required=("MILVUS_URI",),
        driver="pymilvus",
        extra="milvus",
        workspace_variable="MILVUS_WORKSPACE",
        address=ServerAddressSource(19530, uri="MILVUS_URI"),
        error_modules=("pymilvus", "grpc"),
    ),
    Backend(
        "neo4j",
        {"graph": ("Neo4JStorage",)},
        required=("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD"),
        driver="neo4j",
        workspace_variable="NEO4J_WORKSPACE",
        address=ServerAddressSource(7687, uri="NEO4J_URI"),
        error_modules=("neo4j",),
    ),
    Backend(
        "qdrant",
        {"vector": ("QdrantVectorDBStorage",)},
        required=("QDRANT_URL",),
        driver="qdrant_client",
        workspace_variable="QDRANT_WORKSPACE",
        address=ServerAddressSource(6333, uri="QDRANT_URL"),
        error_modules=("qdrant_client",),
    ),
    Backend(
        "mongo",
        {
            "kv": ("MongoKVStorage",),
            "vector": ("MongoVectorDBStorage",),
            "graph": ("MongoGraphStorage",),
            "doc_status": ("MongoDocStatusStorage",),
        },
        required=("MONGO_URI", "MONGO_DATABASE"),
        driver="pymongo",
        workspace_variable="MONGODB_WORKSPACE",
        address=ServerAddressSource(27017, uri="MONGO_URI"),
        error_modules=("pymongo", "motor"),
    ),
)

#: class name → (its backend, its kind)
BY_CLASS = {cls: (backend, kind) for backend in BACKENDS for kind, names in backend.classes.items() for cls in names}
#: Modules whose exceptions mean a storage server failed (rag_worker.storage.errors).
DRIVER_MODULES = frozenset(module for backend in BACKENDS for module in backend.error_modules)
#: Driver variables set for interactive calls unless the administrator sets them (the front sets them).
INTERACTIVE_DRIVER_DEFAULTS = {name: value for backend in BACKENDS for name, value in backend.interactive_defaults.items()}


def backend_of(storage_class: str) -> Backend:
    """The backend a LightRAG storage class belongs to (KeyError for a class not in the table)."""
    return BY_CLASS[storage_class][0]


def classes_of(kind: str) -> list[str]:
    """The class names of one kind, the local default first (for messages and the settings' help)."""
    return [cls for cls, (_, k) in BY_CLASS.items() if k == kind]


def class_help(kind: str) -> str:
    """`KV storage class: JsonKVStorage (default), PGKVStorage, …` for the settings table."""
    default, *others = classes_of(kind)
    named = [f"{cls} ({note})" if (note := backend_of(cls).class_notes.get(cls)) else cls for cls in others]
    return f"{KIND_NOUNS[kind]} storage class: {default} (default), {', '.join(named)}."
