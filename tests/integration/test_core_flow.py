"""The main job end to end through both processes, on the embedded default: upload a PDF
or Markdown file, ask about it, get the fact and its source back (issue: core flow)."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_front.identity import META_USER_KEY
from tests.fixtures.documents import make_image_only_pdf, make_pdf, real_world_pdf
from tests.integration.harness import Client, error_of, process_gone, running_server

pytestmark = pytest.mark.anyio

MODES = ["naive", "local", "global", "hybrid", "mix"]
REACTOR_PAGES = [
    "Annual engineering review. This report covers maintenance schedules, staffing and safety drills "
    "across all sites. Routine inspections found no defects in the cooling loops.",
    "The QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. Helena Vargas chose a molten "
    "salt design because it runs at atmospheric pressure.",
    "Appendix. Glossary of terms used by the engineering teams, with abbreviations and units.",
]
ZEBRA_MD = (
    "# Zebra Project\n\nThe ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin.\n\n"
    "## Budget\n\nThe ZEBRA-7741 budget was 42 million euros, approved by the Nimbus Council.\n"
)


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


async def upload(client: Client, filename: str, data: bytes | str, mime: str, **extra: Any) -> dict[str, Any]:
    result = await client.call("upload_to_lightrag", {"filename": filename, "content": b64(data), "mimeType": mime, **extra})
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


def sources_of(result: Any) -> list[dict[str, Any]]:
    assert not result.is_error, result.content
    return result.structured_content["sources"]


async def test_each_mode_finds_a_fact_with_its_source_filename(home: Path) -> None:
    async with running_server(home) as client:
        pdf = await upload(client, "reactor-review.pdf", make_pdf(REACTOR_PAGES, title="Engineering review"), "application/pdf")
        assert (pdf["status"], pdf["action"], pdf["pages"]) == ("processed", "indexed", 3)
        assert pdf["chunks"] >= 1 and pdf["entities"] > 0 and pdf["relations"] > 0 and pdf["words"] > 50
        md = await upload(client, "zebra.md", ZEBRA_MD, "text/markdown", metadata={"tags": ["projects"], "author": "QA"})
        assert md["status"] == "processed" and md["metadata"] == {"tags": ["projects"], "author": "QA"}
        for mode in MODES:
            reactor = sources_of(await client.call("lightrag_query", {"query": "Who commissioned the QUASAR-5521 reactor?", "mode": mode}))
            hits = [s for s in reactor if "Helena Vargas" in s["content"]]
            assert hits and hits[0]["filename"] == "reactor-review.pdf", (mode, reactor)
            assert hits[0]["document_id"] == pdf["document_id"]
            zebra = sources_of(await client.call("lightrag_query", {"query": "Who led the ZEBRA-7741 project?", "mode": mode}))
            hits = [s for s in zebra if "Alice Johnson" in s["content"]]
            assert hits and hits[0]["filename"] == "zebra.md" and hits[0]["metadata"]["author"] == "QA", (mode, zebra)
            assert 0 < hits[0]["relevance_score"] <= 1
        simple = await client.call("query_lightrag", {"query": "ZEBRA-7741 budget", "max_results": 3})
        assert "42 million euros" in simple.content[0].text and "zebra.md" in simple.content[0].text
        alias = await client.call("lightrag_search_code", {"query": "QUASAR-5521 reactor"})
        assert any(s["filename"] == "reactor-review.pdf" for s in sources_of(alias))


async def test_without_an_llm_results_carry_the_passages_without_a_per_call_note(home: Path) -> None:
    async with running_server(home) as client:
        await upload(client, "zebra.md", ZEBRA_MD, "text/markdown")
        result = await client.call("lightrag_query", {"query": "Who led the ZEBRA-7741 project?"})
        data = result.structured_content
        assert data["status"] == "context_only" and data["answer"] is None and "context" not in data
        assert any("Alice Johnson" in source["content"] for source in data["sources"])
        text = result.content[0].text
        passage = next(line for line in text.splitlines() if "Alice Johnson" in line)
        assert passage.startswith("[1] zebra.md (doc-")  # the passage and its source on one line
        assert "LLM_BINDING" not in text and data["notes"] == []  # said once by health and instructions
        bypass = error_of(await client.call("lightrag_query", {"query": "Who led ZEBRA-7741?", "mode": "bypass"}))
        assert bypass["error_code"] == "INVALID_QUERY_MODE" and "LLM" in bypass["error_message"]
        bad_mode = error_of(await client.call("lightrag_query", {"query": "anything at all", "mode": "smart"}))
        assert bad_mode["error_code"] == "INVALID_QUERY_MODE"


async def test_an_empty_knowledge_base_is_a_clear_normal_result(home: Path) -> None:
    async with running_server(home) as client:
        result = await client.call("lightrag_query", {"query": "What is the capital of Atlantis?"})
        assert not result.is_error
        assert result.structured_content["status"] == "no_results"
        assert "NO_RESULTS_FOUND" in result.content[0].text


def first_pages(data: bytes, count: int) -> bytes:
    """The first pages of a real PDF, as a PDF (the whole manual takes minutes to index)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(data)).pages[:count]:
        writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_a_real_world_pdf_is_indexed_and_found(home: Path) -> None:
    data = first_pages(real_world_pdf(), 6)
    async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="300") as client:
        result = await upload(client, "rml-reference.pdf", data, "application/pdf")
        assert result["status"] == "processed" and result["pages"] == 6 and result["words"] > 500
        found = sources_of(await client.call("lightrag_query", {"query": "What is RML, the XML dialect?", "mode": "naive"}))
        assert any("XML dialect for generating PDF" in s["content"] for s in found)
        assert all(s["filename"] == "rml-reference.pdf" for s in found)


