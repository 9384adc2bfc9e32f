"""Listing and deleting documents through the real server (SPEC §4 Documents).

Bad inputs and what they get: a date that is not ISO 8601 or a start after the end →
INVALID_PARAMETER naming the field; limit over 200 → INVALID_PARAMETER (schema); an unknown
document id → DOCUMENT_NOT_FOUND (in failed_deletions, or as the error when it is the only
id); a delete while indexing runs → DELETION_FORBIDDEN, retryable, nothing deleted;
cascade_delete=false on the only source of an entity → DELETION_FORBIDDEN.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from protocol import methods as m
from tests.fixtures.documents import make_pdf
from tests.integration.harness import Client, error_of, running_server
from tests.integration.test_core_flow import upload

pytestmark = pytest.mark.anyio

REACTOR = (
    "The QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. "
    "Helena Vargas chose a molten salt design for the QUASAR-5521 reactor."
)
ZEBRA = (
    "The ZEBRA-7741 project was led by Helena Vargas at Acme Corporation in Berlin. "
    "Acme Corporation funded the ZEBRA-7741 project."
)
VISIT = "Acme Corporation funded the ZEBRA-7741 project."  # a sentence of ZEBRA: nothing of its own


def data_of(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


async def listing(client: Client, **arguments: Any) -> dict[str, Any]:
    return data_of(await client.call("lightrag_list_documents", arguments))


async def insert(client: Client, title: str, text: str, **extra: Any) -> dict[str, Any]:
    result = data_of(await client.call("lightrag_insert_text", {"text": text, "title": title, **extra}))
    assert result["status"] == "processed", result
    return result


async def entities_for(client: Client, query: str) -> dict[str, str]:
    """Entity name → description, as a local-mode context query retrieves them from the graph."""
    result = data_of(await client.call("lightrag_query", {"query": query, "mode": "local", "only_context": True}))
    return {entity["name"]: entity["description"] for entity in result["entities"]}


async def test_listing_filters_sorts_pages_and_counts(home: Path) -> None:
    async with running_server(home) as client:
        empty = await listing(client)
        assert empty["documents"] == [] and empty["statistics"]["total_documents"] == 0
        assert "no documents" in empty["message"]

        alpha = await upload(
            client,
            "alpha-notes.md",
            "# Alpha notes\n\nHelena Vargas reviewed the Lisbon budget with Acme Corporation.\n",
            "text/markdown",
            metadata={"tags": ["finance", "Quarterly"], "author": "Ann Lee"},
        )
        beta = await insert(
            client,
            "Beta report",
            "The ZEBRA-7741 project in Berlin was audited by Nimbus Council inspectors.",
            metadata={"source": "intranet"},
        )
        gamma = await upload(
            client,
            "gamma.pdf",
            make_pdf([REACTOR, "Appendix with the molten salt loop layout."]),
            "application/pdf",
            metadata={"author": "Zed"},
        )
        ids = {"alpha": alpha["document_id"], "beta": beta["document_id"], "gamma": gamma["document_id"]}

        everything = await listing(client)
        docs = everything["documents"]
        assert [d["id"] for d in docs] == [ids["gamma"], ids["beta"], ids["alpha"]]  # newest first
        by_id = {d["id"]: d for d in docs}
        assert by_id[ids["alpha"]]["metadata"] == {"tags": ["finance", "Quarterly"], "author": "Ann Lee"}
        assert (by_id[ids["gamma"]]["file_type"], by_id[ids["gamma"]]["mime_type"]) == ("pdf", "application/pdf")
        assert (by_id[ids["alpha"]]["file_type"], by_id[ids["beta"]]["file_type"]) == ("md", "txt")
        for doc in docs:
            assert doc["status"] == "processed" and doc["processed_at"] and doc["created_at"]
            assert doc["chunk_count"] >= 1 and doc["entity_count"] > 0 and doc["relationship_count"] >= 0
            assert doc["file_size"] > 0 and doc["track_id"] and doc["content_hash"] and doc["error_message"] is None
        assert by_id[ids["gamma"]]["entity_count"] == gamma["entities"]
        assert by_id[ids["gamma"]]["pages"] == 2
        stats = everything["statistics"]
        assert stats["total_documents"] == 3 and stats["by_status"] == {"processed": 3}
        assert stats["by_file_type"] == {"md": 1, "pdf": 1, "txt": 1}
        assert stats["processing_success_rate"] == 1.0
        assert everything["pagination"] == {
            "total_documents": 3,
            "offset": 0,
            "limit": 50,
            "current_page": 1,
            "total_pages": 1,
            "has_next": False,
            "has_previous": False,
        }

        names = [d["filename"] for d in (await listing(client, sort_by="filename", sort_order="asc"))["documents"]]
        assert names == ["alpha-notes.md", "Beta report.txt", "gamma.pdf"]  # case-insensitive
        sizes = [d["file_size"] for d in (await listing(client, sort_by="size"))["documents"]]
        assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
        oldest = await listing(client, sort_by="created_date", sort_order="asc")
        assert [d["id"] for d in oldest["documents"]] == [ids["alpha"], ids["beta"], ids["gamma"]]

        first = await listing(client, limit=2, sort_order="asc")
        second = await listing(client, limit=2, offset=2, sort_order="asc")
        assert [d["id"] for d in first["documents"] + second["documents"]] == [ids["alpha"], ids["beta"], ids["gamma"]]
        assert (first["pagination"]["current_page"], first["pagination"]["total_pages"]) == (1, 2)
        assert first["pagination"]["has_next"] and not first["pagination"]["has_previous"]
        assert second["pagination"]["current_page"] == 2 and second["pagination"]["has_previous"]
        assert not second["pagination"]["has_next"] and "offset 2" in first["message"]

        for needle, expected in [("quarterly", "alpha"), ("INTRANET", "beta"), ("zed", "gamma"), ("Gamma", "gamma")]:
            found = await listing(client, search_query=needle)
            assert [d["id"] for d in found["documents"]] == [ids[expected]], needle
            assert found["pagination"]["total_documents"] == 1 and found["statistics"]["total_documents"] == 3

        assert (await listing(client, status_filter="processed"))["pagination"]["total_documents"] == 3
        failed = await listing(client, status_filter="failed")
        assert failed["documents"] == [] and "No document matches" in failed["message"]

        today = datetime.now(UTC).date()
        around = {"start_date": str(today - timedelta(days=1)), "end_date": str(today)}
        assert (await listing(client, date_range=around))["pagination"]["total_documents"] == 3
        since_now = {"start_date": datetime.now(UTC).isoformat()}
        assert (await listing(client, date_range=since_now))["pagination"]["total_documents"] == 0
        past = {"start_date": "2000-01-01", "end_date": "2000-12-31T23:59:59Z"}
        assert (await listing(client, date_range=past))["documents"] == []

        bad_date = error_of(await client.call("lightrag_list_documents", {"date_range": {"start_date": "yesterday"}}))
        assert bad_date["error_code"] == "INVALID_PARAMETER" and "date_range.start_date" in bad_date["error_message"]
        reversed_range = {"start_date": "2025-02-01", "end_date": "2025-01-01"}
        bad_range = error_of(await client.call("lightrag_list_documents", {"date_range": reversed_range}))
        assert bad_range["error_code"] == "INVALID_PARAMETER"
        too_many = error_of(await client.call("lightrag_list_documents", {"limit": 500}))
        assert too_many["error_code"] == "INVALID_PARAMETER" and "limit" in too_many["error_message"]


async def test_cascade_delete_removes_only_what_the_document_alone_supported(home: Path) -> None:
    data_dir = home / "data"
    on_files = {"WORKING_DIR": str(data_dir), "LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}  # it edits the JSON files
    async with running_server(home, **on_files) as client:
        reactor = await insert(client, "reactor.txt", REACTOR)
        zebra = await insert(client, "zebra.txt", ZEBRA)
        before = await entities_for(client, "QUASAR-5521 reactor, Helena Vargas, Lisbon")
        assert "QUASAR-5521" in before and "molten salt" in before["Helena Vargas"]

        result = data_of(
            await client.call(
                "lightrag_delete_documents",
                {
                    "document_ids": [reactor["document_id"], "doc-0000-unknown"],
                    "delete_options": {"create_backup": True},
                },
            )
        )
        assert result["deleted_documents"] == [reactor["document_id"]]
        assert [(f["document_id"], f["error_code"]) for f in result["failed_deletions"]] == [
            ("doc-0000-unknown", "DOCUMENT_NOT_FOUND")
        ]
        cascade = result["cascade_deletions"]
        assert cascade["chunks_deleted"] == reactor["chunks"]
        assert cascade["entities_deleted"] >= 2 and cascade["entities_rebuilt"] >= 1  # QUASAR-5521, Lisbon / Vargas
        assert "QUASAR-5521" in result["documents"][0]["deleted_entity_names"]
        assert "Helena Vargas" in result["documents"][0]["rebuilt_entity_names"]
        assert "some documents were not deleted" in result["message"].lower()

        after = await entities_for(client, "QUASAR-5521 reactor, Helena Vargas, Lisbon")
        assert "QUASAR-5521" not in after and "Lisbon" not in after
        assert "Helena Vargas" in after and "molten salt" not in after["Helena Vargas"]
        assert "ZEBRA-7741" in after["Helena Vargas"]
        remaining = await listing(client)
        assert [d["id"] for d in remaining["documents"]] == [zebra["document_id"]]

        backup = result["backup_info"]
        assert backup["backup_location"] == f"backups/{backup['backup_id']}.json"
        saved = data_dir / "default" / backup["backup_location"]
        assert saved.stat().st_size == backup["backup_size"]
        content = json.loads(saved.read_text())
        [document] = content["documents"]
        assert document["document_id"] == reactor["document_id"] and document["content"] == REACTOR
        assert document["catalog_record"]["filename"] == "reactor.txt" and document["chunks"]
        quasar = next(e for e in document["entities"] if e["name"] == "QUASAR-5521")
        vargas = next(e for e in document["entities"] if e["name"] == "Helena Vargas")
        assert quasar["only_this_document"] and not vargas["only_this_document"]
        assert str(data_dir) not in result["message"]

        again = await insert(client, "reactor.txt", REACTOR)
        assert again["action"] == "indexed" and again["document_id"] == reactor["document_id"]
        assert "QUASAR-5521" in await entities_for(client, "QUASAR-5521 reactor, Helena Vargas, Lisbon")

        unknown = error_of(await client.call("lightrag_delete_documents", {"document_ids": ["doc-0000-unknown"]}))
        assert unknown["error_code"] == "DOCUMENT_NOT_FOUND" and not unknown["retryable"]
        assert unknown["error_details"]["failed_deletions"][0]["document_id"] == "doc-0000-unknown"


async def test_without_cascade_a_document_that_alone_supports_an_entity_is_kept(home: Path) -> None:
    async with running_server(home) as client:
        reactor = await insert(client, "reactor.txt", REACTOR)
        await insert(client, "zebra.txt", ZEBRA)
        visit = await insert(client, "visit.txt", VISIT)
        keep = {"cascade_delete": False}

        refused = error_of(
            await client.call(
                "lightrag_delete_documents", {"document_ids": [reactor["document_id"]], "delete_options": keep}
            )
        )
        assert refused["error_code"] == "DELETION_FORBIDDEN" and "QUASAR-5521" in refused["error_message"]
        assert len((await listing(client))["documents"]) == 3

        by_name = data_of(
            await client.call("lightrag_delete_documents", {"document_ids": ["visit.txt"], "delete_options": keep})
        )
        assert by_name["deleted_documents"] == [visit["document_id"]]
        assert by_name["cascade_deletions"]["entities_deleted"] == 0
        assert by_name["cascade_deletions"]["relationships_deleted"] == 0
        assert {"Acme Corporation", "ZEBRA-7741"} <= set(await entities_for(client, "Acme Corporation ZEBRA-7741"))


def long_text(paragraphs: int) -> str:
    """Text with many distinct names, so indexing it keeps the pipeline busy for a while."""
    return "\n\n".join(
        f"Director Marta Quill{index} of Ostrava Works{index} met Professor Ivo Brandt{index} in Kestrel Harbor{index}. "
        f"The Orion-{index:04d} turbine built by Ostrava Works{index} was tested in Kestrel Harbor{index}."
        for index in range(paragraphs)
    )


async def test_deleting_while_indexing_runs_is_refused_clearly_and_works_afterwards(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="0.5") as client:
        queued = data_of(await client.call("lightrag_insert_text", {"text": long_text(150), "title": "long.txt"}))
        assert queued["status"] != "processed", "indexing finished too fast to test a delete while it runs"
        busy = error_of(await client.call("lightrag_delete_documents", {"document_ids": [queued["document_id"]]}))
        assert busy["error_code"] == "DELETION_FORBIDDEN" and busy["retryable"]
        assert "lightrag_get_status" in busy["error_message"]
        listed = await listing(client)
        assert [d["id"] for d in listed["documents"]] == [queued["document_id"]]  # nothing was deleted

        with anyio.fail_after(300):
            while (await listing(client))["documents"][0]["status"] != "processed":
                await anyio.sleep(0.5)
        done = data_of(await client.call("lightrag_delete_documents", {"document_ids": [queued["document_id"]]}))
        if done["deleting_documents"]:  # its 150 paragraphs outlast the 0.5 s this server waits: it goes on
            assert done["deleting_documents"] == [queued["document_id"]] and "Still deleting" in done["message"]
        else:
            assert done["deleted_documents"] == [queued["document_id"]]
            assert done["cascade_deletions"]["entities_deleted"] > 0
        with anyio.fail_after(120):
            while (await listing(client))["statistics"]["total_documents"]:
                await anyio.sleep(0.5)
        assert "Orion-0001" not in await entities_for(client, "Orion-0001 turbine, Ostrava Works1")


@contextlib.asynccontextmanager
async def in_process_worker(data_dir: Path, workspace: str, wait_seconds: str) -> AsyncIterator[Any]:
    """The worker's own state and handlers in this process (real LightRAG), for situations the
    server cannot be steered into from outside, such as a document nothing is indexing."""
    from config.settings import load_settings
    from protocol.context import CallContext
    from rag_worker.app import warm_up
    from rag_worker.context import RequestContext, WorkerRuntime

    async def ignore(*_: Any) -> None:
        return None

    settings = load_settings({"WORKING_DIR": str(data_dir), "LIGHTRAG_MCP_WAIT_SECONDS": wait_seconds})
    state = WorkerRuntime(settings, anyio.CapacityLimiter(2), ignore, ignore)
    async with anyio.create_task_group() as background:
        await warm_up(state, background.start_soon)  # as the worker server does
        try:
            yield RequestContext(state, 1, CallContext(workspace=workspace, correlation_id="test"))
        finally:
            await state.close()


def hold_deletes(ws: Any, release: anyio.Event, started: list[str]) -> None:
    """LightRAG's deletes in `ws` wait for `release` (as one at 5,000 documents takes a minute),
    60 s at most: a failed test's shutdown then waits for the delete only that long; the ids they
    were asked for are appended to `started`."""
    original = ws.rag.adelete_by_doc_id

    async def held_delete(doc_id: str, **kwargs: Any) -> Any:
        started.append(doc_id)
        with anyio.move_on_after(60):
            await release.wait()
        return await original(doc_id, **kwargs)

    ws.rag.adelete_by_doc_id = held_delete


async def indexed_report(ctx: Any) -> tuple[Any, dict[str, Any]]:
    """The workspace, and REACTOR uploaded as 'report.txt' once it is indexed (what a replacement replaces)."""
    from rag_worker.handlers.ingest import insert_text

    first = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": REACTOR, "title": "report.txt"}))
    ws = await ctx.state.engines.get(ctx.workspace)
    await until_processed(ws, first["document_id"], within=60)
    return ws, first


async def until_processed(ws: Any, doc_id: str, within: float) -> None:
    """Return once the document is indexed (its status row says processed); fail after `within` s."""
    with anyio.fail_after(within):
        while ((await ws.status_row(doc_id)) or {}).get("status") != "processed":
            await anyio.sleep(0.1)


def arriving(ctx: Any) -> Any:
    """`ctx` as a call arriving now (a handler's waits are budgeted from a call's arrival)."""
    return dataclasses.replace(ctx, arrived=time.monotonic())


async def test_force_delete_removes_a_document_stuck_in_pending_while_nothing_indexes(tmp_path: Path) -> None:
    """A queued document that no indexing run works on (what a crash can leave) is refused
    without force_delete and removed with it."""
    from protocol import ErrorCode, RagError
    from rag_worker.handlers.documents import delete_documents

    async with in_process_worker(tmp_path, "force_delete_test", wait_seconds="0.5") as ctx:
        ws = await ctx.state.engines.get(ctx.workspace)
        await ws.rag.apipeline_enqueue_documents(REACTOR, ids=["doc-stuck"], file_paths=["stuck.txt"])  # not processed
        with pytest.raises(RagError) as refused:
            await delete_documents(arriving(ctx), m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["doc-stuck"]}))
        assert refused.value.code == ErrorCode.DELETION_FORBIDDEN and "force_delete" in refused.value.suggested_action
        assert await ws.rag.doc_status.get_by_id("doc-stuck") is not None

        arguments = {"document_ids": ["doc-stuck"], "delete_options": {"force_delete": True}}
        result = await delete_documents(arriving(ctx), m.DELETE_DOCUMENTS.with_defaults(arguments))
        assert result["deleted_documents"] == ["doc-stuck"] and result["failed_deletions"] == []
        assert await ws.rag.doc_status.get_by_id("doc-stuck") is None
        assert await ws.rag.full_docs.get_by_id("doc-stuck") is None


async def test_a_delete_that_arrives_while_indexing_runs_waits_for_it_then_deletes(tmp_path: Path) -> None:
    from rag_worker.handlers.documents import delete_documents

    async with in_process_worker(tmp_path, "delete_waits_test", wait_seconds="30") as ctx:
        ws = await ctx.state.engines.get(ctx.workspace)
        await ws.rag.apipeline_enqueue_documents(long_text(40), ids=["doc-busy"], file_paths=["busy.txt"])
        ctx.state.engines.start_processing(ws)
        result = await delete_documents(arriving(ctx), m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["doc-busy"]}))
        assert result["deleted_documents"] == ["doc-busy"]
        assert result["cascade_deletions"]["chunks_deleted"] > 0  # it was indexed before it was deleted
        assert result["cascade_deletions"]["entities_deleted"] > 0
        assert await ws.rag.doc_status.get_by_id("doc-busy") is None


async def test_a_delete_cut_short_by_a_killed_worker_is_finished_when_the_workspace_reopens(home: Path) -> None:
    """What a SIGKILL in the middle of LightRAG's final save leaves: the delete written down in
    the workspace's journal, the document's passages already gone from one store, its status
    still 'processed'.  The next worker finishes that delete in the background as the workspace
    opens: the document is then gone everywhere, the other document is untouched and found."""
    from rag_worker.storage.journals import DeleteJournal

    data_dir = home / "data"
    on_files = {"WORKING_DIR": str(data_dir), "LIGHTRAG_MCP_DEFAULT_STORAGE": "files"}  # it edits the JSON files
    async with running_server(home, **on_files) as client:
        reactor = await insert(client, "reactor.txt", REACTOR)
        zebra = await insert(client, "zebra.txt", ZEBRA)
    workspace = data_dir / "default"
    statuses = json.loads((workspace / "kv_store_doc_status.json").read_text())
    reactor_chunks = statuses[reactor["document_id"]]["chunks_list"]
    chunks_file = workspace / "kv_store_text_chunks.json"
    chunks = json.loads(chunks_file.read_text())
    assert set(reactor_chunks) <= set(chunks)
    chunks_file.write_text(json.dumps({key: value for key, value in chunks.items() if key not in reactor_chunks}))
    DeleteJournal(workspace).begin(reactor["document_id"])

    async with running_server(home, **on_files) as client:
        with anyio.fail_after(30):
            while [d["id"] for d in (await listing(client))["documents"]] != [zebra["document_id"]]:
                await anyio.sleep(0.2)
        assert DeleteJournal(workspace).pending() == []
        gone = error_of(await client.call("lightrag_delete_documents", {"document_ids": [reactor["document_id"]]}))
        assert gone["error_code"] == "DOCUMENT_NOT_FOUND"
        after = await entities_for(client, "QUASAR-5521 reactor, Helena Vargas, Lisbon")
        assert "QUASAR-5521" not in after and "ZEBRA-7741" in after["Helena Vargas"]
        found = data_of(await client.call("lightrag_query", {"query": "Who led the ZEBRA-7741 project?", "mode": "naive"}))
        assert any(source["filename"] == "zebra.txt" for source in found["sources"])

        again = await insert(client, "reactor.txt", REACTOR)  # the same content indexes afresh
        assert again["document_id"] == reactor["document_id"]
        assert "QUASAR-5521" in await entities_for(client, "QUASAR-5521 reactor, Helena Vargas, Lisbon")


async def test_a_delete_longer_than_the_wait_answers_in_time_and_finishes_in_the_background(tmp_path: Path) -> None:
    """At thousands of documents LightRAG's cascade outlasts a client's timeout (69 s for one
    document at 5,000).  Held here until released: the call answers after LIGHTRAG_MCP_WAIT_SECONDS
    naming what is still being deleted, a second call for it answers at once that it is being
    deleted (no wait, no second delete), and the delete then finishes by itself."""
    from protocol import ErrorCode, RagError
    from rag_worker.handlers.documents import delete_documents
    from rag_worker.handlers.ingest import insert_text

    release = anyio.Event()
    deletes: list[str] = []
    async with in_process_worker(tmp_path, "slow_delete_test", wait_seconds="0.5") as first:
        ws = await first.state.engines.get(first.workspace)
        await ws.rag.apipeline_enqueue_documents(
            [REACTOR, ZEBRA, VISIT + " In Lisbon."], ids=["doc-slow", "doc-kept", "doc-next"],
            file_paths=["slow.txt", "kept.txt", "next.txt"],
        )
        await ws.rag.apipeline_process_enqueue_documents()
        hold_deletes(ws, release, deletes)

        both = m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["doc-slow", "doc-next"]})
        with anyio.fail_after(10):
            answered = await delete_documents(arriving(first), both)
        assert answered["deleted_documents"] == [] and answered["failed_deletions"] == []
        assert answered["deleting_documents"] == ["doc-slow", "doc-next"]
        assert "Still deleting 2 document(s): 'slow.txt', 'next.txt'" in answered["message"], answered["message"]
        assert await ws.rag.doc_status.get_by_id("doc-slow") is not None  # listed until the delete ends
        # Both written down: a worker stopped now (a recycle) has both finished when it reopens.
        assert set(ws.deletes.pending()) == {"doc-slow", "doc-next"}

        arguments = m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["doc-slow"]})

        with anyio.fail_after(5):  # not queued behind the first call's run
            again = await delete_documents(arriving(first), arguments)
        assert again["deleting_documents"] == ["doc-slow"] and deletes == ["doc-slow"]

        # An upload meanwhile waits for the delete only as long as it may take, and says why.
        new_text = m.INSERT_TEXT.with_defaults({"text": VISIT + " Extra words.", "title": "later.txt"})
        with anyio.fail_after(10), pytest.raises(RagError) as busy:
            await insert_text(arriving(first), new_text)
        assert busy.value.code == ErrorCode.WORKSPACE_BUSY and busy.value.retryable
        assert "'slow.txt'" in busy.value.message and "lightrag_list_documents" in (busy.value.suggested_action or "")

        release.set()
        with anyio.fail_after(60):
            while await ws.rag.doc_status.get_by_id("doc-next") is not None or ws.deleting:
                await anyio.sleep(0.1)
        assert await ws.rag.doc_status.get_by_id("doc-slow") is None and not ws.deletes.pending()
        queued = await insert_text(arriving(first), new_text)  # once they are gone, uploads are taken again
        assert queued["document_id"] and not ws.deleting
        assert await ws.rag.doc_status.get_by_id("doc-kept") is not None
        with pytest.raises(RagError) as gone:
            await delete_documents(arriving(first), arguments)
        assert gone.value.code == ErrorCode.DOCUMENT_NOT_FOUND


async def test_a_delete_a_stopped_worker_left_is_finished_in_the_background_of_the_next_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 10,000 documents LightRAG's cascade takes a minute, which the first call after a restart
    waited for when the workspace opened.  Held here until released: the workspace opens at once;
    meanwhile the document is listed, a delete call for it answers that it is being deleted (no
    second delete), an upload says it waits for the delete, and a planned recycle waits too; then
    the delete finishes by itself and the same text can be indexed afresh."""
    from lightrag import LightRAG

    from protocol import ErrorCode, RagError
    from rag_worker.handlers.documents import delete_documents, list_documents
    from rag_worker.handlers.ingest import insert_text
    from rag_worker.storage.journals import DeleteJournal

    async with in_process_worker(tmp_path, "reopen_delete_test", wait_seconds="1") as ctx:
        ws, first = await indexed_report(ctx)
        kept = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": ZEBRA, "title": "kept.txt"}))
        await until_processed(ws, kept["document_id"], within=60)
    doc_id = first["document_id"]
    DeleteJournal(tmp_path / "reopen_delete_test").begin(doc_id)  # what a worker killed mid-delete leaves

    release, deletes = anyio.Event(), []
    original = LightRAG.adelete_by_doc_id

    async def held_delete(rag: Any, requested: str, **kwargs: Any) -> Any:
        deletes.append(requested)
        with anyio.move_on_after(60):
            await release.wait()
        return await original(rag, requested, **kwargs)

    monkeypatch.setattr(LightRAG, "adelete_by_doc_id", held_delete)
    async with in_process_worker(tmp_path, "reopen_delete_test", wait_seconds="1") as ctx:
        with anyio.fail_after(20):  # opening does not wait for the delete
            ws = await ctx.state.engines.get(ctx.workspace)
            listed = await list_documents(arriving(ctx), m.LIST_DOCUMENTS.with_defaults({}))
        assert ws.deleting == {doc_id: "report.txt"} and ctx.state.engines.indexing()
        assert sorted(d["id"] for d in listed["documents"]) == sorted([doc_id, kept["document_id"]])  # until it ends
        assert listed["message"].endswith(" Being deleted in the background, listed until that ends: 'report.txt'.")

        with anyio.fail_after(5):
            again = await delete_documents(arriving(ctx), m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["report.txt"]}))
        assert again["deleting_documents"] == [doc_id] and deletes == [doc_id]
        assert "Still deleting 1 document(s): 'report.txt'" in again["message"]

        same_text = m.INSERT_TEXT.with_defaults({"text": REACTOR, "title": "report-again.txt"})
        with anyio.fail_after(10), pytest.raises(RagError) as busy:
            await insert_text(arriving(ctx), same_text)
        assert busy.value.code == ErrorCode.WORKSPACE_BUSY and "'report.txt'" in busy.value.message

        release.set()
        with anyio.fail_after(60):
            while ws.deleting:
                await anyio.sleep(0.1)
        assert await ws.status_row(doc_id) is None and not ws.deletes.pending() and deletes == [doc_id]
        assert await ws.status_row(kept["document_id"]) is not None
        afresh = await insert_text(arriving(ctx), same_text)
        await until_processed(ws, afresh["document_id"], within=60)


