"""The embedded database engine's life (issue 25): started on first use in WORKING_DIR, shared by
every process of the data directory, stopped by the last one, replaced after a SIGKILL, and
reachable through a short socket directory when WORKING_DIR is deep.  Real PostgreSQL, no stubs."""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from config.settings import load_settings
from config.storages import (
    ENGINE_STORAGES,
    LOCAL_STORAGES,
    ServerAddress,
    probe_servers,
    resolve_storages,
    server_addresses,
)
from protocol import ErrorCode, RagError
from rag_worker.storage import engine_template
from rag_worker.storage.embedded_engine import ENGINE_DIR, EmbeddedEngine, read_postmaster, stop_engine
from rag_worker.storage.engine_template import template_dir
from rag_worker.storage.pg_client import quiet_table_probes, repair_reconnect
from rag_worker.storage.placement import StoragePlacement

pytestmark = pytest.mark.anyio

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def working_dir(tmp_path: Path) -> Iterator[Path]:
    """A data directory whose engine is stopped after the test, whatever happened."""
    yield tmp_path
    stop_engine(tmp_path / ENGINE_DIR)


def _other_process_joins(working_dir: Path, then: str) -> subprocess.Popen[str]:
    """Another server process of the same data directory: joins the engine, prints its pid, then `then`."""
    code = textwrap.dedent(f"""
        import anyio
        from pathlib import Path
        from rag_worker.storage.embedded_engine import EmbeddedEngine
        async def main():
            engine = EmbeddedEngine(Path({str(working_dir)!r}))
            info = await engine.ensure_running()
            print(info.pid, flush=True)
            {then}
        anyio.run(main)
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)


async def _query(socket_dir: Path, sql: str) -> object:
    import asyncpg

    connection = await asyncpg.connect(host=str(socket_dir), user="postgres", database="postgres")
    try:
        return await connection.fetchval(sql)
    finally:
        await connection.close()


async def test_the_engine_starts_on_first_use_with_pgvector_and_the_last_user_stops_it(working_dir: Path) -> None:
    engine = EmbeddedEngine(working_dir)
    assert engine.describe() == {"up": False, "data_dir": "WORKING_DIR/engine"}
    info = await engine.ensure_running()
    assert info.data_dir == working_dir / ENGINE_DIR and info.version.startswith("PostgreSQL 18")
    assert os.environ["POSTGRES_HOST"] == str(info.socket_dir)
    await _query(info.socket_dir, "CREATE EXTENSION IF NOT EXISTS vector")
    assert await _query(info.socket_dir, "SELECT extversion FROM pg_extension WHERE extname = 'vector'") == "0.8.5"
    assert engine.describe()["up"] is True and "socket_dir" not in engine.describe()  # no paths for clients
    assert await engine.release() is True
    assert read_postmaster(working_dir / ENGINE_DIR) is None


async def test_two_processes_share_one_engine_and_only_the_last_one_stops_it(working_dir: Path) -> None:
    engine = EmbeddedEngine(working_dir)
    info = await engine.ensure_running()
    other = _other_process_joins(working_dir, "await anyio.sleep(600)")
    try:
        assert other.stdout is not None
        assert int(other.stdout.readline()) == info.pid  # joined, not a second server
        assert await engine.release() is False  # the other process still uses it
        assert await _query(info.socket_dir, "SELECT 1") == 1
    finally:
        other.kill()
        other.wait()
    # The other process died without a word: a new user reuses the engine, and stops it last.
    again = EmbeddedEngine(working_dir)
    assert (await again.ensure_running()).pid == info.pid
    assert await again.release() is True


async def test_a_sigkilled_engine_is_replaced_by_the_next_start_and_keeps_its_data(working_dir: Path) -> None:
    engine = EmbeddedEngine(working_dir)
    info = await engine.ensure_running()
    await _query(info.socket_dir, "CREATE TABLE kept AS SELECT 42 AS answer")
    os.kill(info.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while engine.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not engine.alive()
    restarted = await engine.ensure_running()
    assert restarted.pid != info.pid
    assert await _query(restarted.socket_dir, "SELECT answer FROM kept") == 42


async def test_a_copy_of_a_running_engines_data_directory_gets_an_engine_of_its_own(tmp_path: Path) -> None:
    """A WORKING_DIR copied while its engine ran (a backup, a duplicated knowledge base) holds that
    engine's postmaster.pid and socket lock, naming a live server.  The copy's server once joined
    that server: its writes went to the original's knowledge base, and stopping it killed the
    original's engine.  Now the copy starts its own engine on its own data, and leaves the original's alone."""
    original, copy = tmp_path / "original", tmp_path / "copy"
    engine = EmbeddedEngine(original)
    try:
        info = await engine.ensure_running()
        await _query(info.socket_dir, "CREATE TABLE whose AS SELECT 'original' AS name")
        await _query(info.socket_dir, "CHECKPOINT")
        subprocess.run(["cp", "-a", str(original), str(copy)], check=True)  # owners kept, as a backup as root keeps them
        assert read_postmaster(copy / ENGINE_DIR) is not None and read_postmaster(copy / ENGINE_DIR)[0] == info.pid
        copied = EmbeddedEngine(copy)
        try:
            own = await copied.ensure_running()
            assert own.pid != info.pid and own.data_dir == copy / ENGINE_DIR
            await _query(own.socket_dir, "UPDATE whose SET name = 'copy'")
            assert await _query(own.socket_dir, "SELECT current_setting('data_directory')") == str(copy / ENGINE_DIR)
        finally:
            assert await copied.release() is True
        assert engine.alive() and await _query(info.socket_dir, "SELECT name FROM whose") == "original"
        assert stop_engine(copy / ENGINE_DIR) is False  # nothing of the copy's runs; the original's is not touched
        assert engine.alive()
    finally:
        await engine.release()


async def test_lightrags_client_answers_once_the_engine_is_back_after_several_refused_reconnects(working_dir: Path) -> None:
    """LightRAG 1.5.7's client waited for ever on its own reconnect lock once one reconnect attempt
    failed (rag_worker.storage.pg_client): documents indexing while the engine was down stayed
    'processing' until the worker restarted.  A query made while it is down answers once it is back."""
    from lightrag.kg.postgres_impl import ClientManager, PostgreSQLDB

    repair_reconnect()
    engine = EmbeddedEngine(working_dir)
    await engine.ensure_running()
    db = PostgreSQLDB(ClientManager.get_config())
    await db.initdb()
    try:
        assert await db.query("SELECT 1 AS one") == {"one": 1}
        stop_engine(working_dir / ENGINE_DIR)

        async def back_after_a_few_attempts() -> None:
            await anyio.sleep(3)  # LightRAG retries every 0.5-2 s (RETRY_ACROSS_RESTART): several refused
            await engine.ensure_running()

        async with anyio.create_task_group() as tg:
            tg.start_soon(back_after_a_few_attempts)
            with anyio.fail_after(60):
                assert await db.query("SELECT 2 AS two") == {"two": 2}
    finally:
        if db.pool is not None:
            await db.pool.close()
        await engine.release()


async def _setting_after_hand_back(socket_dir: str) -> tuple[str, str]:
    """A `SET` made on one checkout of LightRAG's pool, read by the next checkout (one connection);
    and the state of a transaction the first checkout left open."""
    from lightrag.kg.postgres_impl import ClientManager, PostgreSQLDB

    db = PostgreSQLDB({**ClientManager.get_config(), "host": socket_dir, "max_connections": 1})
    await db.initdb()
    try:
        assert db.pool is not None
        async with db.pool.acquire() as connection:
            await connection.execute("SET application_name = 'left-by-a-checkout'")
            await connection.execute("BEGIN")  # left open: never committed
            await connection.execute("CREATE TABLE never_committed (x int)")
        async with db.pool.acquire() as connection:
            name = await connection.fetchval("SHOW application_name")
            table = await connection.fetchval("SELECT to_regclass('never_committed')::text")
        return name, str(table)
    finally:
        await db.pool.close()


async def test_the_engines_pool_hands_connections_back_without_the_reset_query_and_still_rolls_back(working_dir: Path) -> None:
    """asyncpg's reset query (`RESET ALL` ...) after every statement cost as much as the statements
    (rag_worker.storage.pg_client): the engine's pools skip it, a transaction left open is still
    rolled back; a server not named as the engine (the same one, by another spelling) keeps it."""
    repair_reconnect()
    engine = EmbeddedEngine(working_dir)
    info = await engine.ensure_running()
    try:
        assert await _setting_after_hand_back(str(info.socket_dir)) == ("left-by-a-checkout", "None")
        assert await _setting_after_hand_back(f"{info.socket_dir}/.") == ("", "None")
    finally:
        await engine.release()


async def test_a_stale_pid_file_naming_another_program_does_not_block_the_start(working_dir: Path) -> None:
    engine = EmbeddedEngine(working_dir)
    info = await engine.ensure_running()
    await engine.release()
    pid_file = working_dir / ENGINE_DIR / "postmaster.pid"
    # As a SIGKILLed server leaves it, with its pid since reused by an unrelated process (ours).
    pid_file.write_text(f"{os.getpid()}\n{working_dir / ENGINE_DIR}\n{int(time.time())}\n5432\n{info.socket_dir}\n\n  1 2\nready\n")
    assert (await EmbeddedEngine(working_dir).ensure_running()).pid != os.getpid()


async def test_a_data_directory_too_deep_for_a_socket_gets_a_short_socket_directory(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    engine = EmbeddedEngine(deep)
    try:
        info = await engine.ensure_running()
        assert len(str(info.socket_dir / ".s.PGSQL.5432")) < 108 and info.socket_dir != info.data_dir
        assert await _query(info.socket_dir, "SELECT 1") == 1
        address = ServerAddress("postgres", str(info.socket_dir), 5432, "POSTGRES_HOST/POSTGRES_PORT")
        assert probe_servers([address]) == []  # the start-up probe takes a socket directory
    finally:
        await engine.release()
    assert not info.socket_dir.exists()  # the last user's stop leaves nothing in the temp directory


def test_the_start_up_probe_names_a_socket_directory_without_a_server() -> None:
    address = ServerAddress("postgres", "/nonexistent/socket-dir", 5432, "POSTGRES_HOST/POSTGRES_PORT")
    [problem] = probe_servers([address])
    assert "postgres at /nonexistent/socket-dir:5432 (POSTGRES_HOST/POSTGRES_PORT) is not reachable" in problem


async def test_an_engine_that_cannot_start_is_a_storage_error_saying_what_to_do(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    with pytest.raises(RagError) as caught:
        await EmbeddedEngine(blocked).ensure_running()
    assert caught.value.code is ErrorCode.STORAGE_ERROR and caught.value.retryable
    assert "embedded database engine" in caught.value.message and str(tmp_path) not in caught.value.message


async def test_files_where_the_engines_data_directory_goes_are_never_deleted_and_an_empty_folder_is_taken(
    working_dir: Path,
) -> None:
    """A knowledge base's working directory given as WORKING_DIR's parent puts its own folders where
    the engine's data directory goes: they used to be deleted as a leftover."""
    theirs = working_dir / ENGINE_DIR / "data" / "engine"
    theirs.mkdir(parents=True)
    (theirs / "PG_VERSION").write_text("18\n")
    (working_dir / ENGINE_DIR / "notes.txt").write_text("kept")
    (working_dir / f"{ENGINE_DIR}.init-backup").mkdir()  # not a scratch directory of ours
    before = sorted(str(path) for path in (working_dir / ENGINE_DIR).rglob("*"))
    engine = EmbeddedEngine(working_dir)
    for _ in range(2):  # the next call gets the same answer
        with pytest.raises(RagError) as caught:
            await engine.ensure_running()
        error = caught.value
        assert engine.describe()["start_failed"] == error.message  # for the health report
        assert error.code is ErrorCode.STORAGE_ERROR and not error.retryable
        assert "WORKING_DIR/engine holds files that are not the engine's data directory" in error.message
        assert "move WORKING_DIR/engine elsewhere" in error.suggested_action and str(working_dir) not in error.message
    assert sorted(str(path) for path in (working_dir / ENGINE_DIR).rglob("*")) == before
    assert (working_dir / ENGINE_DIR / "notes.txt").read_text() == "kept"
    assert (working_dir / f"{ENGINE_DIR}.init-backup").is_dir()

    empty = working_dir / "empty"
    (empty / ENGINE_DIR).mkdir(parents=True)
    started = EmbeddedEngine(empty)
    info = await started.ensure_running()
    try:
        assert (info.data_dir / "PG_VERSION").is_file() and await _query(info.socket_dir, "SELECT 1") == 1
        assert "start_failed" not in started.describe() and started.describe()["up"]
    finally:
        stop_engine(empty / ENGINE_DIR)


def test_the_default_setting_chooses_where_new_knowledge_bases_go_and_needs_no_connection() -> None:
    engine = resolve_storages(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "engine"}), {})
    assert engine == ENGINE_STORAGES and engine.embedded and server_addresses(engine, load_settings({}), {}) == []
    assert resolve_storages(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}), {}) == LOCAL_STORAGES