@pytest.mark.parametrize(
    ("arguments", "code", "fragment"),
    [
        ({"filename": "a.md", "content": "@@not base64@@", "mimeType": "text/markdown"}, "INVALID_PARAMETER", "base64"),
        ({"filename": "a.pdf", "content": b64(make_pdf(["x"])), "mimeType": "text/markdown"}, "UNSUPPORTED_FORMAT", "PDF"),
        ({"filename": "a.md", "content": b64("# hi\n\nplain text"), "mimeType": "application/pdf"}, "UNSUPPORTED_FORMAT", ""),
        ({"filename": "a.pdf", "content": b64(make_pdf(["secret"], encrypt_password="pw")), "mimeType": "application/pdf"}, "EXTRACTION_FAILED", "encrypted"),
        ({"filename": "scan.pdf", "content": b64(make_image_only_pdf()), "mimeType": "application/pdf"}, "EXTRACTION_FAILED", "text layer"),
        ({"filename": "cut.pdf", "content": b64(make_pdf(["truncated file"])[:200]), "mimeType": "application/pdf"}, "EXTRACTION_FAILED", ""),
        ({"filename": "empty.md", "content": b64(b""), "mimeType": "text/markdown"}, "INVALID_PARAMETER", "empty"),
        ({"filename": "../../etc/passwd.md", "content": b64("# x\n\ny"), "mimeType": "text/markdown"}, "INVALID_PARAMETER", "filename"),
        ({"filename": "a.md", "content": b64("# x\n\ny"), "metadata": {"tags": "not-a-list"}}, "INVALID_METADATA", "tags"),
        ({"filename": "big.md", "content": b64("x" * 2_100_000), "mimeType": "text/markdown"}, "FILE_TOO_LARGE", "MB"),
    ],
    ids=["base64", "pdf-as-md", "md-as-pdf", "encrypted", "image-only", "truncated", "empty", "path", "metadata", "oversize"],
)
async def test_each_bad_upload_gets_its_own_error_and_the_server_keeps_serving(
    home: Path, arguments: dict[str, Any], code: str, fragment: str
) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_FILE_MB="2") as client:
        pid = await client.worker_pid()
        error = error_of(await client.call("upload_to_lightrag", arguments))
        assert error["error_code"] == code, error
        assert fragment.lower() in error["error_message"].lower()
        assert "Traceback" not in error["error_message"] and str(home) not in error["error_message"]
        health = await client.health()
        assert health["components"]["worker"]["pid"] == pid
        status = await client.call("lightrag_get_status", {})
        assert sum(status.structured_content["counts"].values()) == 0  # nothing half-stored