async def test_a_replacing_upload_answers_while_its_old_version_is_deleted_in_the_background(tmp_path: Path) -> None:
    """LightRAG's delete of the old version takes a minute at 5,000 documents (held here until
    released): the upload answers in time that the new version waits for it, other uploads are
    queued and indexed meanwhile, and the new version is indexed once the old one is gone."""
    from rag_worker.handlers.ingest import insert_text
    from rag_worker.operations.reading import document_text

    release, deletes = anyio.Event(), []
    async with in_process_worker(tmp_path, "replace_background_test", wait_seconds="1") as ctx:
        ws, first = await indexed_report(ctx)
        hold_deletes(ws, release, deletes)

        replacing = m.INSERT_TEXT.with_defaults({"text": ZEBRA, "title": "report.txt"})
        with anyio.fail_after(10):
            answered = await insert_text(arriving(ctx), replacing)
        assert answered["document_id"] == first["document_id"] and answered["action"] == "replaced"
        assert answered["status"] == "pending" and deletes == [first["document_id"]]
        assert answered["message"].startswith("'report.txt' is queued to replace its previous version, which is being "
                                              "deleted first"), answered["message"]
        assert ws.deletes.pending() == [first["document_id"]]  # a stopped worker finishes it (next test)
        assert (await ws.status_row(first["document_id"]) or {})["content_summary"].startswith("The ZEBRA")

        other = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": VISIT, "title": "visit.txt"}))
        assert other["action"] == "indexed"  # not held up by the replacement's delete
        await until_processed(ws, other["document_id"], within=60)
        assert ((await ws.status_row(first["document_id"])) or {}).get("status") == "pending"

        release.set()
        await until_processed(ws, first["document_id"], within=90)
        text = await document_text(ws, first["document_id"])
        assert "ZEBRA-7741" in text and "QUASAR" not in text and not ws.deletes.pending()
        record = await ws.catalog.get(first["document_id"]) or {}
        assert record["filename"] == "report.txt" and record["track_id"] == answered["track_id"]


