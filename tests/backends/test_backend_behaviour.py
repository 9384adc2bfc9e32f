"""The same behaviour on every storage configuration (issue 7): the embedded default (JSON,
NanoVectorDB, NetworkX), PostgreSQL for everything (PGKVStorage, PGVectorStorage with pgvector,
PGDocStatusStorage, PGTableGraphStorage), and Redis KV/doc status with Milvus vectors and the
NetworkX graph.  The real server runs over stdio with only LightRAG's storage variables changed;
each test checks that the data really landed in the configured server (rows, keys, vectors) and
not in local files.

Bad inputs and what they get here: deleting another user's document id → DOCUMENT_NOT_FOUND
(the other user's document stays).
"""

from __future__ import annotations

import base64
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.backends.conftest import Backend
from tests.fixtures.documents import make_pdf
from tests.integration.harness import Client, error_of, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.backends]

MODES = ["naive", "local", "mix"]
REACTOR_PAGES = [
    "Annual engineering review. This report covers maintenance schedules, staffing and safety drills "
    "across all sites. Routine inspections found no defects in the cooling loops.",
    "The QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. Helena Vargas chose a molten "
    "salt design because it runs at atmospheric pressure.",
]
ZEBRA_MD = (
    "# Zebra Project\n\nThe ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin.\n\n"
    "## Budget\n\nThe ZEBRA-7741 budget was 42 million euros, approved by the Nimbus Council.\n"
)
REACTOR_TEXT = (
    "The QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. "
    "Helena Vargas chose a molten salt design for the QUASAR-5521 reactor."
)
ZEBRA_TEXT = (
    "The ZEBRA-7741 project was led by Helena Vargas at Acme Corporation in Berlin. "
    "Acme Corporation funded the ZEBRA-7741 project."
)
# Local files of LightRAG's embedded storages (in the workspace directory).
LOCAL_KV = "kv_store_doc_status.json"
LOCAL_VECTORS = "vdb_chunks.json"
LOCAL_GRAPH = "graph_chunk_entity_relation.graphml"


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def server_env(home: Path, backend: Backend, **extra: str) -> dict[str, str]:
    return {"WORKING_DIR": str(home / "data"), "LIGHTRAG_MCP_WAIT_SECONDS": "180", **backend.env, **extra}


async def ok(client: Client, tool: str, arguments: dict[str, Any], user: str | None = None) -> dict[str, Any]:
    result = await (client.call_as(user, tool, arguments) if user else client.call(tool, arguments))
    assert not result.is_error, (tool, result.content)
    assert result.structured_content is not None
    return result.structured_content


async def upload(
    client: Client, filename: str, data: bytes | str, mime: str = "text/markdown", user: str | None = None
) -> dict[str, Any]:
    arguments = {"filename": filename, "content": b64(data), "mimeType": mime}
    return await ok(client, "upload_to_lightrag", arguments, user)


async def processed(
    client: Client, filename: str, data: bytes | str, mime: str = "text/markdown", user: str | None = None
) -> dict[str, Any]:
    result = await upload(client, filename, data, mime, user)
    assert result["status"] == "processed", result
    return result


async def sources(client: Client, query: str, mode: str, user: str | None = None) -> list[dict[str, Any]]:
    return (await ok(client, "lightrag_query", {"query": query, "mode": mode}, user))["sources"]


async def entity_names(client: Client, query: str, search_type: str = "exact", user: str | None = None) -> list[str]:
    arguments = {"query": query, "search_options": {"search_type": search_type}}
    return [entity["name"] for entity in (await ok(client, "lightrag_search_entities", arguments, user))["entities"]]


async def listed(client: Client, user: str | None = None) -> dict[str, dict[str, Any]]:
    documents = (await ok(client, "lightrag_list_documents", {"limit": 200}, user))["documents"]
    return {document["id"]: document for document in documents}


async def wait_processed(client: Client, track_id: str, timeout: float = 300) -> dict[str, Any]:
    """The document of `track_id` once it is processed or failed (polling lightrag_get_status)."""
    with anyio.fail_after(timeout):
        while True:
            status = await ok(client, "lightrag_get_status", {"track_id": track_id})
            document = status["documents"][0]
            if document["status"] in {"processed", "failed"}:
                return document
            await anyio.sleep(0.5)


