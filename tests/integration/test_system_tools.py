"""System tools over the real server: cache clearing that never breaks later deletes, usage
statistics that survive a worker restart and stay per workspace, the detailed health check,
per-workspace rate limits and quotas, and the audit log of mutating calls."""

from __future__ import annotations

import base64
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from config.settings import load_settings
from protocol import ErrorCode, RagError
from tests.integration.harness import Client, error_of, running_server

pytestmark = pytest.mark.anyio

DOC_A = "The ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin. Alice Johnson met Bob Stone."
DOC_B = "Bob Stone works at Acme Corporation in Paris. Acme Corporation sells rockets."


async def insert(client: Client, title: str, text: str) -> dict[str, Any]:
    result = await client.call("lightrag_insert_text", {"text": text, "title": title})
    assert not result.is_error, result.content
    assert result.structured_content["status"] == "processed"
    return result.structured_content  # type: ignore[return-value]


async def stats(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call("lightrag_get_system_stats", arguments)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


# ------------------------------------------------------------------------ clear cache


async def test_clear_cache_reports_sizes_before_and_after_and_keeps_the_extraction_cache(home: Path) -> None:
    # Sizes come from the JSON KV storage's entries (the engine's cache answers "cannot list").
    async with running_server(home, LIGHTRAG_MCP_DEFAULT_STORAGE="files") as client:
        await insert(client, "a", DOC_A)
        query = await client.call("lightrag_query", {"query": "Who led ZEBRA-7741?", "mode": "local"})
        assert not query.is_error, query.content
        result = await client.call("lightrag_clear_cache", {"cache_types": ["all"]})
        assert not result.is_error, result.content
        data = result.structured_content
        assert data["cleared_caches"] == ["llm", "query", "embedding", "document", "graph"]
        before, after = data["cache_sizes_before"], data["cache_sizes_after"]
        assert before["embedding"]["entries"] >= 1 and after["embedding"]["entries"] == 0  # the query's vector
        assert after["llm"]["entries"] == 0 and after["query"]["entries"] == 0
        assert after["document"] == before["document"] and after["document"]["entries"] == 0
        assert before["graph"]["entries"] > 0 and after["graph"]["entries"] == before["graph"]["entries"]
        assert data["kept"]["extraction"]["entries"] >= 1  # the documents' extraction results stay
        assert "Kept the entity-extraction cache" in result.content[0].text
        audit = await stats(client, stat_categories=["audit", "documents"])  # at once: nothing cut off
        assert [e["tool"] for e in audit["audit"]["entries"]] == ["lightrag_clear_cache", "lightrag_insert_text"]
        assert audit["documents"]["processed"] == 1
        bad = error_of(await client.call("lightrag_clear_cache", {"cache_types": ["everything"]}))
        assert bad["error_code"] == "INVALID_PARAMETER"  # unknown cache type: refused by the schema


@pytest.fixture
async def in_process_rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Any, Any]]:
    """LightRAG built as the worker builds it, with two documents sharing 'Acme Corporation'."""
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    rag = await new_lightrag(tmp_path / "data", f"cache_{uuid.uuid4().hex[:8]}", components)
    await rag.ainsert([DOC_A, DOC_B], ids=["doc-a", "doc-b"], file_paths=["a.md", "b.md"])
    try:
        yield rag, components["embedding_func"]
    finally:
        await rag.finalize_storages()


async def test_after_clearing_all_caches_a_delete_still_rebuilds_shared_entities(
    in_process_rag: tuple[Any, Any],
) -> None:
    from rag_worker.operations.caches import CACHE_TYPES, clear

    rag, embedding_func = in_process_rag
    graph = rag.chunk_entity_relation_graph
    assert "ZEBRA-7741" in (await graph.get_node("Acme Corporation"))["description"]
    warnings = await clear(rag, embedding_func, set(CACHE_TYPES), pipeline_busy=False)
    assert warnings == []
    result = await rag.adelete_by_doc_id("doc-a")
    assert result.status == "success"
    shared = await graph.get_node("Acme Corporation")
    assert shared is not None and "ZEBRA-7741" not in shared["description"]  # rebuilt from doc-b alone
    assert "works at Acme Corporation in Paris" in shared["description"]
    assert not await graph.has_node("ZEBRA-7741")  # only doc-a mentioned it