async def test_the_same_file_is_indexed_once_and_a_new_version_replaces_the_old(home: Path) -> None:
    async with running_server(home) as client:
        first = await upload(client, "zebra.md", ZEBRA_MD, "text/markdown")
        again = await upload(client, "zebra.md", ZEBRA_MD, "text/markdown")
        renamed = await upload(client, "zebra-copy.md", ZEBRA_MD, "text/markdown")
        assert again["action"] == "already_indexed" and again["document_id"] == first["document_id"]
        # Another file whose text matches is a document of its own (identity is name + bytes).
        assert renamed["action"] == "indexed" and renamed["document_id"] != first["document_id"]
        counts = (await client.call("lightrag_get_status", {})).structured_content["counts"]
        assert counts["processed"] == 2 and counts["failed"] == 0  # no dup-… rows
        await client.call("lightrag_delete_documents", {"document_ids": [renamed["document_id"]]})
        changed = ZEBRA_MD.replace("Alice Johnson", "Bruno Keller")
        replaced = await upload(client, "zebra.md", changed, "text/markdown")
        assert replaced["action"] == "replaced" and replaced["document_id"] == first["document_id"]
        counts = (await client.call("lightrag_get_status", {})).structured_content["counts"]
        assert counts["processed"] == 1 and counts["failed"] == 0
        found = sources_of(await client.call("lightrag_query", {"query": "Who led the ZEBRA-7741 project?", "mode": "naive"}))
        text = " ".join(s["content"] for s in found)
        assert "Bruno Keller" in text and "Alice Johnson" not in text


async def test_insert_text_replaces_by_title_and_reports_counts(home: Path) -> None:
    async with running_server(home) as client:
        first = await client.call("lightrag_insert_text", {"text": "The Orion-12 probe reached Titan in 2031.", "title": "orion"})
        assert first.structured_content["status"] == "processed" and first.structured_content["filename"] == "orion.txt"
        second = await client.call(
            "lightrag_insert_text",
            {"text": "The Orion-12 probe reached Europa in 2033.", "title": "orion", "processing_options": {"enable_entity_extraction": False}},
        )
        assert second.structured_content["action"] == "replaced" and second.structured_content["entities"] == 0
        found = sources_of(await client.call("lightrag_query", {"query": "Where did the Orion-12 probe go?", "mode": "naive"}))
        assert "Europa" in found[0]["content"]


async def test_upload_progress_reaches_a_client_that_asked(home: Path) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with running_server(home) as client:
        await client.wait_ready()
        arguments = {"filename": "zebra.md", "content": b64(ZEBRA_MD), "mimeType": "text/markdown"}
        result = await client.call("upload_to_lightrag", arguments, progress_callback=on_progress)
        assert not result.is_error and "processed" in seen