def local_files(home: Path) -> set[str]:
    return {path.name for path in (home / "data").rglob("*") if path.is_file()}


def check_placement(home: Path, backend: Backend) -> None:
    """The data is where the configuration says: in the server (counted there) or in local files."""
    files = local_files(home)
    stored = backend.stored(home / "data")
    if backend.name == "files":
        assert {LOCAL_KV, LOCAL_VECTORS, LOCAL_GRAPH} <= files, files
    elif backend.name in {"engine", "postgres"}:
        assert not files & {LOCAL_KV, LOCAL_VECTORS, LOCAL_GRAPH}, files  # nothing fell back to local files
        assert all(count > 0 for count in stored.values()), stored
    else:
        assert LOCAL_GRAPH in files and not files & {LOCAL_KV, LOCAL_VECTORS}, files
        assert stored["redis_keys"] > 0 and stored["milvus_vectors"] > 0, stored


async def test_upload_query_deduplicate_and_replace(home: Path, backend: Backend) -> None:
    async with running_server(home, None, None, **server_env(home, backend)) as client:
        pdf = await processed(client, "reactor-review.pdf", make_pdf(REACTOR_PAGES, title="Review"), "application/pdf")
        assert pdf["action"] == "indexed" and pdf["pages"] == 2 and pdf["entities"] > 0 and pdf["relations"] > 0
        md = await processed(client, "zebra.md", ZEBRA_MD)
        check_placement(home, backend)
        for mode in MODES:
            reactor = await sources(client, "Who commissioned the QUASAR-5521 reactor?", mode)
            hits = [s for s in reactor if "Helena Vargas" in s["content"]]
            assert hits and hits[0]["filename"] == "reactor-review.pdf", (mode, reactor)
            assert hits[0]["document_id"] == pdf["document_id"] and 0 < hits[0]["relevance_score"] <= 1
            zebra = await sources(client, "Who led the ZEBRA-7741 project?", mode)
            hits = [s for s in zebra if "Alice Johnson" in s["content"]]
            assert hits and hits[0]["filename"] == "zebra.md" and hits[0]["document_id"] == md["document_id"], (
                mode,
                zebra,
            )

        again = await processed(client, "zebra.md", ZEBRA_MD)
        renamed = await processed(client, "zebra-copy.md", ZEBRA_MD)
        assert again["action"] == "already_indexed" and again["document_id"] == md["document_id"]
        # Another file whose text matches is a document of its own (identity is name + bytes).
        assert renamed["action"] == "indexed" and renamed["document_id"] != md["document_id"]
        await ok(client, "lightrag_delete_documents", {"document_ids": [renamed["document_id"]]})
        counts = (await ok(client, "lightrag_get_status", {}))["counts"]
        assert counts["processed"] == 2 and counts["failed"] == 0
        before = backend.stored(home / "data")

        replaced = await processed(client, "zebra.md", ZEBRA_MD.replace("Alice Johnson", "Bruno Keller"))
        assert replaced["action"] == "replaced" and replaced["document_id"] == md["document_id"]
        counts = (await ok(client, "lightrag_get_status", {}))["counts"]
        assert counts["processed"] == 2 and counts["failed"] == 0
        text = " ".join(s["content"] for s in await sources(client, "Who led the ZEBRA-7741 project?", "naive"))
        assert "Bruno Keller" in text and "Alice Johnson" not in text
        assert "Alice Johnson" not in await entity_names(client, "Alice Johnson")
        if backend.in_postgres:  # the new version took the old one's row, no duplicate
            assert backend.stored(home / "data")["doc_status"] == before["doc_status"] == 2


