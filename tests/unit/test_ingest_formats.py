"""Ingestion at full breadth (SPEC §4 "Ingestion"): HTML, DOCX, PPTX, XLSX, CSV, JSON and source
code extract the text a reader sees; mismatched, hostile and oversized files are refused with
their own error; parsers run in an extractor process that a hang or a crash cannot take down."""

from __future__ import annotations

import ctypes
import datetime
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest import data_files, office, ooxml
from rag_worker.ingest.data_files import extract_csv, extract_json
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extracted import ExtractedDocument
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.html_text import extract_html
from rag_worker.ingest.isolation import extract_isolated, shutdown_extractors
from rag_worker.ingest.office import extract_docx, extract_pptx, extract_xlsx
from rag_worker.ingest.source_code import extract_code
from tests.fixtures.documents import (
    BILLION_LAUGHS_DTD,
    inject_doctype,
    make_billion_laughs_docx,
    make_billion_laughs_html,
    make_csv,
    make_docx,
    make_html,
    make_lying_zip,
    make_pdf,
    make_pptx,
    make_xlsx,
    make_zip_bomb,
    make_zip_with_entries,
    rewrite_zip,
)

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def fails(code: ErrorCode, fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    """Call fn, assert it raises RagError with `code`, return the message."""
    with pytest.raises(RagError) as info:
        fn(*args, **kwargs)
    assert info.value.code is code, info.value
    return info.value.message


@pytest.fixture(scope="module", autouse=True)
def _stop_extractors() -> Iterator[None]:
    yield
    shutdown_extractors()


@pytest.fixture(scope="module")
def report_docx() -> bytes:
    return make_docx(
        [
            ("Title", "Quarterly Report"),
            ("Heading 1", "Summary"),
            ("", "Revenue grew in every region."),
            ("List Bullet", "Europe doubled"),
            ("List Bullet", "Asia steady"),
            ("Heading 2", "Team"),
        ],
        table=[["Name", "Role"], ["Ada", "Engineer"], ["Grace", "Admiral"]],
    )


@pytest.fixture(scope="module")
def deck_pptx() -> bytes:
    return make_pptx(
        [("Welcome", ["Why graphs", "What we built"]), ("Results", ["30% faster answers"])],
        notes={1: "Mention the benchmark setup."},
    )


@pytest.fixture(scope="module")
def book_xlsx() -> bytes:
    return make_xlsx(
        {
            "People": [["Name", "Age", "Joined", "Active"], ["Ada", 36, datetime.date(2024, 5, 1), True]],
            "Totals": [["Region", "Revenue"], ["Europe", 1250.5], [None, None], ["Asia", 980]],
        },
        title="Staff Book",
    )


# ---------------------------------------------------------------- HTML


def test_html_keeps_visible_text_with_headings_and_list_items() -> None:
    page = make_html(
        "<h1>Release notes</h1><p>Version <b>2.0</b> is out.</p><ul><li>Faster</li><li>Smaller</li></ul>"
        "<h2>Known issues</h2><table><tr><th>Bug</th><th>State</th></tr><tr><td>#12</td><td>open</td></tr></table>",
        head_extra="<style>p { color: red }</style><script>var secret = 1;</script>",
    )
    doc = extract_html(page)
    assert (
        doc.text
        == "Test page\n# Release notes\nVersion 2.0 is out.\n- Faster\n- Smaller\n## Known issues\nBug | State\n#12 | open"
    )
    assert doc.title == "Test page"
    assert (doc.pages, doc.page_offsets) == (1, [0])


def test_html_drops_script_style_template_and_hidden_content() -> None:
    page = make_html(
        "<p>Shown</p><script>alert('x')</script><style>.a{}</style><template><p>Tpl</p></template>"
        '<div hidden>Hidden</div><div style="display: none">Gone</div><noscript>Enable JS</noscript>'
    )
    assert extract_html(page).text == "Test page\nShown"


def test_html_title_falls_back_to_the_first_h1() -> None:
    assert extract_html(make_html("<h1>Main Heading</h1><p>x</p>", title=None)).title == "Main Heading"


def test_html_in_a_declared_legacy_charset_is_decoded() -> None:
    page = '<html><head><meta charset="windows-1252"><title>Caf\xe9</title></head><body>Cr\xe8me br\xfbl\xe9e</body></html>'
    doc = extract_html(page.encode("cp1252"))
    assert (doc.title, doc.text) == ("Café", "Café\nCrème brûlée")


def test_html_with_external_resources_opens_no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the HTML extractor opened a connection")

    monkeypatch.setattr("socket.socket.connect", no_network)
    page = make_html(
        '<img src="http://example.com/a.png"><iframe src="http://example.com"></iframe><p>Text</p>',
        head_extra='<link rel="stylesheet" href="http://example.com/s.css">',
    )
    assert extract_html(page).text == "Test page\nText"


def test_billion_laughs_html_is_not_expanded() -> None:
    started = time.perf_counter()
    doc = extract_html(make_billion_laughs_html())
    assert time.perf_counter() - started < 1
    assert doc.text == "Test page\nBefore &lol9; after"


def test_html_without_visible_text_has_no_text() -> None:
    assert "no visible text" in fails(ErrorCode.EXTRACTION_FAILED, extract_html, make_html("<script>x()</script>"))


# ---------------------------------------------------------------- Office


def test_docx_keeps_headings_list_items_and_table_rows(report_docx: bytes) -> None:
    doc = extract_docx(report_docx)
    assert doc.text.split("\n") == [
        "# Quarterly Report",
        "# Summary",
        "Revenue grew in every region.",
        "- Europe doubled",
        "- Asia steady",
        "## Team",
        "Name | Role",
        "Ada | Engineer",
        "Grace | Admiral",
    ]
    assert doc.title == "Quarterly Report"  # the Title paragraph, no core property set


def test_docx_title_prefers_the_document_property() -> None:
    assert extract_docx(make_docx([("Heading 1", "Intro"), ("", "x")], title="Annual Plan")).title == "Annual Plan"


def test_docx_without_text_has_no_text() -> None:
    assert "no text" in fails(ErrorCode.EXTRACTION_FAILED, extract_docx, make_docx([("", "")]))


def test_pptx_gives_one_page_per_slide_with_its_title_and_notes(deck_pptx: bytes) -> None:
    doc = extract_pptx(deck_pptx)
    assert doc.pages == 2
    first, second = (doc.text[start:] for start in doc.page_offsets)
    assert first.startswith("## Slide 1: Welcome\nWhy graphs\nWhat we built\n\n")
    assert second == "## Slide 2: Results\n30% faster answers\nNotes: Mention the benchmark setup."
    assert doc.title == "Welcome"


def test_xlsx_gives_one_page_per_sheet_with_rows_as_cells(book_xlsx: bytes) -> None:
    doc = extract_xlsx(book_xlsx)
    assert doc.pages == 2
    assert doc.text == (
        "## Sheet: People\nName | Age | Joined | Active\nAda | 36 | 2024-05-01 | TRUE\n\n"
        "## Sheet: Totals\nRegion | Revenue\nEurope | 1250.5\nAsia | 980"
    )
    assert doc.title == "Staff Book"
    assert doc.text[doc.page_offsets[1] :].startswith("## Sheet: Totals")


def test_xlsx_rows_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(office, "MAX_SHEET_ROWS", 5)
    doc = extract_xlsx(make_xlsx({"A": [[i] for i in range(8)], "B": [["never read"]]}))
    assert doc.text.split("\n")[1:] == ["0", "1", "2", "3", "4"]
    assert doc.warnings == ["Only the first 5 rows with values were indexed; the rest was skipped."]


def test_xlsx_with_only_empty_sheets_has_no_text() -> None:
    assert "no cell values" in fails(ErrorCode.EXTRACTION_FAILED, extract_xlsx, make_xlsx({"Empty": []}))


# ---------------------------------------------------------------- CSV, JSON, source code


def test_csv_rows_name_their_columns() -> None:
    data = make_csv([["name", "role", "city"], ["Ada", "engineer", ""], ["Grace", "admiral", "Arlington"]])
    assert extract_csv(data).text == "name: Ada; role: engineer\nname: Grace; role: admiral; city: Arlington"


def test_csv_delimiter_is_detected() -> None:
    data = make_csv([["name", "score"], ["Ada", "1,5"], ["Alan", "2,0"]], delimiter=";")
    assert extract_csv(data).text == "name: Ada; score: 1,5\nname: Alan; score: 2,0"


def test_huge_csv_is_bounded() -> None:
    rows = [["id", "name"]] + [[str(i), f"row {i}"] for i in range(data_files.MAX_CSV_ROWS + 50_000)]
    doc = extract_csv(make_csv(rows))
    assert doc.text.count("\n") + 1 == data_files.MAX_CSV_ROWS
    assert doc.warnings == [f"Only the first {data_files.MAX_CSV_ROWS:,} rows were indexed; the rest was skipped."]


def test_csv_field_over_the_field_limit_names_the_line() -> None:
    data = b"a,b\n1,2\n3," + b"x" * 200_000 + b"\n"
    assert "line 3" in fails(ErrorCode.EXTRACTION_FAILED, extract_csv, data)


def test_json_is_flattened_to_key_paths() -> None:
    data = json.dumps({"title": "Inventory", "items": [{"sku": "A1", "tags": ["new"]}, {"sku": "B2"}], "ok": True})
    doc = extract_json(data.encode())
    assert doc.text == "title: Inventory\nitems[0].sku: A1\nitems[0].tags[0]: new\nitems[1].sku: B2\nok: true"
    assert doc.title == "Inventory"


def test_invalid_json_names_line_and_column() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_json, b'{\n  "a": 1,\n  "b" 2\n}')
    assert message == "The file is not valid JSON: Expecting ':' delimiter at line 3, column 7."


