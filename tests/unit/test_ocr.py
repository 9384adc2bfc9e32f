"""OCR of scanned PDFs and images (issue 13): generated 300-dpi scans of known text, the real
packaged PP-OCR model, the real extractors."""

from __future__ import annotations

import pytest

from config.settings import ConfigError
from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.isolation import extract_isolated
from rag_worker.ingest.ocr import OcrOptions, lines_in_reading_order, ocr_options_from_env, page_ranges
from tests.fixtures.documents import make_image_only_pdf
from tests.fixtures.scans import (
    image_bytes,
    make_blank_png,
    make_mixed_pdf,
    make_pixel_bomb_png,
    make_scanned_pdf,
    render_page,
)

FACT = ["The ZEPHYR-77 compressor was serviced by Ingrid Dahl.", "Invoice 4471 totals 1,250.00 EUR."]
OFF = OcrOptions(mode="off")


def fails(code: ErrorCode, data: bytes, fmt: DocFormat, **kwargs: object) -> str:
    with pytest.raises(RagError) as caught:
        extract_document(data, fmt, **kwargs)  # type: ignore[arg-type]
    assert caught.value.code is code, caught.value
    return caught.value.message


def box(x: float, y: float, width: float = 100, height: float = 40) -> list[tuple[float, float]]:
    return [(x, y), (x + width, y), (x + width, y + height), (x, y + height)]


def test_text_boxes_are_joined_into_lines_read_top_down_and_left_to_right() -> None:
    boxes = [box(300, 102), box(10, 100), box(10, 200), box(150, 98)]
    assert lines_in_reading_order(boxes, ["c", "a", "d", "b"]) == ["a b c", "d"]


def test_page_lists_are_written_as_ranges() -> None:
    assert page_ranges([3]) == "page 3"
    assert page_ranges([4, 2, 3, 9]) == "pages 2-4 and 9"


def test_ocr_settings_are_read_from_the_environment_and_bad_values_refused() -> None:
    options = ocr_options_from_env({"LIGHTRAG_MCP_OCR": "OFF", "LIGHTRAG_MCP_OCR_MAX_PAGES": "7"})
    assert (options.enabled, options.max_pages) == (False, 7)
    assert ocr_options_from_env({}).enabled
    with pytest.raises(ConfigError, match="LIGHTRAG_MCP_OCR="):
        ocr_options_from_env({"LIGHTRAG_MCP_OCR": "always"})


def test_image_only_pdf_is_read_by_ocr_instead_of_refused() -> None:
    document = extract_document(make_scanned_pdf([FACT]), DocFormat.PDF)
    assert "ZEPHYR-77 compressor was serviced by Ingrid Dahl" in document.text
    assert "4471" in document.text
    assert (document.ocr_pages, document.empty_pages) == ([1], [])
    assert document.warnings == ["page 1 was read by OCR (scanned); check names and numbers."]


def test_mixed_pdf_reports_the_pages_read_by_ocr_and_the_page_with_no_text() -> None:
    data = make_mixed_pdf(["Quarterly budget planning for the harbour office."], [FACT, ["The MARLIN pump."], []])
    document = extract_document(data, DocFormat.PDF)
    assert document.pages == 4
    assert (document.ocr_pages, document.empty_pages) == ([2, 3], [4])
    assert "pages 2-3 were read by OCR (scanned); check names and numbers." in document.warnings
    assert "page 4 gave no text." in document.warnings
    assert "Quarterly budget" in document.text and "MARLIN pump" in document.text


def test_pdf_pages_past_the_ocr_page_limit_are_skipped_with_a_warning() -> None:
    data = make_scanned_pdf([FACT, ["The MARLIN pump was repaired."]])
    document = extract_document(data, DocFormat.PDF, ocr=OcrOptions(max_pages=1))
    assert "Ingrid Dahl" in document.text and "MARLIN" not in document.text
    assert document.ocr_pages == [1]
    assert any("page 2 were not read" in w and "LIGHTRAG_MCP_OCR_MAX_PAGES" in w for w in document.warnings)


def test_scanned_pdf_with_ocr_off_is_refused_saying_how_to_turn_it_on() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, make_scanned_pdf([FACT]), DocFormat.PDF, ocr=OFF)
    assert "no text layer" in message and "LIGHTRAG_MCP_OCR=off" in message and "LIGHTRAG_MCP_OCR=auto" in message


def test_pdf_whose_scans_hold_no_text_is_refused_saying_ocr_found_none() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, make_image_only_pdf(pages=2), DocFormat.PDF)
    assert "OCR found no readable text" in message


@pytest.mark.parametrize(("fmt", "name", "pil_format"), [("png", "scan.png", "PNG"), ("jpeg", "scan.jpg", "JPEG")])
def test_png_and_jpeg_uploads_are_read_by_ocr(fmt: str, name: str, pil_format: str) -> None:
    data = image_bytes([render_page(FACT)], pil_format)
    assert detect_format(data, name, None) is DocFormat(fmt)
    document = extract_document(data, DocFormat(fmt))
    assert document.text == "\n".join(FACT)
    assert document.ocr_pages == [1]
    assert document.warnings == ["The image was read by OCR; check names and numbers."]


def test_multi_page_tiff_pages_are_document_pages() -> None:
    data = image_bytes([render_page(FACT), render_page([]), render_page(["Page three of the TIFF."])], "TIFF")
    assert detect_format(data, "fax.tiff", "image/tiff") is DocFormat.TIFF
    document = extract_document(data, DocFormat.TIFF)
    assert document.pages == 3
    assert (document.ocr_pages, document.empty_pages) == ([1, 3], [2])
    assert document.text.endswith("Page three of the TIFF.")
    assert "page 2 gave no text." in document.warnings


def test_image_without_text_is_refused() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, make_blank_png(), DocFormat.PNG)
    assert message.startswith("No readable text was found in the image")


def test_image_with_ocr_off_is_refused_saying_how_to_turn_it_on() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, image_bytes([render_page(FACT)], "PNG"), DocFormat.PNG, ocr=OFF)
    assert "LIGHTRAG_MCP_OCR=auto" in message


@pytest.mark.parametrize("side", [9_000, 20_000])  # over our bound; over Pillow's own bomb bound
def test_pixel_bomb_is_refused_before_decoding(side: int) -> None:
    data = make_pixel_bomb_png(side)
    assert len(data) < 200_000
    fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, data, DocFormat.PNG)


def test_image_named_as_another_image_type_is_refused() -> None:
    with pytest.raises(RagError) as caught:
        detect_format(image_bytes([render_page(FACT)], "PNG"), "scan.jpg", None)
    assert caught.value.code is ErrorCode.UNSUPPORTED_FORMAT
    assert "a PNG image" in caught.value.message


def test_isolated_extraction_carries_the_ocr_pages() -> None:
    ocr = OcrOptions(max_pages=10, budget_s=60)
    document = extract_isolated(make_scanned_pdf([FACT]), DocFormat.PDF, timeout=120, ocr=ocr)
    assert "Ingrid Dahl" in document.text
    assert (document.ocr_pages, document.empty_pages) == ([1], [])
