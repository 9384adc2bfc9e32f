"""Files people send that were refused (issue 27, item 14): macro-enabled Office files, Jupyter
notebooks, LaTeX and reStructuredText, and text or HTML in a legacy encoding (windows-1252,
Latin-1, Cyrillic), each detected by its row of the format table and read as a reader sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extracted import ExtractedDocument
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from tests.fixtures.documents import make_docx, make_pptx, make_xlsx, rewrite_zip

MACRO_TYPES = {
    "docm": ("word/document.xml", "wordprocessingml.document.main+xml", "application/vnd.ms-word.document.macroEnabled.main+xml"),
    "xlsm": ("xl/workbook.xml", "spreadsheetml.sheet.main+xml", "application/vnd.ms-excel.sheet.macroEnabled.main+xml"),
    "pptm": ("ppt/presentation.xml", "presentationml.presentation.main+xml",
             "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml"),
}


def macro_enabled(data: bytes, kind: str) -> bytes:
    """`data` saved as Office saves its macro-enabled kind: the main part's type changed, a VBA project added."""
    import zipfile
    from io import BytesIO

    _, plain_suffix, macro_type = MACRO_TYPES[kind]
    with zipfile.ZipFile(BytesIO(data)) as archive:
        types = archive.read("[Content_Types].xml").decode()
    plain_type = f"application/vnd.openxmlformats-officedocument.{plain_suffix}"
    assert plain_type in types
    return rewrite_zip(
        data,
        replace={"[Content_Types].xml": types.replace(plain_type, macro_type).encode()},
        add={"word/vbaProject.bin" if kind == "docm" else "xl/vbaProject.bin": b"\xd0\xcf\x11\xe0 macro bytes"},
    )


@pytest.mark.parametrize(
    ("kind", "make", "fmt"),
    [
        ("docm", lambda: make_docx([("Heading 1", "Budget"), ("", "The Orinoco budget is 4,200 EUR.")]), DocFormat.DOCX),
        ("xlsm", lambda: make_xlsx({"Budget": [["project", "amount"], ["Orinoco", 4200]]}), DocFormat.XLSX),
        ("pptm", lambda: make_pptx([("Budget", ["The Orinoco budget is 4,200 EUR."])]), DocFormat.PPTX),
    ],
)
def test_macro_enabled_office_files_are_read_as_their_plain_kind(kind: str, make, fmt: DocFormat) -> None:  # type: ignore[no-untyped-def]
    data = macro_enabled(make(), kind)
    assert detect_format(data, f"budget.{kind}", None) is fmt
    text = extract_document(data, fmt).text
    assert "Orinoco" in text
    assert "4200" in text.replace(",", "")


def test_macro_enabled_word_file_declared_with_its_own_mime_type_is_accepted() -> None:
    data = macro_enabled(make_docx([("", "Orinoco")]), "docm")
    assert detect_format(data, "a.docm", "application/vnd.ms-word.document.macroEnabled.12") is DocFormat.DOCX


NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"language_info": {"name": "python"}},
    "cells": [
        {"cell_type": "markdown", "source": ["# Pump analysis\n", "The ZEPHYR-77 pump is modelled here."]},
        {
            "cell_type": "code",
            "source": "flow = 12.5 * 3\nprint('flow rate', flow)",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["flow rate 37.5\n"]},
                {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure 640x480>"]}},
            ],
        },
        {"cell_type": "code", "source": "1/0", "outputs": [
            {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
             "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m"]}]},
        {"cell_type": "raw", "source": "raw cell left out"},
    ],
}


def test_notebook_keeps_markdown_code_and_text_outputs() -> None:
    data = json.dumps(NOTEBOOK).encode()
    assert detect_format(data, "analysis.ipynb", None) is DocFormat.NOTEBOOK
    document = extract_document(data, DocFormat.NOTEBOOK)
    assert document.title == "Pump analysis"
    for expected in ("The ZEPHYR-77 pump is modelled here.", "```python", "print('flow rate', flow)",
                     "flow rate 37.5", "ZeroDivisionError: division by zero"):
        assert expected in document.text
    assert "iVBORw0KGgo" not in document.text
    assert "\x1b" not in document.text


def test_json_that_is_not_a_notebook_is_refused_saying_so() -> None:
    with pytest.raises(RagError) as caught:
        extract_document(b'{"name": "not a notebook"}', DocFormat.NOTEBOOK)
    assert caught.value.code is ErrorCode.EXTRACTION_FAILED
    assert "not a Jupyter notebook" in caught.value.message


def _docutils_file(name: str) -> bytes | None:
    try:
        import docutils
    except ImportError:
        return None
    path = Path(docutils.__file__).parent / name
    return path.read_bytes() if path.is_file() else None