def test_deeply_nested_json_is_refused_or_bounded() -> None:
    assert "nested too deeply" in fails(ErrorCode.EXTRACTION_FAILED, extract_json, b"[" * 100_000 + b"]" * 100_000)
    deep = json.dumps(json.loads("[" * 200 + "1" + "]" * 200))
    line = extract_json(deep.encode()).text
    assert line.startswith("[0]" * data_files.MAX_JSON_PATH_DEPTH + ": [[")  # the rest as compact JSON


def test_json_nul_and_lone_surrogates_become_storable() -> None:
    doc = extract_json(b'{"a": "x\\u0000y", "b": "\\ud800"}')
    assert doc.text == "a: x y\nb: ?"


@pytest.mark.parametrize(
    ("filename", "language"), [("main.py", "Python"), ("app.tsx", "TypeScript (TSX)"), ("lib.rs", "Rust")]
)
def test_source_code_is_headed_with_file_name_and_language(filename: str, language: str) -> None:
    doc = extract_code(b"fn main() {}\n", filename)
    assert doc.text == f"File: {filename} ({language})\n\nfn main() {{}}\n"
    assert doc.title == filename


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("filename", "mime", "expected"),
    [
        ("page.html", "text/html", DocFormat.HTML),
        ("page.xhtml", "application/xhtml+xml", DocFormat.HTML),
        ("data.csv", "text/csv", DocFormat.CSV),
        ("data.csv", "application/vnd.ms-excel", DocFormat.CSV),
        ("data.json", "application/json", DocFormat.JSON),
        ("data.json", None, DocFormat.JSON),
        ("tool.py", "text/x-python", DocFormat.CODE),
        ("app.ts", "video/mp2t", DocFormat.CODE),
        ("run.sh", "application/x-sh", DocFormat.CODE),
        ("conf.yaml", "application/octet-stream", DocFormat.CODE),
        ("Main.java", "text/plain", DocFormat.CODE),
    ],
)
def test_text_formats_are_detected_with_common_mime_aliases(
    filename: str, mime: str | None, expected: DocFormat
) -> None:
    data = {DocFormat.HTML: make_html("<p>x</p>"), DocFormat.JSON: b'{"a": 1}'}.get(expected, b"a,b\n1,2\n")
    assert detect_format(data, filename, mime) is expected


