"""Extraction keeps what a reader sees: side stories, new formats, normalised text, refusal advice."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.detection import describe_content, detect_format
from rag_worker.ingest.extracted import ExtractedDocument
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.failures import FAILURES, Failure, advice_for
from rag_worker.ingest.legacy_office import OLE2_MAGIC
from rag_worker.ingest.normalize import normalize_document, normalize_text
from tests.fixtures.documents import make_pdf
from tests.fixtures.reader_documents import (
    make_docx_with_side_stories,
    make_epub,
    make_odp,
    make_ods,
    make_odt,
    make_pptx_with_side_stories,
    make_rtf,
    zip_entries,
)


def extract(data: bytes, filename: str, mime: str | None = None) -> ExtractedDocument:
    return extract_document(data, detect_format(data, filename, mime))


def refusal(data: bytes, filename: str, mime: str | None = None) -> RagError:
    with pytest.raises(RagError) as caught:
        extract(data, filename, mime)
    return caught.value


# ---------------------------------------------------------------- DOCX and PPTX side stories


def test_docx_header_and_footer_are_indexed_once_however_many_sections_repeat_them() -> None:
    data = make_docx_with_side_stories(body="Body.", header="Issued by HALCYON-7", footer="Page foot", sections=3)
    lines = extract(data, "report.docx").text.split("\n")
    assert lines[0] == "Issued by HALCYON-7"
    assert lines.count("Issued by HALCYON-7") == 1 and lines.count("Page foot") == 1


def test_docx_footnotes_endnotes_and_comments_follow_the_body_under_labels() -> None:
    data = make_docx_with_side_stories(
        body="The reactor runs hot.", footnote="Measured at PLANT-19.", endnote="See ANNEX-4.", comment="Check the figure."
    )
    text = extract(data, "report.docx").text
    assert text.endswith(
        "Footnotes:\n[1] Measured at PLANT-19.\nEndnotes:\n[1] See ANNEX-4.\nComments:\nReviewer: Check the figure."
    )
    assert text.index("The reactor runs hot.") < text.index("Footnotes:")


def test_pptx_speaker_notes_and_both_kinds_of_comments_are_indexed_with_their_slide() -> None:
    data = make_pptx_with_side_stories(
        title="Roadmap", notes="Launch in QUARTER-3.", legacy_comment="Old-style note", modern_comment="Modern note"
    )
    assert extract(data, "deck.pptx").text == (
        "## Slide 1: Roadmap\nNotes: Launch in QUARTER-3.\nComment: Old-style note\nComment: Modern note"
    )


# ---------------------------------------------------------------- HTML


def test_html_title_is_the_first_indexed_line_and_image_alt_texts_are_inline() -> None:
    page = (
        b"<html><head><title>KESTREL report</title></head><body><p>Sales <img src='c.png' alt='chart of ORBIT-77'>"
        b" rose.</p><img src='d.png' alt=''></body></html>"
    )
    doc = extract(page, "page.html")
    assert (doc.title, doc.text) == ("KESTREL report", "KESTREL report\nSales chart of ORBIT-77 rose.")


def test_html_with_only_a_title_still_counts_as_empty() -> None:
    assert refusal(b"<html><head><title>Nothing here</title></head><body></body></html>", "p.html").code == (
        ErrorCode.EXTRACTION_FAILED
    )


# ---------------------------------------------------------------- new formats


def test_odt_keeps_headers_footers_footnotes_and_comments() -> None:
    data = make_odt(
        body="Body text.", header="HEADER-ODT", footer="FOOTER-ODT", footnote="NOTE-ODT", comment="REMARK-ODT",
        title="Field report",
    )
    doc = extract(data, "report.odt", "application/vnd.oasis.opendocument.text")
    assert doc.title == "Field report"
    assert doc.text == (
        "HEADER-ODT\n# Introduction\nBody text.\nFOOTER-ODT\nFootnotes:\n[1] NOTE-ODT\nComments:\nREMARK-ODT"
    )


def test_ods_reads_each_sheet_as_a_page_of_rows() -> None:
    doc = extract(make_ods([["Item", "Price"], ["Widget", "PRICE-42"]]), "prices.ods")
    assert doc.text == "## Sheet: Prices\nItem | Price\nWidget | PRICE-42"


def test_odp_reads_slide_titles_text_and_speaker_notes() -> None:
    doc = extract(make_odp(title="Plan", text="Ship ROCKET-5", notes="Say it twice"), "deck.odp")
    assert (doc.title, doc.text) == ("Plan", "## Slide 1: Plan\nShip ROCKET-5\nNotes: Say it twice")


def test_rtf_keeps_header_footer_footnote_and_code_page_characters() -> None:
    data = make_rtf(body="Body RTF-1.", header="HEAD-RTF", footer="FOOT-RTF", footnote="NOTE-RTF", title="Memo")
    doc = extract(data, "memo.rtf", "application/rtf")
    assert doc.title == "Memo"
    assert doc.text == "HEAD-RTF\nBody RTF-1..\nCafé crème.\nFOOT-RTF\nFootnotes:\n[1] NOTE-RTF"


def test_epub_chapters_are_pages_in_spine_order_through_the_html_extractor() -> None:
    data = make_epub(
        [("One", "<p>First FACT-1.</p>"), ("Two", "<p>Second <img src='m.png' alt='map of ISLE-9'/></p>")],
        title="The Book",
        order=[1, 0],
    )
    doc = extract(data, "book.epub", "application/epub+zip")
    assert doc.title == "The Book" and doc.pages == 2
    assert doc.text == "# Two\nSecond map of ISLE-9\n\n# One\nFirst FACT-1."
    assert doc.text[doc.page_offsets[1] :].startswith("# One")


def test_drm_protected_epub_is_refused_with_its_own_advice() -> None:
    entries = zip_entries(make_epub([("One", "<p>Text.</p>")], title="Locked"))
    entries["META-INF/encryption.xml"] = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
        b'<enc:CipherReference URI="EPUB/chapter1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
    )
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", entries.pop("mimetype"), compress_type=zipfile.ZIP_STORED)
        for name, content in entries.items():
            archive.writestr(name, content)
    error = refusal(out.getvalue(), "locked.epub")
    assert (error.code, error.suggested_action) == (ErrorCode.EXTRACTION_FAILED, advice_for(Failure.DRM_PROTECTED))


def _real_world_odt() -> Path | None:
    """docutils ships a LibreOffice-written ODT (its ODF writer's style sheet)."""
    spec = importlib.util.find_spec("docutils")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "writers" / "odf_odt" / "styles.odt"
    return path if path.is_file() else None


@pytest.mark.skipif(_real_world_odt() is None, reason="docutils (which ships styles.odt) is not installed")
def test_a_real_world_odt_from_libreoffice_is_read() -> None:
    data = _real_world_odt().read_bytes()  # type: ignore[union-attr]
    doc = extract(data, "styles.odt")
    assert "rststyle-table-0 is the default style used by odf-odt writer" in doc.text


def test_zip_packages_are_described_by_their_mimetype_entry() -> None:
    assert describe_content(make_odt(body="b", header="h", footer="f", footnote="n", comment="c", title="t")) == (
        "an OpenDocument text (ODT)"
    )
    assert describe_content(make_epub([("One", "<p>x</p>")], title="t")) == "an EPUB e-book"


def test_odt_declared_with_a_pdf_mime_type_names_both_and_advises_matching_values() -> None:
    data = make_odt(body="b", header="h", footer="f", footnote="n", comment="c", title="t")
    error = refusal(data, "report.odt", "application/pdf")
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT
    assert "declared application/pdf but the file name ends in .odt" in error.message
    assert "an OpenDocument text (ODT)" in error.message
    assert error.suggested_action == advice_for(Failure.MIME_EXTENSION_MISMATCH)


def test_epub_named_odt_says_what_the_content_is() -> None:
    error = refusal(make_epub([("One", "<p>x</p>")], title="t"), "report.odt")
    assert error.message == "the file name ends in .odt but the content is an EPUB e-book, not an OpenDocument text (ODT)."
    assert error.suggested_action == advice_for(Failure.CONTENT_MISMATCH)


# ---------------------------------------------------------------- refusal advice


@pytest.mark.parametrize(
    ("filename", "mime", "target"),
    [
        ("old.doc", "application/msword", "DOCX"),
        ("old.xls", "application/vnd.ms-excel", "XLSX"),
        ("old.ppt", "application/vnd.ms-powerpoint", "PPTX"),
        ("renamed.docx", None, "DOCX"),
        ("noext", "application/vnd.ms-excel", "XLSX"),
    ],
)
def test_legacy_binary_office_is_refused_with_advice_to_convert_to_the_right_format(
    filename: str, mime: str | None, target: str
) -> None:
    error = refusal(OLE2_MAGIC + b"\x00" * 2048, filename, mime)
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT
    assert f"Convert it to {target} (File → Save As" in error.suggested_action
    assert "old binary Office file" in error.message


def test_password_protected_docx_is_told_to_remove_the_password() -> None:
    data = OLE2_MAGIC + b"\x00" * 512 + "EncryptedPackage".encode("utf-16-le") + b"\x00" * 512
    error = refusal(data, "secret.docx", None)
    assert error.code == ErrorCode.EXTRACTION_FAILED
    assert error.suggested_action == advice_for(Failure.PASSWORD_PROTECTED_OFFICE)


def test_truncated_pdf_is_told_to_upload_again_not_to_decrypt() -> None:
    data = make_pdf(["Some text on a page."] * 3)
    error = refusal(data[: len(data) // 3], "cut.pdf")
    assert error.code == ErrorCode.EXTRACTION_FAILED
    assert error.suggested_action == advice_for(Failure.DAMAGED_PDF)
    assert "unencrypted" not in error.suggested_action


def test_encrypted_pdf_is_told_to_remove_the_password() -> None:
    error = refusal(make_pdf(["Secret."], encrypt_password="pw"), "locked.pdf")
    assert (error.code, error.suggested_action) == (ErrorCode.EXTRACTION_FAILED, advice_for(Failure.ENCRYPTED_PDF))
    assert "password" in error.suggested_action


def test_unsupported_extension_advises_converting_to_a_listed_type() -> None:
    error = refusal(b"hello", "notes.pages")
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT and ".odt" in error.message and ".epub" in error.message
    assert error.suggested_action == advice_for(Failure.UNSUPPORTED_EXTENSION)


def test_every_failure_kind_has_a_code_message_and_its_own_advice() -> None:
    assert set(FAILURES) == set(Failure)
    for info in FAILURES.values():
        assert info.message and info.advice.endswith(".")


# ---------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("ﬁnd the ﬀect", "find the ffect"),
        ("die Auf-\nlage", "die Auflage"),
        ("Mercedes-\nBenz", "Mercedes-\nBenz"),
        ("- first\n- second", "- first\n- second"),
        ("2019-\n2020", "2019-\n2020"),
        ("Auf\u00ad\nlage and Ver\u00adlag", "Auflage and Verlag"),
        ("glyph\ue015here \U000f0001x", "glyphhere x"),
        ("zero\u200bwidth wo\u200drd", "zerowidth word"),
        ("coder 👩\u200d💻", "coder 👩\u200d💻"),
        ("a  \t b   \n\n\n\nc", "a b\n\nc"),
        ("    indented  code", "    indented code"),
        # Compatibility characters NFKC would fuse with the digits before them (issue 27, item 12)
        ("a 2½-inch pipe", "a 2 1/2-inch pipe"),
        ("½ cup and 3⅞ in", "1/2 cup and 3 7/8 in"),
        ("1⁄2 inch", "1/2 inch"),
        ("an area of 10² m²", "an area of 10^2 m2"),
    ],
)
def test_normalize_text(raw: str, normalized: str) -> None:
    assert normalize_text(raw) == normalized


def test_normalize_document_recomputes_page_offsets() -> None:
    pages = ["ﬁrst Auf-\nlage", "second   page", "third"]
    text = "\n\n".join(pages)
    offsets = [0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4]
    doc = normalize_document(ExtractedDocument(text=text, pages=3, words=0, page_offsets=offsets, title="ﬁle"))
    assert doc.text == "first Auflage\n\nsecond page\n\nthird"
    assert [doc.text[o:].split("\n")[0] for o in doc.page_offsets] == ["first Auflage", "second page", "third"]
    assert (doc.title, doc.words) == ("file", 5)


def test_every_format_is_normalised_by_extract_document() -> None:
    doc = extract("Die Auf-\nlage des ﬁnalen Berichts".encode(), "notes.txt")
    assert doc.text == "Die Auflage des finalen Berichts"