async def test_a_document_deleted_while_its_new_version_waits_goes_with_both_versions(tmp_path: Path) -> None:
    """"Delete it" right after a replacing upload (the old version's delete held): the delete
    answers at once, the queued new version is dropped, and once the old version is gone nothing
    of the document is left: no status row, no record, no queued file, nothing written down."""
    from rag_worker.handlers.documents import delete_documents
    from rag_worker.handlers.ingest import insert_text

    release, deletes = anyio.Event(), []
    async with in_process_worker(tmp_path, "replace_then_delete_test", wait_seconds="1") as ctx:
        ws, first = await indexed_report(ctx)
        hold_deletes(ws, release, deletes)
        await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": ZEBRA, "title": "report.txt"}))

        with anyio.fail_after(10):
            answered = await delete_documents(arriving(ctx), m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["report.txt"]}))
        assert answered["deleted_documents"] == [first["document_id"]] and answered["failed_deletions"] == []
        assert ws.intake.get(first["document_id"]) is None

        release.set()
        with anyio.fail_after(60):
            while await ws.status_row(first["document_id"]) is not None or ws.intake.removing:
                await anyio.sleep(0.1)
        assert await ws.catalog.get(first["document_id"]) is None and not ws.deletes.pending()
        assert not list((tmp_path / "replace_then_delete_test" / "intake").glob("*.json"))


