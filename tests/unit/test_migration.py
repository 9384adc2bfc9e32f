"""Moving a knowledge base from the local files into the embedded engine (issue 25): the copy is
counted before the placement switches, and a run interrupted half-way leaves the files
authoritative.  Real LightRAG on both sides, real PostgreSQL."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from config.settings import load_settings
from config.storages import ENGINE_STORAGES, LOCAL_STORAGES
from rag_worker.storage.catalog import DocumentCatalog
from rag_worker.storage.embedded_engine import ENGINE_DIR, stop_engine
from rag_worker.storage.migration import migrate
from rag_worker.storage.placement import MARKER, StoragePlacement

pytestmark = pytest.mark.anyio

DOCS = [
    "Kestrel Array is a radio telescope in Patagonia. Kestrel Array was funded by the Halvorsen Foundation.",
    "The Halvorsen Foundation is based in Bergen. Ingrid Halvorsen founded the Halvorsen Foundation in 1998.",
]


@pytest.fixture
async def files_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Path, str, dict[str, Any]]]:
    """A knowledge base on the local files with two indexed documents and their catalog records."""
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    working_dir, workspace = tmp_path / "data", f"kb_{uuid.uuid4().hex[:8]}"
    rag = await new_lightrag(working_dir, workspace, components)
    await rag.ainsert(DOCS, ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
    catalog = DocumentCatalog(rag)
    await catalog.initialize()
    catalog.put("doc-a", {"name": "a.md"})
    await catalog.commit(["doc-a"])
    await catalog.finalize()
    await rag.finalize_storages()
    StoragePlacement.record(working_dir / workspace, LOCAL_STORAGES, False)
    try:
        yield working_dir, workspace, components
    finally:
        stop_engine(working_dir / ENGINE_DIR)


async def _engine_documents(working_dir: Path, workspace: str, components: dict[str, Any]) -> tuple[dict[str, int], Any]:
    from rag_worker.storage.lightrag_setup import new_lightrag

    rag = await new_lightrag(working_dir, workspace, components, **ENGINE_STORAGES.as_kwargs())
    try:
        counts = await rag.doc_status.get_status_counts()
        catalog = DocumentCatalog(rag)
        await catalog.initialize()
        record = await catalog.get("doc-a")
        await catalog.finalize()
        return counts, record
    finally:
        await rag.finalize_storages()


async def test_a_moved_knowledge_base_has_every_count_and_opens_in_the_engine(files_kb: tuple[Path, str, dict[str, Any]]) -> None:
    working_dir, workspace, components = files_kb
    counts = await migrate(working_dir, workspace, components)
    assert counts["documents"] == 2 and counts["chunks"] >= 2 and counts["entities"] >= 3 and counts["relations"] >= 1
    marker = json.loads((working_dir / workspace / MARKER).read_text())
    assert marker["embedded"] is True
    placement = StoragePlacement(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}))
    assert placement.for_workspace(working_dir / workspace) == (ENGINE_STORAGES, False)
    from rag_worker.storage.embedded_engine import EmbeddedEngine

    engine = EmbeddedEngine(working_dir)
    await engine.ensure_running()
    try:
        status, record = await _engine_documents(working_dir, workspace, components)
    finally:
        await engine.release()
    assert status.get("processed") == 2 and record is not None and record["name"] == "a.md"


async def test_a_migration_interrupted_half_way_leaves_the_files_authoritative(files_kb: tuple[Path, str, dict[str, Any]]) -> None:
    working_dir, workspace, components = files_kb
    before = {path.name: path.read_bytes() for path in (working_dir / workspace).glob("*.json")}

    async def interrupted() -> None:
        raise RuntimeError("killed half-way")

    with pytest.raises(RuntimeError):
        await migrate(working_dir, workspace, components, after_copy=interrupted)
    placement = StoragePlacement(load_settings({"LIGHTRAG_MCP_DEFAULT_STORAGE": "engine"}))
    assert placement.for_workspace(working_dir / workspace) == (LOCAL_STORAGES, False)
    assert {path.name: path.read_bytes() for path in (working_dir / workspace).glob("*.json")} == before
    counts = await migrate(working_dir, workspace, components)  # a second run starts over and switches
    assert counts["documents"] == 2
    assert placement.for_workspace(working_dir / workspace) == (ENGINE_STORAGES, False)