async def test_list_and_cascade_delete(home: Path, backend: Backend) -> None:
    async with running_server(home, None, None, **server_env(home, backend)) as client:
        reactor = await ok(client, "lightrag_insert_text", {"text": REACTOR_TEXT, "title": "reactor"})
        zebra = await ok(client, "lightrag_insert_text", {"text": ZEBRA_TEXT, "title": "zebra"})
        assert reactor["status"] == zebra["status"] == "processed"
        documents = await listed(client)
        assert set(documents) == {reactor["document_id"], zebra["document_id"]}
        assert {d["filename"] for d in documents.values()} == {"reactor.txt", "zebra.txt"}
        assert all(
            d["status"] == "processed" and d["chunk_count"] >= 1 and d["entity_count"] > 0 for d in documents.values()
        )
        assert await entity_names(client, "QUASAR-5521") == ["QUASAR-5521"]
        assert "QUASAR-5521" in (await entity_names(client, "nuclear reactor", "semantic"))[:3]

        result = await ok(client, "lightrag_delete_documents", {"document_ids": [reactor["document_id"]]})
        assert result["deleted_documents"] == [reactor["document_id"]] and result["failed_deletions"] == []
        assert result["cascade_deletions"]["entities_deleted"] >= 1
        assert "QUASAR-5521" in result["documents"][0]["deleted_entity_names"]

        # Only the deleted document supported QUASAR-5521: gone from the graph and the vectors.
        assert await entity_names(client, "QUASAR-5521") == []
        assert "QUASAR-5521" not in await entity_names(client, "nuclear reactor", "semantic")
        # Helena Vargas is shared with the zebra document: she stays, now sourced from it alone.
        found = await ok(
            client, "lightrag_search_entities", {"query": "Helena Vargas", "search_options": {"search_type": "exact"}}
        )
        [helena] = found["entities"]
        assert helena["source_documents"] == [{"document_id": zebra["document_id"], "filename": "zebra.txt"}]
        assert list(await listed(client)) == [zebra["document_id"]]
        remaining = await sources(client, "Who commissioned the QUASAR-5521 reactor?", "naive")
        assert all(s["document_id"] == zebra["document_id"] for s in remaining), remaining
        if backend.in_postgres:
            assert backend.stored(home / "data")["doc_status"] == 1


async def test_graph_export_and_entity_search(home: Path, backend: Backend) -> None:
    async with running_server(home, None, None, **server_env(home, backend)) as client:
        empty = await ok(client, "lightrag_get_graph", {})
        assert empty["nodes"] == []
        reactor = await processed(
            client,
            "reactor.md",
            "# Reactor Review\n\n" + REACTOR_TEXT + " Marco Ricci inspected the cooling loops in Lisbon.\n",
        )
        await processed(client, "zebra.md", ZEBRA_MD)
        graph = await ok(client, "lightrag_get_graph", {"max_nodes": 1000, "output_format": "json"})
        names = {node["id"] for node in graph["nodes"]}
        assert {"Helena Vargas", "QUASAR-5521", "Alice Johnson", "ZEBRA-7741", "Lisbon"} <= names, names
        assert graph["edges"] and all(e["source"] in names and e["target"] in names for e in graph["edges"])
        assert graph["statistics"]["total_nodes"] == len(names) and graph["statistics"]["total_edges"] == len(
            graph["edges"]
        )
        helena = next(node for node in graph["nodes"] if node["id"] == "Helena Vargas")
        assert helena["degree"] >= 1 and "reactor.md" in helena["properties"]["file_path"]
        around = await ok(client, "lightrag_get_graph", {"entity": "Helena Vargas", "max_depth": 1})
        around_names = {node["id"] for node in around["nodes"]}
        assert {"Helena Vargas", "Lisbon"} <= around_names <= names and "ZEBRA-7741" not in around_names

        fuzzy = await ok(client, "lightrag_search_entities", {"query": "Hlena Vargas"})
        top = fuzzy["entities"][0]
        assert top["name"] == "Helena Vargas"
        assert {"document_id": reactor["document_id"], "filename": "reactor.md"} in top["source_documents"]
        assert "QUASAR-5521" in (await entity_names(client, "nuclear reactor", "semantic"))[:3]
        assert await entity_names(client, "zebra-7741") == ["ZEBRA-7741"]
        relations = await ok(client, "lightrag_get_entity_relationships", {"entity_id": "Helena Vargas"})
        assert relations["relationship_counts"]["total"] == len(relations["relationships"]) > 0
        check_placement(home, backend)