async def test_a_replacement_cut_short_by_a_stopped_worker_is_finished_when_the_workspace_reopens(tmp_path: Path) -> None:
    """A worker stopped while the old version waited to be deleted (here: nothing ever started
    the delete) leaves the delete written down and the new version queued: the next opening
    answers at once, deletes the old version in the background and indexes the new one."""
    from rag_worker.handlers.documents import list_documents
    from rag_worker.handlers.ingest import insert_text
    from rag_worker.operations.reading import document_text

    async with in_process_worker(tmp_path, "replace_reopen_test", wait_seconds="0.5") as ctx:
        ws, first = await indexed_report(ctx)
        ctx.state.engines.start_processing = lambda _: None  # the worker stops before its background work starts
        answered = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": ZEBRA, "title": "report.txt"}))
        assert answered["action"] == "replaced" and answered["status"] == "pending"

    async with in_process_worker(tmp_path, "replace_reopen_test", wait_seconds="1") as ctx:
        with anyio.fail_after(10):
            listed = await list_documents(arriving(ctx), m.LIST_DOCUMENTS.with_defaults({}))
        assert [doc["filename"] for doc in listed["documents"]] == ["report.txt"]
        ws = await ctx.state.engines.get(ctx.workspace)
        await until_processed(ws, first["document_id"], within=90)
        text = await document_text(ws, first["document_id"])
        assert "ZEBRA-7741" in text and "QUASAR" not in text and not ws.deletes.pending()
        assert not list((tmp_path / "replace_reopen_test" / "intake").glob("*.json"))
        record = await ws.catalog.get(first["document_id"]) or {}
        assert record["track_id"] == answered["track_id"]


