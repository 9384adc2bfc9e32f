"""PDF pages whose text layer is not what a reader sees (issue 27, items 1-3): JBIG2 scans,
text layers of glyph names or junk, and text drawn as paths are read by OCR from the page
pdfium renders; real text layers (the z3c.rml manual and its test PDFs) are left as they are."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.ocr import OcrOptions
from rag_worker.ingest.pdf_pages import unreadable_layer
from rag_worker.ingest.pdf_spacing import PlacedChar, respace, spaced_text
from tests.fixtures.documents import real_world_pdf
from tests.fixtures.pdf_layers import (
    make_glyph_name_layer_pdf,
    make_jbig2_scan_pdf,
    make_spread_pdf,
    make_vector_text_pdf,
)

FACT = ["The ZEPHYR-77 compressor was serviced by Ingrid Dahl.", "Invoice 4471 totals 1,250.00 EUR."]
GLYPH_NAMES = "/g3/g133/g145/g12/g77/g3/g99/g45/g3/g133/g17/g201/g3/g88/g41"


def words_of(text: str) -> set[str]:
    return {word.strip(".,") for word in text.split()}


def test_jbig2_scan_is_read_by_ocr_from_the_rendered_page() -> None:
    document = extract_document(make_jbig2_scan_pdf(FACT), DocFormat.PDF)
    assert {"ZEPHYR-77", "Ingrid", "Dahl", "4471"} <= words_of(document.text)
    assert document.ocr_pages == [1]


def test_glyph_name_text_layer_is_replaced_by_ocr_of_the_page() -> None:
    document = extract_document(make_glyph_name_layer_pdf(FACT, GLYPH_NAMES), DocFormat.PDF)
    assert "/g" not in document.text
    assert {"ZEPHYR-77", "Ingrid", "Dahl"} <= words_of(document.text)
    assert any("glyph names" in warning and "read from the rendered page by OCR" in warning
               for warning in document.warnings)


def test_vector_only_page_is_read_by_ocr() -> None:
    document = extract_document(make_vector_text_pdf(FACT), DocFormat.PDF)
    assert {"ZEPHYR-77", "Ingrid", "Dahl", "4471"} <= words_of(document.text)
    assert document.ocr_pages == [1]


def test_glyph_name_layer_with_ocr_off_is_not_indexed_and_the_refusal_says_how_to_turn_ocr_on() -> None:
    with pytest.raises(RagError) as caught:
        extract_document(make_glyph_name_layer_pdf(FACT, GLYPH_NAMES), DocFormat.PDF, ocr=OcrOptions(mode="off"))
    assert caught.value.code is ErrorCode.EXTRACTION_FAILED
    assert "LIGHTRAG_MCP_OCR=auto" in caught.value.message


@pytest.mark.parametrize(
    "junk",
    [
        GLYPH_NAMES,
        "(cid:12)(cid:45)(cid:3)(cid:77)(cid:12)(cid:45)(cid:3)(cid:77)",
        "1Ø ÓÚ oì 3¾ü ÕÎ ÒÐ ÷Ó ¸ö ¹ú ÖÐ ÎÄ ±ê Ìâ",  # a Chinese heading in a font without a Unicode map
        "□∆□∆□∆□∆ □∆□∆□∆ □∆□∆□∆□∆",  # a Type3 font
        "\ue001\ue002\ue003\ue004 \ue005\ue006\ue007 \ue008\ue009\ue00a\ue00b \ue00c\ue00d\ue00e",
    ],
)
def test_text_layers_that_are_not_text_are_recognised(junk: str) -> None:
    assert unreadable_layer(junk) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Þetta er íslenskur texti um ráðstefnu í Reykjavík árið 2024 og þátttöku ríkja.",
        "A reunião da comissão não aprovou a revisão orçamentária nem a previsão de exportações.",
        "Árvíztűrő tükörfúrógép: a bizottság ülésén elfogadták a költségvetést és a tervezetet.",
        "Die Überprüfung der Maßnahmen ergab, dass die Größe des Gebäudes ausreicht.",
        "中文标题：年度报告与财务摘要，第三季度收入增长百分之十二。",
        "التقرير السنوي للشركة يوضح نمو الإيرادات في جميع المناطق",
        "Install it under /usr/local/lib/python3.11/site-packages and run /opt/app/bin/start.",
        "Δ = b² − 4ac; the increment ∆x is small when x → 0 (see §2.1, Fig. 3).",
    ],
)
def test_real_text_is_not_taken_for_junk(text: str) -> None:
    assert unreadable_layer(text) is None


def test_real_world_manual_is_read_from_its_text_layer_without_ocr() -> None:
    document = extract_document(real_world_pdf(), DocFormat.PDF)
    assert document.ocr_pages == []
    assert not any("text layer" in warning for warning in document.warnings)
    assert "z3c.RML Reference" in document.text


def _rml_test_pdfs() -> list[Path]:
    return _rml_test_pdfs_all()[:40]


def test_real_pdfs_written_by_reportlab_keep_their_text_layers() -> None:
    """The z3c.rml test suite's expected PDFs (ReportLab output, many fonts and encodings):
    none is taken for a text layer that is not text."""
    pdfs = _rml_test_pdfs()
    if not pdfs:
        pytest.skip("the z3c.rml package (test extra) is not installed")
    flagged = []
    for path in pdfs:
        try:
            document = extract_document(path.read_bytes(), DocFormat.PDF, ocr=OcrOptions(mode="off"))
        except RagError:
            continue  # drawings without text: refused as before
        if any("text layer" in warning for warning in document.warnings):
            flagged.append(path.name)
    assert flagged == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [("tag-textField.pdf", ["Input 2:", "input2: Default Value"]), ("tag-selectField.pdf", ["select1: Option 2"])],
)
def test_filled_form_fields_of_real_pdfs_are_indexed_with_their_values(name: str, expected: list[str]) -> None:
    """Issue 27 item 4: the z3c.rml test suite's form PDFs (ReportLab) keep their values, not just the labels."""
    path = next((p for p in _rml_test_pdfs_all() if p.name == name), None)
    if path is None:
        pytest.skip("the z3c.rml package (test extra) is not installed")
    text = extract_document(path.read_bytes(), DocFormat.PDF).text
    assert all(line in text.splitlines() for line in expected)
    assert "input1:" not in text  # an empty field says nothing