@pytest.mark.parametrize(
    ("fixture", "filename", "mime", "expected"),
    [
        ("report_docx", "r.docx", DOCX_MIME, DocFormat.DOCX),
        ("report_docx", "r.docx", "application/zip", DocFormat.DOCX),
        ("deck_pptx", "d.pptx", PPTX_MIME, DocFormat.PPTX),
        ("book_xlsx", "b.xlsx", XLSX_MIME, DocFormat.XLSX),
        ("book_xlsx", "b.xlsx", "application/vnd.ms-excel", DocFormat.XLSX),
        ("book_xlsx", "upload", "application/zip", DocFormat.XLSX),  # no extension: the content decides
    ],
)
def test_office_formats_are_detected_from_the_package_content_type(
    request: pytest.FixtureRequest, fixture: str, filename: str, mime: str, expected: DocFormat
) -> None:
    assert detect_format(request.getfixturevalue(fixture), filename, mime) is expected


def test_docx_declared_as_xlsx_is_unsupported_format(report_docx: bytes) -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, report_docx, "report.xlsx", XLSX_MIME)
    assert message == f"declared {XLSX_MIME} but the content is a Word document (DOCX), not an Excel workbook (XLSX)."


def test_plain_zip_named_docx_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, _plain_zip(), "a.docx", None)
    assert (
        message
        == "the file name ends in .docx but the content is a ZIP archive (such as DOCX, XLSX or PPTX), not a Word document (DOCX)."
    )