def count_status_reads(ws: Any) -> list[str]:
    """The names of `ws`'s doc-status lookups from now on (a round trip each on the engine)."""
    reads: list[str] = []
    for name in ("get_by_id", "get_doc_by_content_hash"):
        original = getattr(ws.rag.doc_status, name)

        async def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            reads.append(_name)
            return await _original(*args, **kwargs)

        setattr(ws.rag.doc_status, name, counted)
    return reads


async def test_a_new_document_is_queued_without_reading_status_rows_and_known_ones_are_still_found(tmp_path: Path) -> None:
    """An upload of a new document reads no status row (each is a round trip to the engine,
    10-30 ms while LightRAG indexes at 10,000 documents); what the workspace held when it
    opened, and what was handed over since, is still found: the same file again is already
    indexed, its text under another name is told apart, and new text under its name replaces it."""
    from rag_worker.handlers.ingest import insert_text

    async with in_process_worker(tmp_path, "known_documents_test", wait_seconds="0") as ctx:
        ws, first = await indexed_report(ctx)
        assert ws.known is not None  # the embedded engine's rows are a round trip away
        reads = count_status_reads(ws)
        new = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": VISIT, "title": "visit.txt"}))
        assert new["action"] == "indexed" and reads == []
        again = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": REACTOR, "title": "report.txt"}))
        assert again["action"] == "already_indexed" and "get_by_id" in reads
        await until_processed(ws, new["document_id"], within=60)  # nothing in flight when the worker stops

    async with in_process_worker(tmp_path, "known_documents_test", wait_seconds="0") as ctx:
        ws = await ctx.state.engines.get(ctx.workspace)
        copy = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": REACTOR, "title": "copy.txt"}))
        assert copy["action"] == "indexed" and copy["content_hash"] != first["content_hash"]  # headed by its name
        replaced = await insert_text(arriving(ctx), m.INSERT_TEXT.with_defaults({"text": ZEBRA, "title": "report.txt"}))
        assert replaced["document_id"] == first["document_id"] and replaced["action"] == "replaced"
        await until_processed(ws, copy["document_id"], within=60)
        await until_processed(ws, first["document_id"], within=90)