async def test_lightrags_own_clear_cache_would_leave_the_deleted_text_behind(in_process_rag: tuple[Any, Any]) -> None:
    """Why clear_cache never drops the extraction cache: LightRAG's aclear_cache() does, and
    then a delete cannot rebuild the shared entity (if this starts failing, the trap is gone)."""
    rag, _ = in_process_rag
    await rag.aclear_cache()
    await rag.adelete_by_doc_id("doc-a")
    shared = await rag.chunk_entity_relation_graph.get_node("Acme Corporation")
    assert shared is not None and "ZEBRA-7741" in shared["description"]


async def test_clear_cache_then_delete_documents_through_the_server(home: Path) -> None:
    async with running_server(home) as client:
        first = await insert(client, "a", DOC_A)
        await insert(client, "b", DOC_B)
        assert not (await client.call("lightrag_clear_cache", {"cache_types": ["all"]})).is_error
        deleted = await client.call("lightrag_delete_documents", {"document_ids": [first["document_id"]]})
        assert not deleted.is_error, deleted.content
        query = await client.call(
            "lightrag_query", {"query": "Acme Corporation", "mode": "local", "only_context": True}
        )
        retrieved = json.dumps(query.structured_content)  # entities, relations and passages
        assert "sells rockets" in retrieved and "ZEBRA-7741" not in retrieved


# -------------------------------------------------------------------------- statistics


async def test_statistics_survive_a_worker_restart(home: Path) -> None:
    async with running_server(home) as client:
        await insert(client, "a", DOC_A)
        for mode in ("local", "local", "naive"):
            assert not (await client.call("lightrag_query", {"query": "Who is Alice Johnson?", "mode": mode})).is_error
        pid = await client.worker_pid()
        os.kill(pid, signal.SIGKILL)
        await client.wait_ready(not_pid=pid)
        data = await stats(client, time_range="last_hour")
        assert data["queries"]["total"] == 3 and data["queries"]["by_mode"] == {"local": 2, "naive": 1}
        assert data["queries"]["latency_ms"]["p50"] > 0 and data["queries"]["latency_ms"]["p99"] is not None
        assert data["restarts"]["worker_restarts"] >= 1
        assert data["documents"]["total_by_status"]["processed"] == 1
        assert data["performance"]["by_tool"]["lightrag_insert_text"]["calls"] == 1
        assert data["memory"]["front_rss_mb"] > 0 and data["memory"]["worker_rss_mb"] > 0
        assert data["storage"]["total_bytes"] > 0 and data["storage"]["documents"] == 1
        assert "3 queries" in data["message"]


async def test_statistics_are_per_workspace(home: Path) -> None:
    async with running_server(home) as client:
        for _ in range(2):
            result = await client.call_as("alice", "lightrag_query", {"query": "anything at all"})
            assert result.is_error is False or error_of(result)["error_code"] == "NO_RESULTS_FOUND"
        alice = await client.call_as("alice", "lightrag_get_system_stats", {"stat_categories": ["queries"]})
        bob = await client.call_as("bob", "lightrag_get_system_stats", {"stat_categories": ["queries"]})
        assert alice.structured_content["queries"]["total"] == 2
        assert bob.structured_content["queries"]["total"] == 0  # bob never sees alice's calls
        bad = error_of(await client.call("lightrag_get_system_stats", {"time_range": {"start": "yesterday"}}))
        assert bad["error_code"] == "INVALID_PARAMETER"  # not ISO 8601


# ------------------------------------------------------------------------------ health


