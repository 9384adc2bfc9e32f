"""Storage selection is configuration only, checked at start-up with one clear line (issue 7)."""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path

import pytest

from config.settings import ConfigError, load_settings
from config.storages import (
    ENGINE_STORAGES,
    LOCAL_STORAGES,
    StorageSet,
    probe_servers,
    resolve_storages,
    server_addresses,
)
from protocol import ErrorCode, RagError
from rag_worker.storage.errors import is_storage_failure
from rag_worker.storage.placement import StoragePlacement

PG = {
    "LIGHTRAG_KV_STORAGE": "PGKVStorage",
    "LIGHTRAG_VECTOR_STORAGE": "PGVectorStorage",
    "LIGHTRAG_GRAPH_STORAGE": "PGTableGraphStorage",
    "LIGHTRAG_DOC_STATUS_STORAGE": "PGDocStatusStorage",
    "POSTGRES_USER": "rag",
    "POSTGRES_PASSWORD": "secret-pw",
    "POSTGRES_DATABASE": "rag",
}


def resolve(env: dict[str, str]) -> StorageSet:
    return resolve_storages(load_settings(env), env)


def test_no_configuration_means_the_embedded_engine_and_the_files_are_one_setting_away() -> None:
    assert resolve({}) == ENGINE_STORAGES and ENGINE_STORAGES.embedded and ENGINE_STORAGES.needs_no_server
    assert resolve({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}) == LOCAL_STORAGES and LOCAL_STORAGES.is_local


def test_postgres_all_in_one_and_redis_milvus_mixes_resolve() -> None:
    assert resolve(PG).as_kwargs()["graph_storage"] == "PGTableGraphStorage"
    mixed = {
        "LIGHTRAG_KV_STORAGE": "RedisKVStorage",
        "LIGHTRAG_DOC_STATUS_STORAGE": "RedisDocStatusStorage",
        "LIGHTRAG_VECTOR_STORAGE": "MilvusVectorDBStorage",
        "REDIS_URI": "redis://127.0.0.1:6379",
        "MILVUS_URI": "http://127.0.0.1:19530",
    }
    storages = resolve(mixed)
    assert [b.name for b in storages.backends] == ["redis", "milvus", "local"]
    addresses = server_addresses(storages, load_settings(mixed), mixed)
    assert [(a.backend, a.host, a.port) for a in addresses] == [("redis", "127.0.0.1", 6379), ("milvus", "127.0.0.1", 19530)]


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"LIGHTRAG_KV_STORAGE": "PostgresKV"}, "LIGHTRAG_KV_STORAGE='PostgresKV' is not a storage class"),
        ({"LIGHTRAG_GRAPH_STORAGE": "PGKVStorage"}, "is a kv storage, not a graph one"),
        ({"LIGHTRAG_KV_STORAGE": "PGKVStorage"}, "POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DATABASE must be set"),
        ({**PG, "POSTGRES_WORKSPACE": "shared"}, "POSTGRES_WORKSPACE must not be set"),
        ({"LIGHTRAG_VECTOR_STORAGE": "MilvusVectorDBStorage"}, "MILVUS_URI must be set for LIGHTRAG_VECTOR_STORAGE"),
        ({"LIGHTRAG_GRAPH_STORAGE": "Neo4JStorage", "NEO4J_URI": "neo4j://h", "NEO4J_USERNAME": "a", "NEO4J_PASSWORD": "b"},
         "needs the 'neo4j' package"),
    ],
)
def test_bad_storage_configuration_fails_with_one_line_naming_the_variable(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(env)
    message = str(caught.value)
    assert fragment in message and "\n" not in message and "secret-pw" not in message


def test_an_unreachable_server_is_named_with_its_variables_not_its_password() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**PG, "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(port)}
    problems = probe_servers(server_addresses(resolve(env), load_settings(env), env), timeout=1)
    assert len(problems) == 1 and f"127.0.0.1:{port} (POSTGRES_HOST/POSTGRES_PORT)" in problems[0]
    assert "secret-pw" not in problems[0]


def placement(env: dict[str, str]) -> StoragePlacement:
    return StoragePlacement(load_settings(env))


def test_a_workspace_records_its_storages_and_a_changed_configuration_never_splits_it(tmp_path: Path) -> None:
    local = placement({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"})
    storages, fallback = local.for_workspace(tmp_path)
    assert storages == LOCAL_STORAGES and not fallback
    local.record(tmp_path, storages, fallback)
    with pytest.raises(RagError) as caught:
        placement(PG).for_workspace(tmp_path)
    assert caught.value.code == ErrorCode.CONFIGURATION_ERROR and "PGKVStorage" in caught.value.message


def test_a_pre_marker_local_workspace_is_recognised_by_its_files(tmp_path: Path) -> None:
    (tmp_path / "kv_store_doc_status.json").write_text("{}")
    with pytest.raises(RagError):
        placement(PG).for_workspace(tmp_path)
    assert placement({}).for_workspace(tmp_path) == (LOCAL_STORAGES, False)


def test_fallback_serves_new_workspaces_locally_and_they_stay_local(tmp_path: Path) -> None:
    down = placement({**PG, "LIGHTRAG_MCP_STORAGE_FALLBACK": "true"})
    down.fallback_active = True
    new = tmp_path / "new"
    new.mkdir()
    storages, fallback = down.for_workspace(new)
    assert storages == LOCAL_STORAGES and fallback
    down.record(new, storages, fallback)
    assert json.loads((new / "storage.json").read_text())["fallback"] is True
    assert placement(PG).for_workspace(new) == (LOCAL_STORAGES, True)  # back up: it stays where it is
    on_server = tmp_path / "old"
    on_server.mkdir()
    down.record(on_server, resolve(PG), False)
    assert down.for_workspace(on_server) == (resolve(PG), False)  # never moved to local files


def test_driver_and_connection_failures_are_storage_failures_and_others_are_not() -> None:
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    try:
        try:
            raise refused
        except OSError as exc:
            raise RuntimeError("PostgreSQL database error") from exc
    except RuntimeError as wrapped:
        assert is_storage_failure(wrapped)
    assert is_storage_failure(ExceptionGroup("group", [ValueError("x"), OSError(errno.ENOSPC, "No space left")]))
    assert not is_storage_failure(ValueError("bad value"))
    assert not is_storage_failure(KeyError("missing"))