def test_existing_knowledge_bases_stay_where_they_are_when_the_default_changes(tmp_path: Path) -> None:
    files_kb, engine_kb, legacy_kb = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for directory in (files_kb, engine_kb, legacy_kb):
        directory.mkdir()
    StoragePlacement.record(files_kb, LOCAL_STORAGES, False)
    StoragePlacement.record(engine_kb, ENGINE_STORAGES, False)
    (legacy_kb / "kv_store_doc_status.json").write_text("{}")  # made before markers existed
    on_engine = StoragePlacement(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "engine"}))
    assert on_engine.for_workspace(files_kb) == (LOCAL_STORAGES, False)
    assert on_engine.for_workspace(legacy_kb) == (LOCAL_STORAGES, False)
    assert on_engine.for_workspace(tmp_path / "new") == (ENGINE_STORAGES, False)
    on_files = StoragePlacement(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}))
    assert on_files.for_workspace(engine_kb) == (ENGINE_STORAGES, False)


def test_an_engine_knowledge_base_is_never_opened_on_an_explicitly_configured_server(tmp_path: Path) -> None:
    StoragePlacement.record(tmp_path, ENGINE_STORAGES, False)
    env = {
        "LIGHTRAG_KV_STORAGE": "PGKVStorage",
        "LIGHTRAG_VECTOR_STORAGE": "PGVectorStorage",
        "LIGHTRAG_GRAPH_STORAGE": "PGTableGraphStorage",
        "LIGHTRAG_DOC_STATUS_STORAGE": "PGDocStatusStorage",
        "POSTGRES_USER": "rag",
        "POSTGRES_PASSWORD": "pw",
        "POSTGRES_DATABASE": "rag",
    }
    with pytest.raises(RagError) as caught:
        StoragePlacement(load_settings(env)).for_workspace(tmp_path)
    assert caught.value.code is ErrorCode.CONFIGURATION_ERROR and "embedded database engine" in caught.value.message


