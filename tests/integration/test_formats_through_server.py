"""Every format through the real server: Office files round-trip a fact to a query with the
right source, and hostile files each get their error while the worker keeps serving
(issue 5: formats and hostile files)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.fixtures.documents import (
    make_billion_laughs_docx,
    make_csv,
    make_deeply_nested_pdf,
    make_docx,
    make_html,
    make_pdf_flate_bomb,
    make_pptx,
    make_xlsx,
    make_zip,
    make_zip_bomb,
    make_zip_with_entries,
)
from tests.integration.harness import error_of, running_server

pytestmark = pytest.mark.anyio

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# filename, bytes, MIME type, question, the words the answer passage must hold
ROUND_TRIPS = [
    (
        "plan.docx",
        make_docx(
            [("Title", "Site plan"), ("Heading 1", "Pumps"), ("", "The MARLIN-310 pump was installed by Greta Holm.")]
        ),
        DOCX,
        "Who installed the MARLIN-310 pump?",
        "Greta Holm",
    ),
    (
        "deck.pptx",
        make_pptx(
            [("Roadmap", ["Launch plan"]), ("Satellites", ["The CONDOR-44 satellite carries a Raman spectrometer."])]
        ),
        PPTX,
        "What does the CONDOR-44 satellite carry?",
        "Raman spectrometer",
    ),
    (
        "stock.xlsx",
        make_xlsx({"Parts": [["part", "supplier"], ["TURBINE-907", "Nordvik Metals"]]}),
        XLSX,
        "Who supplies TURBINE-907?",
        "Nordvik Metals",
    ),
    (
        "page.html",
        make_html(
            "<h1>Bridges</h1><script>var hidden = 'SCRIPT-ONLY';</script><p>The ARCH-58 bridge spans the Douro river.</p>"
        ),
        "text/html",
        "Which river does the ARCH-58 bridge span?",
        "Douro",
    ),
    (
        "crew.csv",
        make_csv([["vessel", "captain"], ["SKIFF-66", "Rosa Lindqvist"]]),
        "text/csv",
        "Who is the captain of SKIFF-66?",
        "Rosa Lindqvist",
    ),
    (  # windows-1252, as older Windows editors save text (issue 27)
        "notes.txt",
        "The café on quay KAI-19 is run by Zoë Brønsted — “since 1998”.".encode("cp1252"),
        "text/plain",
        "Who runs the café on quay KAI-19?",
        "Zoë Brønsted",
    ),
    (  # a ZIP of documents: the passage names the file inside (issue 27)
        "bundle.zip",
        make_zip({"specs/valve.docx": make_docx([("", "The GANNET-12 valve is rated for 40 bar.")])}),
        "application/zip",
        "What is the GANNET-12 valve rated for?",
        "bundle.zip/specs/valve.docx",
    ),
]



async def test_each_office_and_web_format_round_trips_a_fact_with_its_source(home: Path) -> None:
    async with running_server(home) as client:
        for filename, data, mime, _, _ in ROUND_TRIPS:
            result = await client.call(
                "upload_to_lightrag",
                {"filename": filename, "content": base64.b64encode(data).decode(), "mimeType": mime},
            )
            assert not result.is_error, result.content
            assert result.structured_content["status"] == "processed", (filename, result.structured_content)
            timings = result.structured_content["timings"]
            # The reported time counts reading the file too (OCR can be most of it).
            assert result.structured_content["processing_time_s"] >= timings["extract_s"] + timings["index_wait_s"] - 0.01
        for filename, _, _, question, answer in ROUND_TRIPS:
            found = await client.call("lightrag_query", {"query": question, "mode": "naive", "top_k": 3})
            sources = found.structured_content["sources"]
            hits = [s for s in sources if answer in s["content"]]
            assert hits and hits[0]["filename"] == filename, (filename, sources)
            assert all("SCRIPT-ONLY" not in s["content"] for s in sources)


# filename, bytes, declared MIME type, expected code
HOSTILE = [
    ("bomb.docx", make_zip_bomb("docx"), DOCX, "RESOURCE_LIMIT_EXCEEDED"),
    ("entries.xlsx", make_zip_with_entries(20_000, "xlsx"), XLSX, "RESOURCE_LIMIT_EXCEEDED"),
    ("laughs.docx", make_billion_laughs_docx(), DOCX, "EXTRACTION_FAILED"),
    ("nested.pdf", make_deeply_nested_pdf(), "application/pdf", "EXTRACTION_FAILED"),
    ("inflating.pdf", make_pdf_flate_bomb(), "application/pdf", "EXTRACTION_FAILED"),
    ("polyglot.pdf", b"%PDF-1.4\n<html><script>alert(1)</script></html>", "application/pdf", "EXTRACTION_FAILED"),
    ("program.txt", b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 20, "text/plain", "UNSUPPORTED_FORMAT"),
    ("nul.txt", b"hello\x00world " * 100, "text/plain", "UNSUPPORTED_FORMAT"),
    ("page.pdf", make_html("<p>not a pdf</p>"), "application/pdf", "UNSUPPORTED_FORMAT"),
    ("evil\u202etxt.md", b"# x\n\ny", "text/markdown", "INVALID_PARAMETER"),
]


async def test_hostile_files_each_get_their_error_and_the_worker_keeps_serving(home: Path) -> None:
    async with running_server(home) as client:
        pid = await client.worker_pid()
        for filename, data, mime, code in HOSTILE:
            arguments = {"filename": filename, "content": base64.b64encode(data).decode(), "mimeType": mime}
            error = error_of(await client.call("upload_to_lightrag", arguments))
            assert error["error_code"] == code, (filename, error)
            assert "Traceback" not in error["error_message"] and str(home) not in error["error_message"]
            health = await client.health()
            assert health["status"] == "healthy" and health["components"]["worker"]["pid"] == pid, filename
        status = await client.call("lightrag_get_status", {})
        assert sum(status.structured_content["counts"].values()) == 0  # nothing half-stored
        fine = await client.call(
            "upload_to_lightrag",
            {
                "filename": "fine.md",
                "content": base64.b64encode(b"# Fine\n\nStill works.").decode(),
                "mimeType": "text/markdown",
            },
        )
        assert not fine.is_error and fine.structured_content["status"] == "processed"
