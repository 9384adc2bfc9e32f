"""Scanned PDFs and images through the real server (issue 13): read by OCR, their facts found by a
query, the OCR'd and empty pages named in the result; refusals when OCR is off or finds nothing."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import scans
from tests.integration.harness import Client, error_of, running_server

pytestmark = pytest.mark.anyio

SCAN_FACT = ["The ZEPHYR-77 compressor was serviced by Ingrid Dahl.", "Its pressure rating is 4471 kPa."]


def upload_args(filename: str, data: bytes, mime: str) -> dict[str, Any]:
    return {"filename": filename, "content": base64.b64encode(data).decode(), "mimeType": mime}


async def upload(client: Client, filename: str, data: bytes, mime: str) -> dict[str, Any]:
    result = await client.call("upload_to_lightrag", upload_args(filename, data, mime))
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_image_only_pdf_is_indexed_and_its_fact_found_by_a_query(home: Path) -> None:
    async with running_server(home) as client:
        result = await upload(client, "scan.pdf", scans.make_scanned_pdf([SCAN_FACT]), "application/pdf")
        assert result["status"] == "processed", result
        assert (result["ocr_pages"], result["empty_pages"]) == ([1], [])
        assert "page 1 was read by OCR" in result["message"]
        found = await client.call("lightrag_query", {"query": "Who serviced the ZEPHYR-77 compressor?", "mode": "naive"})
        sources = found.structured_content["sources"]
        assert any("Ingrid Dahl" in s["content"] and s["filename"] == "scan.pdf" for s in sources), sources


async def test_mixed_pdf_result_names_the_ocr_pages_and_the_page_with_no_text(home: Path) -> None:
    data = scans.make_mixed_pdf(["Quarterly budget planning for the harbour office."], [SCAN_FACT, ["MARLIN pump."], []])
    async with running_server(home) as client:
        result = await upload(client, "mixed.pdf", data, "application/pdf")
        assert result["status"] == "processed" and result["pages"] == 4, result
        assert (result["ocr_pages"], result["empty_pages"]) == ([2, 3], [4])
        assert "pages 2-3 were read by OCR" in result["message"] and "page 4 gave no text" in result["message"]


async def test_png_jpeg_and_tiff_uploads_are_indexed(home: Path) -> None:
    uploads = [
        ("plate.png", scans.image_bytes([scans.render_page(["The KESTREL-12 drone weighs 900 grams."])], "PNG"), "image/png"),
        ("photo.jpg", scans.image_bytes([scans.render_page(["The HERON-5 buoy is moored at Skagen."])], "JPEG"), "image/jpeg"),
        (
            "fax.tif",
            scans.image_bytes([scans.render_page(["Fax cover sheet."]), scans.render_page(["The OSPREY-3 crane lifts 40 tonnes."])], "TIFF"),
            "image/tiff",
        ),
    ]
    async with running_server(home) as client:
        for filename, data, mime in uploads:
            result = await upload(client, filename, data, mime)
            assert result["status"] == "processed", (filename, result)
            assert result["ocr_pages"] == ([1, 2] if filename == "fax.tif" else [1]), (filename, result)
        listed = await client.call("lightrag_list_documents", {})
        names = {doc["filename"]: doc for doc in listed.structured_content["documents"]}
        assert names["fax.tif"]["pages"] == 2 and names["fax.tif"]["mime_type"] == "image/tiff"


async def test_image_without_text_and_pixel_bomb_are_refused_and_the_worker_keeps_serving(home: Path) -> None:
    async with running_server(home) as client:
        pid = await client.worker_pid()
        blank = error_of(await client.call("upload_to_lightrag", upload_args("blank.png", scans.make_blank_png(), "image/png")))
        assert blank["error_code"] == "EXTRACTION_FAILED"
        assert "No readable text was found in the image" in blank["error_message"]
        bomb = error_of(await client.call("upload_to_lightrag", upload_args("bomb.png", scans.make_pixel_bomb_png(), "image/png")))
        assert bomb["error_code"] == "RESOURCE_LIMIT_EXCEEDED"
        health = await client.health()
        assert health["components"]["worker"]["pid"] == pid


async def test_with_ocr_off_scans_and_images_are_refused_saying_how_to_turn_it_on(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_OCR="off") as client:
        for filename, data, mime in [
            ("scan.pdf", scans.make_scanned_pdf([SCAN_FACT]), "application/pdf"),
            ("plate.png", scans.image_bytes([scans.render_page(SCAN_FACT)], "PNG"), "image/png"),
        ]:
            error = error_of(await client.call("upload_to_lightrag", upload_args(filename, data, mime)))
            assert error["error_code"] == "EXTRACTION_FAILED", (filename, error)
            assert "OCR is off" in error["error_message"] and "LIGHTRAG_MCP_OCR=auto" in error["error_message"]


async def test_page_scanned_upside_down_is_indexed_upright_and_the_warning_kept_in_the_record(home: Path) -> None:
    """Issue 27: the result, the document's status and its record say the page was turned."""
    page = scans.render_page(SCAN_FACT).rotate(180)
    # up to four OCR readings (one per turn): on a loaded machine that outlasts the default 15 s wait
    async with running_server(home, LIGHTRAG_MCP_WAIT_SECONDS="180") as client:
        result = await upload(client, "upside-down.png", scans.image_bytes([page], "PNG"), "image/png")
        assert result["status"] == "processed", result
        assert any("turned sideways or upside down" in warning for warning in result["warnings"]), result
        status = await client.call("lightrag_get_status", {"document_ids": [result["document_id"]]})
        [document] = status.structured_content["documents"]
        assert document["warnings"] == result["warnings"]
        found = await client.call("lightrag_query", {"query": "Who serviced the ZEPHYR-77 compressor?", "mode": "naive"})
        assert any("Ingrid Dahl" in s["content"] for s in found.structured_content["sources"])