async def test_detailed_health_reports_storages_models_llm_and_statistics(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_DEFAULT_STORAGE="engine") as client:
        await insert(client, "a", DOC_A)
        health = await client.health(include_detailed=True, check_dependencies=True)
        assert health["status"] == "healthy", health["notes"]
        components = health["components"]
        assert set(components["storages"]) == {"kv", "vector", "graph", "doc_status"}
        assert all(probe["ok"] and probe["latency_ms"] >= 0 for probe in components["storages"].values())
        assert components["storages"]["graph"]["class"] == "PGTableGraphStorage"  # the embedded engine
        engine = components["storage"]["engine"]
        assert engine["up"] and engine["pid"] > 0 and engine["version"].startswith("PostgreSQL 18")
        assert engine["data_dir"] == "WORKING_DIR/engine"  # no server path reaches a client
        assert components["embedding"]["ok"] and components["embedding"]["dim"] == 384
        assert components["llm"] == {"configured": False, "status": "not configured: built-in extractor"}
        assert components["configuration"]["storages"]["kv"] == "PGKVStorage"
        assert health["statistics"]["documents_by_status"]["processed"] == 1
        assert health["statistics"]["entities"] > 0 and health["statistics"]["chunks"] >= 1
        assert health["memory"]["front_rss_mb"] > 0 and health["limits"]["rate_limit_per_minute"] is None
        assert "API_KEY" not in str(health) or "sk-" not in str(health)


async def test_files_where_the_engine_goes_are_kept_and_every_call_and_the_health_report_say_why(home: Path) -> None:
    """A knowledge base's working directory given as WORKING_DIR's parent: its folders sit where the
    engine's data directory goes.  Nothing is deleted; the model reads what to do; the server serves on."""
    theirs = home / "kbs" / "engine" / "data"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("kept")
    async with running_server(home, WORKING_DIR=str(home / "kbs"), LIGHTRAG_MCP_DEFAULT_STORAGE="engine") as client:
        for _ in range(2):
            error = error_of(await client.call("lightrag_query", {"query": "What is here?"}))
            assert error["error_code"] == "STORAGE_ERROR" and not error["retryable"], error
            assert "WORKING_DIR/engine holds files that are not the engine's data directory" in error["error_message"]
            assert str(home) not in str(error)
        health = await client.health()
        assert health["status"] == "degraded" and health["components"]["storage"]["engine"]["up"] is False
        assert sum("WORKING_DIR/engine holds files" in note for note in health["notes"]) == 1  # said once
    assert (theirs / "notes.txt").read_text() == "kept" and sorted(p.name for p in (home / "kbs" / "engine").iterdir()) == ["data"]


# ------------------------------------------------------------------------- rate limits


async def test_rate_limit_refuses_the_extra_call_of_one_workspace_only(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_RATE_LIMIT_PER_MINUTE="3") as client:
        await client.wait_ready()  # health checks are exempt from the limit
        for _ in range(3):
            result = await client.call_as("carol", "lightrag_list_documents", {})
            assert not result.is_error, result.content
        limited = error_of(await client.call_as("carol", "lightrag_list_documents", {}))
        assert limited["error_code"] == "RATE_LIMITED" and limited["retryable"] is True
        assert limited["error_details"]["limit_per_minute"] == 3
        other = await client.call_as("dave", "lightrag_list_documents", {})
        assert not other.is_error, other.content  # another workspace is unaffected
        health = await client.call_as("carol", "lightrag_health_check", {})
        assert not health.is_error  # still answerable


# ------------------------------------------------------------------------------ audit


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_uploads_and_failed_uploads_are_audited_without_their_content(home: Path) -> None:
    async with running_server(home) as client:
        ok = await client.call(
            "upload_to_lightrag", {"filename": "notes.md", "content": b64(DOC_A), "mimeType": "text/markdown"}
        )
        assert not ok.is_error, ok.content
        failed = error_of(
            await client.call("upload_to_lightrag", {"filename": "broken.pdf", "content": "%%%not-base64%%%"})
        )
        await client.call("lightrag_query", {"query": "Alice"})  # read-only: not audited
        pid = await client.worker_pid()
        os.kill(pid, signal.SIGKILL)  # the log is on disk: it survives the worker
        await client.wait_ready(not_pid=pid)
        audit = (await stats(client, stat_categories=["audit"]))["audit"]
        entries = audit["entries"]
        assert [entry["tool"] for entry in entries] == ["upload_to_lightrag", "upload_to_lightrag"]
        newest, oldest = entries
        assert newest["result"] == failed["error_code"] and newest["correlation_id"] == failed["correlation_id"]
        assert oldest["result"] == "ok" and oldest["outcome"]["document_id"] == ok.structured_content["document_id"]
        assert oldest["arguments"]["filename"] == "notes.md" and oldest["user"] == "default"
        assert oldest["arguments"]["content"].startswith("<") and "ZEBRA" not in str(entries)  # sizes, never contents
        assert newest["ts"] >= oldest["ts"]