async def test_users_never_see_each_others_documents(home: Path) -> None:
    async with running_server(home) as client:
        await client.wait_ready()

        async def upload_as(user: str, name: str, text: str) -> None:
            args = {"filename": name, "content": b64(text), "mimeType": "text/markdown"}
            result = await client.call("upload_to_lightrag", args, meta={META_USER_KEY: user})
            assert not result.is_error, result.content

        async with anyio.create_task_group() as tg:  # concurrent uploads by different users
            tg.start_soon(upload_as, "alice", "alice-notes.md", "# Alice\n\nThe KESTREL-1 code word belongs to Alice Johnson.")
            tg.start_soon(upload_as, "bob", "bob-notes.md", "# Bob\n\nThe KESTREL-2 code word belongs to Bob Smith.")
        for mode in MODES:
            alice = await client.call("lightrag_query", {"query": "KESTREL code word", "mode": mode}, meta={META_USER_KEY: "alice"})
            bob = await client.call_as("bob", "lightrag_query", {"query": "KESTREL code word", "mode": mode})
            for result, mine, theirs in ((alice, "alice-notes.md", ("bob-notes.md", "Bob Smith", "KESTREL-2")),
                                         (bob, "bob-notes.md", ("alice-notes.md", "Alice Johnson", "KESTREL-1"))):
                text = result.content[0].text
                assert mine in text, (mode, text)
                assert not any(word in text for word in theirs), (mode, text)
        nobody = await client.call("lightrag_query", {"query": "KESTREL code word"})
        assert nobody.structured_content["status"] == "no_results"
    async with running_server(home, LIGHTRAG_MCP_USER_ID="bob") as client:
        bob = await client.call("lightrag_query", {"query": "KESTREL code word", "mode": "naive"})
        assert "bob-notes.md" in bob.content[0].text and "alice" not in bob.content[0].text.lower()


async def test_a_session_leaves_nothing_in_the_temp_directory(home: Path) -> None:
    """The extractors' forkserver keeps its socket in the temp directory, and so does an engine
    whose data directory is too deep for a socket: both are removed when the session ends (a
    worker ending with os._exit, and the engine's stop, left one each: thousands in /tmp after a
    few days of test runs).  Files one per machine (onnxruntime's `.ses`) may stay."""
    temp = Path(tempfile.mkdtemp(prefix="t"))  # short, so the engine's socket fits under it
    deep = home / ("d" * 60) / ("e" * 60)
    try:
        async with running_server(home, TMPDIR=str(temp), WORKING_DIR=str(deep)) as client:
            pid = await client.worker_pid()
            pdf = await upload(client, "reactor-review.pdf", make_pdf(REACTOR_PAGES), "application/pdf")
            assert pdf["status"] == "processed"
            in_use = sorted(path.name[:5] for path in temp.iterdir() if path.is_dir())
            assert len(in_use) == 2 and in_use[1] == "pymp-", in_use  # and the engine's socket directory
        assert process_gone(pid)
        assert [path.name for path in temp.iterdir() if path.is_dir()] == []
    finally:
        shutil.rmtree(temp)


async def test_a_worker_killed_mid_indexing_loses_nothing(home: Path) -> None:
    paragraphs = [
        f"Section {i}. The archive entry LYNX-{i:04d} records that Station {i % 17} logged sensor batch {i * 7}."
        for i in range(1500)
    ] + ["Final note: the OSPREY-9 beacon was installed by Maria Lopez."]
    text = "\n\n".join(paragraphs)
    async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="0.5", LIGHTRAG_MCP_MAX_FILE_MB="5") as client:
        first_pid = await client.worker_pid()
        queued = await upload(client, "archive.md", text, "text/markdown")
        assert queued["status"] != "processed" and queued["track_id"]
        os.kill(first_pid, signal.SIGKILL)
        await client.wait_ready(not_pid=first_pid)
        with anyio.fail_after(300):
            while True:
                status = await client.call("lightrag_get_status", {"track_id": queued["track_id"]})
                assert not status.is_error, status.content
                document = status.structured_content["documents"][0]
                if document["status"] in {"processed", "failed"}:
                    break
                await anyio.sleep(1)
        assert document["status"] == "processed", document
        found = sources_of(await client.call("lightrag_query", {"query": "Who installed the OSPREY-9 beacon?", "mode": "naive"}))
        assert any("Maria Lopez" in s["content"] for s in found)