async def test_users_never_see_each_other(home: Path, backend: Backend) -> None:
    async with running_server(home, None, None, **server_env(home, backend)) as client:
        await client.wait_ready()
        async with anyio.create_task_group() as tg:  # concurrent uploads by two users
            tg.start_soon(
                processed,
                client,
                "alice-notes.md",
                "# Alice\n\nThe KESTREL-1 code word belongs to Alice Johnson.",
                "text/markdown",
                "alice",
            )
            tg.start_soon(
                processed,
                client,
                "bob-notes.md",
                "# Bob\n\nThe KESTREL-2 code word belongs to Bob Smith.",
                "text/markdown",
                "bob",
            )
        people = {
            "alice": ("alice-notes.md", "Alice Johnson", "KESTREL-1"),
            "bob": ("bob-notes.md", "Bob Smith", "KESTREL-2"),
        }
        for user, other in (("alice", "bob"), ("bob", "alice")):
            mine, theirs = people[user], people[other]
            for mode in MODES:
                result = await client.call_as(user, "lightrag_query", {"query": "KESTREL code word", "mode": mode})
                text = result.content[0].text  # type: ignore[union-attr]
                assert mine[0] in text and not any(word in text for word in theirs), (user, mode, text)
            documents = await listed(client, user)
            assert [d["filename"] for d in documents.values()] == [mine[0]]
            assert await entity_names(client, theirs[1], user=user) == []
            assert await entity_names(client, mine[1], user=user) == [mine[1]]
            graph = await ok(client, "lightrag_get_graph", {"max_nodes": 1000}, user)
            names = {node["id"] for node in graph["nodes"]}
            assert mine[1] in names and not names & {theirs[1], theirs[2]}, (user, names)
        bob_doc = next(iter(await listed(client, "bob")))
        refused = error_of(await client.call_as("alice", "lightrag_delete_documents", {"document_ids": [bob_doc]}))
        assert refused["error_code"] == "DOCUMENT_NOT_FOUND"
        assert list(await listed(client, "bob")) == [bob_doc]
        nobody = await ok(client, "lightrag_query", {"query": "KESTREL code word"})  # the default user
        assert nobody["status"] == "no_results"


async def test_a_worker_restart_loses_nothing_acknowledged(home: Path, backend: Backend) -> None:
    small = {
        f"device-{n}.md": (f"HERON-10{n}", f"{name}")
        for n, name in enumerate(["Maria Lopez", "Kenji Tanaka", "Ingrid Novak"])
    }
    paragraphs = [
        f"Section {i}. The archive entry LYNX-{i:04d} records that Station {i % 17} logged sensor batch {i * 7}."
        for i in range(250)
    ] + ["Final note: the OSPREY-9 beacon was installed by Grace Okafor."]
    # Calls return once the document is queued: acknowledged (a track id) but maybe not indexed.
    async with running_server(home, None, None, **server_env(home, backend, LIGHTRAG_MCP_WAIT_SECONDS="0.5")) as client:
        first_pid = await client.worker_pid()
        ids = {}
        for filename, (code, builder) in small.items():
            queued = await upload(
                client, filename, f"# {code}\n\nThe {code} prototype was built by {builder} in Oslo.\n"
            )
            ids[filename] = queued["document_id"]
            assert (await wait_processed(client, queued["track_id"]))["status"] == "processed"
        archive = await upload(client, "archive.md", "\n\n".join(paragraphs))
        assert archive["track_id"]
        os.kill(first_pid, signal.SIGKILL)
        health = await client.wait_ready(not_pid=first_pid)
        assert health["components"]["worker"]["restarts"] >= 1

        assert (await wait_processed(client, archive["track_id"]))["status"] == "processed"
        documents = await listed(client)
        assert set(documents) == {*ids.values(), archive["document_id"]}
        assert all(d["status"] == "processed" for d in documents.values()), documents
        for filename, (code, builder) in small.items():
            for mode in ("naive", "local"):
                found = await sources(client, f"Who built the {code} prototype?", mode)
                assert any(builder in s["content"] and s["filename"] == filename for s in found), (
                    mode,
                    filename,
                    found,
                )
        found = await sources(client, "Who installed the OSPREY-9 beacon?", "naive")
        assert any("Grace Okafor" in s["content"] and s["filename"] == "archive.md" for s in found)
        check_placement(home, backend)
        if backend.in_postgres:
            assert backend.stored(home / "data")["doc_status"] == 4