def _rml_test_pdfs_all() -> list[Path]:
    try:
        distribution = importlib.metadata.distribution("z3c.rml")
    except importlib.metadata.PackageNotFoundError:
        return []
    return sorted(Path(str(distribution.locate_file("z3c/rml/tests/expected"))).glob("*.pdf"))


def test_two_page_spread_drawn_from_one_shared_form_is_indexed_once_each_half_on_its_page() -> None:
    """Issue 27 item 5: each page draws the whole shared form; only its own half is on the page."""
    left = ["Left page: the MARLIN pump was installed in 2019."] * 2
    right = ["Right page: the CONDOR valve failed in 2021."] * 2
    document = extract_document(make_spread_pdf(left, right), DocFormat.PDF)
    first, second = document.text[: document.page_offsets[1]], document.text[document.page_offsets[1] :]
    assert first.count("MARLIN") == 2 and "CONDOR" not in first
    assert second.count("CONDOR") == 2 and "MARLIN" not in second


def test_pdf_of_drawings_without_text_is_refused_without_blaming_the_scan() -> None:
    """The z3c.rml suite's line-drawing test (paths only): OCR of the drawn page finds no text, and
    the refusal says so instead of asking for a sharper scan of a file that is no scan."""
    path = next((p for p in _rml_test_pdfs_all() if p.name == "tag-lines.pdf"), None)
    if path is None:
        pytest.skip("the z3c.rml package (test extra) is not installed")
    with pytest.raises(RagError) as caught:
        extract_document(path.read_bytes(), DocFormat.PDF)
    assert caught.value.code is ErrorCode.EXTRACTION_FAILED
    assert "drawings or images without legible text" in caught.value.message
    assert "sharper scan" not in caught.value.message


# --- spacing of real text layers (issue 27 item 6) --------------------------------------------

REAL_FILES = Path(__file__).resolve().parent.parent / "fixtures" / "real_files"


def real_pdf_text(name: str) -> str:
    return extract_document((REAL_FILES / name).read_bytes(), DocFormat.PDF, ocr=OcrOptions(mode="off")).text


def test_words_a_text_layer_runs_together_are_spaced_from_the_gaps_between_the_glyphs() -> None:
    """pdfplumber's issue-598 page (LaTeX output, no space characters): pypdf alone gives
    'Thinkofyourfavoritescienceﬁctionmovie.'; the gaps between the glyphs say where the words end."""
    text = real_pdf_text("pdfplumber-issue-598-example.pdf")
    assert "Think of your favorite science fiction movie." in text
    assert "Lesson Objectives" in text
    assert "Explain the importance of asking questions." in text
    assert "Thinkofyour" not in text


def test_an_ocr_text_layer_with_letters_spread_apart_keeps_its_words_whole() -> None:
    """pypdf's indirect-rotation.pdf: an OCR layer places every letter apart; pdfium alone would
    write 'Nort h Buon a Vist a Driv e'.  The words stay as the layer spells them."""
    text = real_pdf_text("pypdf-indirect-rotation.pdf")
    assert "9 North Buona Vista Drive" in text
    assert "American President Lines, Ltd" in text
    assert "Scottsdale, AZ 85254-1781" in text


def test_single_letters_set_apart_are_not_joined_into_a_word() -> None:
    """pdfplumber's ag-energy report: a chart's month initials are separate labels, not letter-spaced text."""
    text = real_pdf_text("pdfplumber-ag-energy-round-up-2017-02-24.pdf")
    assert "J F M A M J J A S O N D" in text
    assert "JFMAMJJASOND" not in text


def test_a_letter_spaced_run_loses_the_spaces_where_the_glyphs_touch() -> None:
    """No real file with letter-spaced monospace was found in the suites searched; the rule is shown
    on pypdf's and pdfium's texts of such a line: single letters whose glyphs touch are one word."""
    touching = [PlacedChar(char, False, 10.0 * n, 10.0 * n + 10, 12.0) for n, char in enumerate("Detectron2")]
    pdfium_text = spaced_text(touching)
    assert respace("built on D e t e c t r o n 2 today", "built on " + pdfium_text + " today") == (
        "built on Detectron2 today"
    )


def test_words_of_normal_text_are_never_joined() -> None:
    """Only a run of three or more single letters is joined; words of two letters or more stay apart
    even where pdfium's text has no space between them."""
    assert respace("it is a b c", "itisabc") == "it is abc"
    assert respace("go to it", "gotoit") == "go to it"