# ------------------------------------------------------------------------------ quotas


@pytest.fixture
async def worker_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A real worker state (engines, settings) in-process, with quotas of 2 documents and 4 KB."""
    from rag_worker.app import warm_up
    from rag_worker.context import WorkerRuntime

    monkeypatch.chdir(tmp_path)

    async def nothing(*_: Any) -> None:
        return None

    settings = load_settings(
        {
            "WORKING_DIR": str(tmp_path / "data"),
            "LIGHTRAG_MCP_MAX_DOCUMENTS": "2",
            "LIGHTRAG_MCP_MAX_STORAGE_MB": str(4096 / 2**20),
        }
    )
    state = WorkerRuntime(settings=settings, limiter=anyio.CapacityLimiter(2), notify=nothing, send_raw=nothing)
    async with anyio.create_task_group() as tg:
        await warm_up(state, lambda job: tg.start_soon(job))
        try:
            yield state
        finally:
            await state.close()
            tg.cancel_scope.cancel()


async def test_check_quota_refuses_documents_and_bytes_past_the_limits(worker_state: Any) -> None:
    from protocol.context import CallContext
    from rag_worker.context import RequestContext
    from rag_worker.operations.indexing import index_document
    from rag_worker.operations.limits import check_quota
    from rag_worker.storage.catalog import SourceDocument

    ctx = RequestContext(worker_state, "test", CallContext(workspace="quota_ws", correlation_id="c1"))
    ws = await worker_state.engines.get("quota_ws")
    await check_quota(ctx, ws, 1000)  # empty knowledge base: fine
    first = await index_document(ctx, SourceDocument("a.md", DOC_A, "text/markdown", 1500))
    await check_quota(ctx, ws, 1000)
    with pytest.raises(RagError) as too_big:
        await check_quota(ctx, ws, 3000)  # 1500 + 3000 bytes > 4 KB
    assert too_big.value.code == ErrorCode.QUOTA_EXCEEDED and "MB" in too_big.value.message
    await index_document(ctx, SourceDocument("b.md", DOC_B, "text/markdown", 1500))
    with pytest.raises(RagError) as too_many:
        await check_quota(ctx, ws, 10)  # a third document
    assert too_many.value.code == ErrorCode.QUOTA_EXCEEDED and too_many.value.details["max_documents"] == 2
    await check_quota(ctx, ws, 10, replacing=first["document_id"])  # a new version takes the old one's place


async def test_quotas_refuse_new_documents_through_the_server_but_allow_replacements(home: Path) -> None:
    def md(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    async def upload(client: Client, name: str, text: str, user: str = "quota-user") -> Any:
        return await client.call_as(user, "upload_to_lightrag", {"filename": name, "content": md(text), "mimeType": "text/markdown"})

    async with running_server(home, LIGHTRAG_MCP_MAX_DOCUMENTS="2", LIGHTRAG_MCP_MAX_STORAGE_MB="0.001") as client:
        assert not (await upload(client, "a.md", "# A\n\nAlpha.")).is_error
        assert not (await upload(client, "b.md", "# B\n\nBeta.")).is_error
        third = error_of(await upload(client, "c.md", "# C\n\nGamma."))
        assert third["error_code"] == "QUOTA_EXCEEDED" and "2" in third["error_message"]
        replaced = await upload(client, "a.md", "# A\n\nAlpha, second version.")
        assert not replaced.is_error and replaced.structured_content["action"] == "replaced"
        too_big = error_of(await upload(client, "a.md", "# A\n\n" + "x" * 2000))  # 0.001 MB = 1,048 bytes
        assert too_big["error_code"] == "QUOTA_EXCEEDED"
        batch = await client.call_as(
            "quota-user", "lightrag_batch_process", {"items": [{"item_type": "text", "content": "Delta.", "title": "d"}]}
        )
        assert batch.structured_content["results"][0]["error_code"] == "QUOTA_EXCEEDED"
        other = await upload(client, "c.md", "# C\n\nGamma.", user="someone-else")  # quotas are per workspace
        assert not other.is_error
        listed = await client.call_as("quota-user", "lightrag_list_documents", {})
        assert listed.structured_content["pagination"]["total_documents"] == 2  # nothing half-added