def _plain_zip() -> bytes:
    return rewrite_zip(make_zip_with_entries(1), replace={"[Content_Types].xml": b"<Types/>"})


def test_html_declared_as_pdf_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, make_html("<p>x</p>"), "page.pdf", "application/pdf")
    assert message == "declared application/pdf but the content is an HTML page, not a PDF."


def test_binary_declared_as_csv_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, bytes(range(256)), "data.csv", "text/csv")
    assert message.startswith("binary content declared as text (text/csv)")


def test_text_that_is_not_json_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"just words", "data.json", "application/json")
    assert message == "declared application/json but the content is text, not JSON."


# ---------------------------------------------------------------- hostile archives


@pytest.fixture(scope="module")
def zip_bomb() -> bytes:
    return make_zip_bomb("docx", entry_mb=1024)


def test_zip_bomb_is_refused_quickly_without_inflating(zip_bomb: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def recording_open(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        opened.append(name if isinstance(name, str) else name.filename)
        return real_open(self, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "open", recording_open)
    assert len(zip_bomb) < 3 * 1024 * 1024
    started = time.perf_counter()
    message = fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, detect_format, zip_bomb, "report.docx", DOCX_MIME)
    assert time.perf_counter() - started < 1
    assert message.startswith("The file was refused as a possible zip bomb: one entry expands")
    assert "word/media/zeros.bin" not in opened
    fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, extract_docx, zip_bomb)  # the extractor checks again


def test_archive_expanding_past_the_total_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ooxml, "MAX_UNCOMPRESSED_BYTES", 1024 * 1024)
    data = make_docx([("", "word " * 300_000)])
    message = fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, detect_format, data, "big.docx", None)
    assert "expands to more than 1 MB" in message


def test_entry_that_inflates_past_its_declared_size_is_refused(report_docx: bytes) -> None:
    padded = rewrite_zip(report_docx, replace={"word/document.xml": _document_xml(report_docx) + b" " * 3_000_000})
    lying = make_lying_zip(padded, "word/document.xml", 40_000)
    assert detect_format(lying, "r.docx", DOCX_MIME) is DocFormat.DOCX  # the directory alone looks fine
    message = fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, extract_docx, lying)
    assert (
        message == "The file was refused as a possible zip bomb: an entry inflates to more than the size it declares."
    )


def _document_xml(docx: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(docx)) as archive:
        return archive.read("word/document.xml")


def test_archive_with_too_many_entries_is_refused() -> None:
    message = fails(ErrorCode.RESOURCE_LIMIT_EXCEEDED, detect_format, make_zip_with_entries(3_000), "a.docx", None)
    assert message.startswith("The file is a zip with 3,001 entries")


@pytest.mark.parametrize("name", ["../evil.xml", "/etc/evil.xml", "word\\..\\evil.xml", "C:/evil.xml"])
def test_archive_with_unsafe_entry_names_is_refused(report_docx: bytes, name: str) -> None:
    data = rewrite_zip(report_docx, add={name: b"<x/>"})
    assert "unsafe path" in fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, data, "r.docx", None)