def test_lightrags_probes_of_tables_it_is_about_to_create_are_not_logged_while_a_knowledge_base_opens() -> None:
    from lightrag.utils import logger as lightrag_log

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    lightrag_log.addHandler(handler)
    probe = 'PostgreSQL database, error:relation "lightrag_doc_full" does not exist'
    try:
        with quiet_table_probes():
            lightrag_log.error(probe)
            lightrag_log.error("PostgreSQL database, error:connection refused")
        lightrag_log.error(probe)  # outside an opening it is a real fault: kept
    finally:
        lightrag_log.removeHandler(handler)
    assert seen == ["PostgreSQL database, error:connection refused", probe]


async def test_a_new_engine_is_copied_from_the_packaged_template_private_to_its_user(working_dir: Path) -> None:
    assert (template_dir() / "PG_VERSION").is_file(), "make setup builds the template"
    info = await EmbeddedEngine(working_dir).ensure_running()
    data = info.data_dir
    assert stat.S_IMODE(data.stat().st_mode) == 0o700  # PostgreSQL refuses anything wider
    files = [path for path in data.rglob("*") if not path.is_socket()]  # the socket is open to all by design
    assert files and all(stat.S_IMODE(path.lstat().st_mode) & 0o077 == 0 for path in files)
    assert (data / "postgresql.conf").read_text().count("lightrag-mcp") >= 1  # our settings, written into the copy
    assert "lightrag-mcp" not in (template_dir() / "postgresql.conf").read_text()  # the template stays pristine
    await _query(info.socket_dir, "CREATE TABLE copied (id int)")  # a working, writable cluster


async def test_without_a_packaged_template_the_engine_runs_initdb(working_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_template, "template_dir", lambda: working_dir / "no-template")
    info = await EmbeddedEngine(working_dir).ensure_running()
    assert (info.data_dir / "PG_VERSION").is_file()
    assert await _query(info.socket_dir, "SELECT 1") == 1


async def test_a_data_directory_made_by_an_older_version_gets_the_current_settings_at_its_next_start(working_dir: Path) -> None:
    engine = EmbeddedEngine(working_dir)
    info = await engine.ensure_running()
    await engine.release()
    conf = info.data_dir / "postgresql.conf"
    head = conf.read_text().partition(engine_template.CONF_MARK)[0]
    conf.write_text(head + engine_template.CONF_MARK + "\nmax_connections = 600\nlisten_addresses = ''\n")  # the block before the WAL cap
    info = await EmbeddedEngine(working_dir).ensure_running()
    assert await _query(info.socket_dir, "SELECT setting FROM pg_settings WHERE name = 'max_wal_size'") == "256"  # MB
    text = conf.read_text()
    assert text.count(engine_template.CONF_MARK) == 1 and text.startswith(head)
    engine_template.apply_settings(info.data_dir)
    assert conf.read_text() == text  # up to date: not rewritten