@pytest.mark.parametrize(("name", "words"), [
    ("writers/latex2e/default.tex", ["generated by Docutils", "\\begin{document}", "cut-and-paste in Acrobat"]),
    ("writers/latex2e/titlepage.tex", ["\\begin{titlepage}", "User specified packages"]),
])
def test_latex_files_written_by_others_are_indexed_as_text(name: str, words: list[str]) -> None:
    data = _docutils_file(name)
    if data is None:
        pytest.skip("docutils (test extra) is not installed")
    assert detect_format(data, Path(name).name, None) is DocFormat.TEXT
    text = extract_document(data, DocFormat.TEXT).text
    assert all(word in text for word in words)


def test_restructuredtext_written_by_others_is_indexed_like_the_same_bytes_named_txt() -> None:
    import numpy

    path = Path(numpy.__file__).parent / "ma" / "README.rst"
    if not path.is_file():
        pytest.skip("numpy's ma/README.rst is not installed")
    data = path.read_bytes()
    assert detect_format(data, "README.rst", "text/x-rst") is detect_format(data, "README.txt", None) is DocFormat.TEXT
    text = extract_document(data, DocFormat.TEXT).text
    assert "A guide to masked arrays in NumPy" in text
    assert "Pierre G.F. Gerard-Marchant" in text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Café au lait, naïve façade — “quoted” résumé for the Zürich office.", "cp1252"),
        ("Grüße aus München: die Straße am Fluß.", "latin-1"),
        ("Отчёт о поставке насосов в Новосибирск, счёт 4471.", "cp1251"),
        ("Zażółć gęślą jaźń: raport z Łodzi i Gdańska o dostawie pomp.", "cp1250"),
    ],
)
def test_text_in_a_legacy_encoding_is_decoded_not_called_binary(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    assert detect_format(data, "notes.txt", "text/plain") is DocFormat.TEXT
    assert extract_document(data, DocFormat.TEXT).text == text


def test_unlabelled_html_in_windows_1252_is_read_as_browsers_read_it() -> None:
    page = "<!DOCTYPE html><html><body><h1>Résumé</h1><p>Naïve “quotes” — café</p></body></html>"
    data = page.encode("cp1252")
    assert detect_format(data, "page.html", "text/html") is DocFormat.HTML
    text = extract_document(data, DocFormat.HTML).text
    assert "Résumé" in text and "Naïve “quotes” — café" in text


def outlook_message() -> bytes:
    """The start of an Outlook .msg: an OLE2 compound file whose directory names MAPI property streams."""
    from rag_worker.ingest.legacy_office import OLE2_MAGIC

    return OLE2_MAGIC + bytes(504) + "__substg1.0_0037001F".encode("utf-16-le") + bytes(1024)


def test_outlook_message_named_as_an_office_file_is_told_to_be_named_msg() -> None:
    with pytest.raises(RagError) as caught:
        detect_format(outlook_message(), "mail.doc", None)
    assert caught.value.code is ErrorCode.UNSUPPORTED_FORMAT
    assert "is an Outlook message (MSG); Outlook messages are read when named .msg." in caught.value.message
    assert "old binary Office" not in caught.value.message
    assert ".msg" in (caught.value.suggested_action or "")


REAL_FILES = Path(__file__).resolve().parent.parent / "fixtures" / "real_files"


def read_msg(name: str, filename: str) -> ExtractedDocument:
    data = (REAL_FILES / name).read_bytes()
    return extract_document(data, detect_format(data, filename, None), filename=filename)


def test_outlook_message_is_read_with_its_headers_body_and_attached_message() -> None:
    """msg_parser's other.msg (a real delivery-failure notice): headers, plain body, the returned
    message attached to it and the PDF attached to that, each named by its path."""
    filename = "notice.msg"
    document = read_msg("msg_parser-other.msg", filename)
    assert document.title == "投递状态通知 (Failure Notice)"
    assert "From: Mail Delivery Subsystem <mailer-daemon@tjdpf.org.cn>" in document.text
    assert "To: yosipnps@model.com" in document.text
    assert "Date: Mon, 27 Nov 2017 09:44:30 +0000" in document.text
    assert "The recipients is locked. (User Locked)" in document.text
    assert f"## {filename}/default_attachment.eml\n" in document.text
    assert f"## {filename}/default_attachment.eml/北京 2017年12月02-03日 销售主管 确认n.pdf" in document.text
    assert "销售主管 2 天强化训练营" in document.text  # the PDF's own text


def test_a_message_attached_to_an_outlook_message_is_read_as_a_forwarded_e_mail() -> None:
    document = read_msg("msg_parser-outer.msg", "outer.msg")
    head, attached = document.text.split("## outer.msg/test.eml", 1)
    assert "Subject: outer subject" in head and "Outer body" in head
    assert "Subject: test" in attached and "To: test@foobar.com" in attached and "body" in attached


def test_a_damaged_outlook_message_is_refused_as_damaged() -> None:
    with pytest.raises(RagError) as caught:
        extract_document(outlook_message(), DocFormat.OUTLOOK_MESSAGE, filename="mail.msg")
    assert caught.value.code is ErrorCode.EXTRACTION_FAILED
    assert "The Outlook message is damaged" in caught.value.message