def test_nested_archive_is_refused_except_as_an_embedded_object(report_docx: bytes) -> None:
    nested = rewrite_zip(report_docx, add={"word/media/inner.zip": b"PK\x05\x06" + bytes(18)})
    assert "nested archive" in fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, nested, "r.docx", None)
    embedded = rewrite_zip(report_docx, add={"word/embeddings/Sheet1.xlsx": b"PK\x05\x06" + bytes(18)})
    assert extract_docx(embedded).title == "Quarterly Report"


def test_billion_laughs_docx_is_refused() -> None:
    data = make_billion_laughs_docx()
    assert detect_format(data, "laughs.docx", DOCX_MIME) is DocFormat.DOCX  # a real package…
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_docx, data)  # …whose XML is refused before parsing
    assert "DOCTYPE" in message


@pytest.mark.parametrize(
    ("fixture", "part", "extract", "doctype"),
    [
        ("book_xlsx", "xl/workbook.xml", extract_xlsx, BILLION_LAUGHS_DTD),
        ("book_xlsx", "xl/worksheets/sheet1.xml", extract_xlsx, BILLION_LAUGHS_DTD),
        ("deck_pptx", "ppt/presentation.xml", extract_pptx, '<!DOCTYPE x SYSTEM "file:///etc/passwd">'),
        ("report_docx", "word/styles.xml", extract_docx, '<!DOCTYPE x [<!ENTITY e SYSTEM "http://example.com/">]>'),
    ],
)
def test_doctype_in_any_office_part_is_refused(  # type: ignore[no-untyped-def]
    request: pytest.FixtureRequest, fixture: str, part: str, extract, doctype: str
) -> None:
    crafted = inject_doctype(request.getfixturevalue(fixture), part, doctype)
    assert "DOCTYPE" in fails(ErrorCode.EXTRACTION_FAILED, extract, crafted)


def test_damaged_office_file_is_extraction_failed(report_docx: bytes) -> None:
    data = rewrite_zip(report_docx, replace={"word/document.xml": b"<w:document>not closed"})
    assert "damaged" in fails(ErrorCode.EXTRACTION_FAILED, extract_docx, data)


# ---------------------------------------------------------------- isolation


def _doc(text: str) -> ExtractedDocument:
    return ExtractedDocument(text=text, pages=1, words=1, page_offsets=[0])


def sleep_forever(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    time.sleep(600)
    raise AssertionError("not killed")


def exit_abruptly(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    os._exit(9)


def segfault(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    ctypes.string_at(0)
    raise AssertionError("survived a NULL read")


def exhaust_memory(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    hoard = bytearray(8 * 1024**3)
    return _doc(str(len(hoard)))


def raise_bug(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    raise KeyError("internal detail /secret/path")


def report_process(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    import resource

    logging.getLogger("tests.extractor").warning("hello from %s", "the extractor")
    stdout_is_stderr = os.path.samefile("/proc/self/fd/1", "/proc/self/fd/2")
    facts = {
        "pid": os.getpid(),
        "memory": resource.getrlimit(resource.RLIMIT_AS)[0],
        "stdout_is_stderr": stdout_is_stderr,
    }
    return _doc(json.dumps(facts))


def write_pid_and_hang(data: bytes, fmt: DocFormat, **_: object) -> ExtractedDocument:
    Path(data.decode()).write_text(str(os.getpid()))
    time.sleep(600)
    raise AssertionError("not killed")


def _facts() -> dict[str, object]:
    return json.loads(extract_isolated(b"x", DocFormat.TEXT, timeout=30, extractor=report_process).text)  # type: ignore[no-any-return]


def test_isolated_extraction_gives_the_same_document_as_in_thread(report_docx: bytes, deck_pptx: bytes) -> None:
    pdf = make_pdf(["First page text.", "Second page text."], title="Handbook")
    for data, fmt in [(pdf, DocFormat.PDF), (report_docx, DocFormat.DOCX), (deck_pptx, DocFormat.PPTX)]:
        assert extract_isolated(data, fmt, timeout=60) == extract_document(data, fmt)
    assert extract_isolated(b"x = 1\n", DocFormat.CODE, timeout=60, filename="a.py").title == "a.py"


def test_rag_error_in_the_extractor_arrives_unchanged() -> None:
    encrypted = make_pdf(["Secret."], encrypt_password="pw")
    pages = make_pdf(["a", "b", "c"])
    for data, kwargs in [(encrypted, {}), (pages, {"max_pages": 2})]:
        with pytest.raises(RagError) as here:
            extract_document(data, DocFormat.PDF, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(RagError) as there:
            extract_isolated(data, DocFormat.PDF, timeout=60, **kwargs)  # type: ignore[arg-type]
        expected, got = here.value, there.value
        assert (got.code, got.message, got.suggested_action, got.retryable, got.details) == (
            expected.code, expected.message, expected.suggested_action, expected.retryable, expected.details,
        )  # fmt: skip


def test_extractor_process_is_reused_capped_and_writes_nothing_to_stdout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    first, second = _facts(), _facts()
    assert first["pid"] == second["pid"] != os.getpid()
    assert first["memory"] == 2048 * 1024 * 1024  # room for the OCR engine (isolation.MEMORY_LIMIT_BYTES)
    assert first["stdout_is_stderr"] is True
    assert "[extractor] hello from the extractor" in caplog.text  # its log records reach ours


def test_hanging_parser_times_out_and_the_next_call_works() -> None:
    before = _facts()["pid"]
    started = time.perf_counter()
    message = fails(
        ErrorCode.EXTRACTION_FAILED, extract_isolated, b"x", DocFormat.TEXT, timeout=1, extractor=sleep_forever
    )
    assert time.perf_counter() - started < 5
    assert message.startswith("Extracting text from the file took longer than 1 s and was stopped")
    with pytest.raises(ProcessLookupError):
        os.kill(int(before), 0)  # type: ignore[call-overload]
    assert extract_isolated(b"still here", DocFormat.TEXT, timeout=30).text == "still here"


@pytest.mark.parametrize(
    ("parser", "reason"),
    [
        (exit_abruptly, "it stopped unexpectedly"),
        (segfault, "it stopped unexpectedly"),
        (exhaust_memory, "it needed more memory than allowed"),
    ],
)
def test_crashing_parser_fails_that_file_and_the_next_call_works(parser, reason: str) -> None:  # type: ignore[no-untyped-def]
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_isolated, b"x", DocFormat.TEXT, timeout=30, extractor=parser)
    assert message.startswith(f"The parser failed on this file ({reason})")
    assert extract_isolated(b"next file", DocFormat.TEXT, timeout=30).text == "next file"


def test_unexpected_parser_exception_is_extraction_failed_without_its_text() -> None:
    message = fails(
        ErrorCode.EXTRACTION_FAILED, extract_isolated, b"x", DocFormat.TEXT, timeout=30, extractor=raise_bug
    )
    assert "secret" not in message and "KeyError" not in message


def test_idle_extractor_killed_from_outside_is_replaced_transparently() -> None:
    pid = int(_facts()["pid"])  # type: ignore[call-overload]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and "Z" not in _proc_state(pid):
        time.sleep(0.05)
    assert extract_isolated(b"fine", DocFormat.TEXT, timeout=30).text == "fine"


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except (OSError, IndexError):
        return "gone"


def test_two_files_are_extracted_in_parallel() -> None:
    def hang_briefly() -> None:
        fails(ErrorCode.EXTRACTION_FAILED, extract_isolated, b"x", DocFormat.TEXT, timeout=1.5, extractor=sleep_forever)

    started = time.perf_counter()
    threads = [threading.Thread(target=hang_briefly) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.perf_counter() - started < 2.9


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_extractor_dies_with_the_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "extractor.pid"
    script = f"""
import os, signal, threading, time
from pathlib import Path
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.isolation import extract_isolated
from tests.unit.test_ingest_formats import write_pid_and_hang
threading.Thread(target=extract_isolated, args=({str(pid_file).encode()!r}, DocFormat.TEXT),
                 kwargs={{"timeout": 600, "extractor": write_pid_and_hang}}, daemon=True).start()
while not Path({str(pid_file)!r}).exists():
    time.sleep(0.05)
os.kill(os.getpid(), signal.SIGKILL)
"""
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.run([sys.executable, "-c", script], cwd=root, timeout=60, capture_output=True)
    assert worker.returncode == -signal.SIGKILL, worker.stderr.decode()[-2000:]
    extractor_pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _proc_state(extractor_pid) not in ("gone", "Z"):
        time.sleep(0.1)
    assert _proc_state(extractor_pid) in ("gone", "Z")
