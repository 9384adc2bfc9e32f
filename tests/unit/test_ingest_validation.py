"""Upload validation and text extraction (SPEC §4 "Ingestion"): each bad input has its own
error code and message; the good paths give the text, pages, offsets and title."""

from __future__ import annotations

import base64
import codecs
import logging
from io import BytesIO

import pytest
from pypdf import PdfReader

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extracted import count_words
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from rag_worker.ingest.metadata import validate_metadata
from rag_worker.ingest.pdf import extract_pdf
from rag_worker.ingest.text import extract_text_document
from rag_worker.ingest.validation import BYTES_PER_MB, data_url_mime, decode_base64, sanitize_filename
from tests.fixtures.documents import (
    REAL_WORLD_PDF_PAGES,
    REAL_WORLD_PDF_PHRASE,
    SAMPLE_MARKDOWN_TITLE,
    make_image_only_pdf,
    make_pdf,
    real_world_pdf,
    sample_markdown,
)

MB10 = 10 * BYTES_PER_MB
PAGES = ["Alpha page about graphs and entities.", "Beta page about chunks.", "Gamma page about queries."]


def fails(code: ErrorCode, fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    """Call fn, assert it raises RagError with `code`, return the message."""
    with pytest.raises(RagError) as info:
        fn(*args, **kwargs)
    assert info.value.code is code, info.value
    return info.value.message


@pytest.fixture(scope="module")
def three_page_pdf() -> bytes:
    return make_pdf(PAGES, title="Graph Handbook")


# ---------------------------------------------------------------- base64


@pytest.mark.parametrize(
    "content",
    [
        base64.b64encode(b"hello world!").decode(),
        base64.urlsafe_b64encode(b"\xfb\xff\xfe hello").decode(),
        base64.urlsafe_b64encode(b"\xfb\xff\xfe hello").decode().rstrip("="),
        base64.encodebytes(b"hello world! " * 20).decode(),  # MIME line breaks
        "  aGVs\r\n bG8g\td29y bGQh  ",
    ],
)
def test_base64_accepts_standard_urlsafe_unpadded_and_whitespace(content: str) -> None:
    compact = "".join(content.split()).replace("-", "+").replace("_", "/")
    expected = base64.b64decode(compact + "=" * (-len(compact) % 4))
    assert decode_base64(content, MB10) == expected


def test_base64_data_url_prefix_is_stripped_and_its_mime_reported() -> None:
    content = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.7 data").decode()
    assert decode_base64(content, MB10) == b"%PDF-1.7 data"
    assert data_url_mime(content) == "application/pdf"
    assert data_url_mime("aGVsbG8=") is None


def test_base64_data_url_without_base64_marker_is_invalid() -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, decode_base64, "data:text/plain,hello", MB10)
    assert "without ';base64'" in message


def test_base64_with_non_alphabet_character_is_invalid_parameter() -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, decode_base64, "aGVs!bG8=", MB10)
    assert message.startswith("content is not valid base64")
    assert "'!'" in message


def test_base64_with_non_ascii_character_names_its_position() -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, decode_base64, "aGVsé8=", MB10)
    assert "'é' (U+00E9) at position 4" in message


@pytest.mark.parametrize("content", ["aGVsbG8==", "=aGVsbG8", "aGVs=bG8", "aGVsb", "a"])
def test_base64_with_bad_padding_is_invalid_parameter(content: str) -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, decode_base64, content, MB10)
    assert message.startswith("content is not valid base64")
    assert "padding" in message


def test_base64_mixing_both_alphabets_is_invalid() -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, decode_base64, "ab+-cd/_", MB10)
    assert "mixes" in message


def test_base64_that_is_not_a_string_is_invalid() -> None:
    fails(ErrorCode.INVALID_PARAMETER, decode_base64, b"aGVsbG8=", MB10)  # type: ignore[arg-type]


def test_oversize_upload_is_refused_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_decoding(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("decoded an oversized upload")

    monkeypatch.setattr("rag_worker.ingest.validation.binascii.a2b_base64", no_decoding)
    content = base64.b64encode(bytes(12 * BYTES_PER_MB)).decode()
    error = pytest.raises(RagError, decode_base64, content, MB10).value
    assert error.code is ErrorCode.FILE_TOO_LARGE
    assert error.message == "The file is 12 MB; the limit is 10 MB."
    assert error.details == {"size_bytes": 12 * BYTES_PER_MB, "max_bytes": MB10}


def test_size_limit_counts_decoded_bytes_not_line_breaks() -> None:
    limit = 3000
    exact = base64.encodebytes(bytes(limit)).decode()  # 76-char lines: longer than limit * 4/3
    assert len(decode_base64(exact, limit)) == limit
    error = pytest.raises(RagError, decode_base64, base64.encodebytes(bytes(limit + 1)).decode(), limit).value
    assert error.code is ErrorCode.FILE_TOO_LARGE
    assert error.details == {"size_bytes": limit + 1, "max_bytes": limit}


def test_file_slightly_over_the_limit_does_not_read_as_equal_sizes() -> None:
    content = base64.b64encode(bytes(MB10 + 5000)).decode()
    message = fails(ErrorCode.FILE_TOO_LARGE, decode_base64, content, MB10)
    assert message == "The file is 10.005 MB; the limit is 10 MB."


# ---------------------------------------------------------------- filenames


def test_filename_is_nfc_normalised_and_stripped() -> None:
    assert sanitize_filename("  Cafe\u0301 notes.md \n") == "Caf\u00e9 notes.md"


@pytest.mark.parametrize(
    "name",
    ["../x.pdf", "a/b.md", "C:\\x.pdf", "a\\b.md", "/etc/passwd", "dir\uff0freport.pdf", "..\\..\\boot.ini"],
)
def test_filename_with_folders_is_refused(name: str) -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name)
    assert "without folders" in message


@pytest.mark.parametrize("name", ["C:x.pdf", "d:report.md"])
def test_filename_with_drive_letter_is_refused(name: str) -> None:
    assert "drive letter" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name)


@pytest.mark.parametrize("name", [".", "..", "..."])
def test_filename_of_only_dots_is_refused(name: str) -> None:
    assert "'.' or '..'" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name)


@pytest.mark.parametrize("name", ["a\x00b.pdf", "line\nbreak.md", "\x1b[31mred.md", "tab\there.txt", "del\x7f.md"])
def test_filename_with_control_characters_is_refused(name: str) -> None:
    assert "control characters" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name)


@pytest.mark.parametrize(
    "char", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
)
def test_filename_with_bidi_override_is_refused(char: str) -> None:
    message = fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, f"invoice{char}fdp.exe.md")
    assert "bidirectional" in message


@pytest.mark.parametrize("name", ["", "   ", "\u3000"])
def test_empty_filename_is_refused(name: str) -> None:
    assert "is empty" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name)


def test_filename_limit_is_255_utf8_bytes() -> None:
    assert sanitize_filename("a" * 251 + ".pdf") == "a" * 251 + ".pdf"
    assert "too long (256 bytes" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, "a" * 252 + ".pdf")
    # 126 two-byte characters: 129 characters but 255 + 3 bytes.
    assert "too long" in fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, "\u00e9" * 127 + ".md")


def test_each_filename_problem_has_its_own_message() -> None:
    names = ["a/b.md", "C:x.pdf", "..", "a\x00.md", "a\u202e.md", "", "a" * 300]
    messages = {fails(ErrorCode.INVALID_PARAMETER, sanitize_filename, name) for name in names}
    assert len(messages) == len(names)


# ---------------------------------------------------------------- formats


def test_pdf_declared_as_markdown_is_unsupported_format(three_page_pdf: bytes) -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, three_page_pdf, "notes.md", "text/markdown")
    assert message.startswith("declared text/markdown but the content is a PDF")


def test_markdown_declared_as_pdf_is_unsupported_format() -> None:
    data = sample_markdown().encode()
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, data, "report.pdf", "application/pdf")
    assert message == "declared application/pdf but the content is text, not a PDF."


def test_markdown_named_pdf_without_declared_type_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"# Title\n", "report.pdf", None)
    assert message == "the file name ends in .pdf but the content is text, not a PDF."


def test_extension_and_mime_type_that_disagree_are_unsupported_format(three_page_pdf: bytes) -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, three_page_pdf, "report.pdf", "text/markdown")
    assert message.startswith("declared text/markdown but the file name ends in .pdf")
    assert "the content looks like a PDF" in message


@pytest.mark.parametrize(
    ("data", "filename"),
    # (Latin-1 text is text now: tests/unit/test_ingest_sent_files.py)
    [(b"\x00\x01\x02\x03binary", "notes.md"), (b"\x81\x02\x03\x9d\x1b\xfe binary", "notes.txt"), (b"\xff\xfe\x00\x00x", "a.txt")],
)
def test_binary_content_declared_as_text_is_unsupported_format(data: bytes, filename: str) -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, data, filename, "text/plain")
    assert message.startswith("binary content declared as text")


def test_zip_declared_as_markdown_says_it_is_an_archive() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"PK\x03\x04\x14\x00", "notes.md", None)
    assert "the content is a ZIP archive" in message


def test_unknown_extension_lists_supported_types() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"PK\x03\x04", "slides.key", None)
    assert message.startswith("'.key' files are not supported")
    assert "PDF (.pdf)" in message and "Markdown (.md" in message and "plain text (.txt" in message


def test_unsupported_declared_type_is_named() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"# hi", "notes.md", "image/gif")
    assert message.startswith("declared image/gif, which is not a supported type")


def test_empty_file_is_its_own_error() -> None:
    data = decode_base64("", MB10)
    message = fails(ErrorCode.INVALID_PARAMETER, detect_format, data, "notes.md", "text/markdown")
    assert message.startswith("the file is empty")


@pytest.mark.parametrize(
    ("filename", "mime", "expected"),
    [
        ("notes.md", "text/markdown", DocFormat.MARKDOWN),
        ("notes.MD", "Text/Markdown; charset=UTF-8", DocFormat.MARKDOWN),
        ("notes.markdown", "text/x-markdown", DocFormat.MARKDOWN),
        ("notes.md", "text/plain", DocFormat.MARKDOWN),
        ("notes.md", "application/octet-stream", DocFormat.MARKDOWN),
        ("notes.md", None, DocFormat.MARKDOWN),
        ("notes.txt", "text/plain; charset=utf-8", DocFormat.TEXT),
        ("notes", "text/markdown", DocFormat.MARKDOWN),
    ],
)
def test_text_formats_accept_common_mime_aliases(filename: str, mime: str | None, expected: DocFormat) -> None:
    assert detect_format(b"# Title\n\nBody", filename, mime) is expected


@pytest.mark.parametrize("mime", ["application/pdf", "application/x-pdf", "APPLICATION/PDF", "", None])
def test_pdf_accepts_common_mime_aliases(three_page_pdf: bytes, mime: str | None) -> None:
    assert detect_format(three_page_pdf, "report.pdf", mime) is DocFormat.PDF


def test_pdf_header_may_follow_up_to_1024_junk_bytes(three_page_pdf: bytes) -> None:
    assert detect_format(b"\x00" * 1024 + three_page_pdf, "report.pdf", "application/pdf") is DocFormat.PDF
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"\x00" * 1025 + three_page_pdf, "r.pdf", None)
    assert "the content is binary data" in message


def test_markdown_that_mentions_the_pdf_header_is_still_text() -> None:
    data = b"# PDF internals\n\nEvery file starts with %PDF-1.7 and ends with %%EOF.\n"
    assert detect_format(data, "internals.md", "text/markdown") is DocFormat.MARKDOWN


def test_utf16_text_with_bom_is_text() -> None:
    data = codecs.BOM_UTF16_LE + "Grüße aus Köln".encode("utf-16-le")
    assert detect_format(data, "greeting.txt", "text/plain") is DocFormat.TEXT


def test_name_without_extension_or_type_is_unsupported_format() -> None:
    message = fails(ErrorCode.UNSUPPORTED_FORMAT, detect_format, b"hello", "README", None)
    assert message.startswith("the file name has no extension and no type was declared")


# ---------------------------------------------------------------- metadata


def test_metadata_is_returned_as_a_normalised_copy() -> None:
    meta = {"author": "Zoe\u0301", "tags": [" graph ", "rag", "graph", ""], "year": 2024, "score": 0.5, "draft": False}
    clean = validate_metadata(meta)
    assert clean == {"author": "Zo\u00e9", "tags": ["graph", "rag"], "year": 2024, "score": 0.5, "draft": False}
    assert clean is not meta and meta["tags"] == [" graph ", "rag", "graph", ""]
    assert validate_metadata(None) == {}


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({f"k{i}": i for i in range(33)}, "33 keys; at most 32"),
        ({"bad key": 1}, "key 'bad key' is not valid"),
        ({"k" * 65: 1}, "is not valid"),
        ({"": 1}, "key '' is not valid"),
        ({"nested": {"a": 1}}, "'nested' is a nested object"),
        ({"missing": None}, "'missing' is null"),
        ({"ratio": float("nan")}, "'ratio': numbers must be finite"),
        ({"ratio": float("inf")}, "'ratio': numbers must be finite"),
        ({"big": 2**60}, "'big': the number is too large"),
        ({"summary": "x" * 2001}, "'summary': the value has 2001 characters; at most 2000"),
        ({"summary": "nul\x00byte"}, "'summary': the value contains control characters"),
        ({"tags": "a,b"}, "'tags' must be a list of strings, not a string"),
        ({"tags": ["ok", 3]}, "'tags' must be a list of strings; it contains a number"),
        ({"refs": ["x"] * 51}, "'refs' has 51 items; at most 50"),
        ({"refs": ["x" * 201]}, "'refs': an item has 201 characters"),
    ],
)
def test_invalid_metadata_names_the_key(meta: dict[str, object], expected: str) -> None:
    assert expected in fails(ErrorCode.INVALID_METADATA, validate_metadata, meta)


def test_metadata_must_be_an_object() -> None:
    assert "must be an object" in fails(ErrorCode.INVALID_METADATA, validate_metadata, ["tags"])


# ---------------------------------------------------------------- PDF extraction


def test_multi_page_pdf_gives_text_pages_offsets_and_title(three_page_pdf: bytes) -> None:
    doc = extract_pdf(three_page_pdf)
    assert doc.pages == 3
    assert doc.title == "Graph Handbook"
    assert doc.text == "\n\n".join(PAGES)
    assert doc.page_offsets == [0, len(PAGES[0]) + 2, len(PAGES[0]) + len(PAGES[1]) + 4]
    for offset, page in zip(doc.page_offsets, PAGES, strict=True):
        assert doc.text[offset:].startswith(page)
    assert doc.words == sum(len(page.split()) for page in PAGES)
    assert doc.warnings == []


def test_pdf_without_title_metadata_has_no_title() -> None:
    assert extract_pdf(make_pdf(["Some text."])).title is None


def test_encrypted_pdf_is_refused_with_the_reason() -> None:
    data = make_pdf(["Secret text."], encrypt_password="s3cret")
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_pdf, data)
    assert message == "The PDF is encrypted; upload an unencrypted copy."


def test_pdf_encrypted_with_empty_user_password_is_read() -> None:
    data = make_pdf(["Readable although encrypted."], encrypt_password="")
    assert PdfReader(BytesIO(data)).is_encrypted
    assert extract_pdf(data).text == "Readable although encrypted."


def test_image_only_pdf_has_no_text_layer() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_pdf, make_image_only_pdf(pages=2))
    assert message.startswith("The PDF has no text layer and OCR found no readable text")  # grey bars, no letters


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9, 0.99])
def test_truncated_pdf_is_damaged(three_page_pdf: bytes, fraction: float) -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_pdf, three_page_pdf[: int(len(three_page_pdf) * fraction)])
    assert message.startswith("The PDF is damaged or truncated")


@pytest.mark.parametrize("data", [b"%PDF-1.7\n", b"%PDF-1.4\nthis is not a pdf\n%%EOF\n", b"%PDF-" + bytes(500)])
def test_garbage_after_pdf_header_is_damaged(data: bytes) -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_pdf, data)
    assert message.startswith("The PDF is damaged or truncated")
    assert "startxref" not in message and "Stream" not in message  # no pypdf exception text


def _corrupt_page_stream(data: bytes, page_index: int) -> bytes:
    """`data` with the compressed content stream of one page overwritten with junk."""
    contents = PdfReader(BytesIO(data)).pages[page_index].raw_get("/Contents")
    start = data.index(f"\n{contents.idnum} 0 obj".encode())
    stream = data.index(b"stream\n", start) + len(b"stream\n")
    return data[: stream + 10] + b"\xff" * 20 + data[stream + 30 :]


def test_pdf_with_one_damaged_page_is_read_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)  # damage shows as pypdf warnings; make sure they are recorded
    data = _corrupt_page_stream(make_pdf([p * 20 for p in PAGES]), 1)
    doc = extract_pdf(data)
    assert doc.pages == 3
    assert doc.warnings == ["1 of 3 pages could not be read (page 2)."]
    assert "Alpha page" in doc.text and "Gamma page" in doc.text and "Beta page" not in doc.text


def test_pdf_whose_every_page_is_damaged_is_damaged_not_textless() -> None:
    data = make_pdf(["Only page text. " * 20])
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_pdf, _corrupt_page_stream(data, 0))
    assert message.startswith("The PDF is damaged or truncated")


def test_pdf_over_the_page_limit_is_too_large(three_page_pdf: bytes) -> None:
    message = fails(ErrorCode.FILE_TOO_LARGE, extract_pdf, three_page_pdf, max_pages=2)
    assert message == "The PDF has 3 pages; at most 2 can be indexed. Split it into smaller files."


def test_real_world_pdf_extracts_text() -> None:
    doc = extract_pdf(real_world_pdf())
    assert doc.pages == REAL_WORLD_PDF_PAGES
    assert doc.text.startswith(REAL_WORLD_PDF_PHRASE)
    assert doc.words > 20_000
    assert doc.title is None  # its /Title is the placeholder "(anonymous)"
    assert len(doc.page_offsets) == doc.pages and doc.page_offsets == sorted(doc.page_offsets)


# ---------------------------------------------------------------- Markdown and plain text


def test_markdown_title_is_the_first_h1_outside_code_fences() -> None:
    doc = extract_text_document(sample_markdown().encode(), DocFormat.MARKDOWN)
    assert doc.title == SAMPLE_MARKDOWN_TITLE
    assert (doc.pages, doc.page_offsets) == (1, [0])
    assert doc.words == count_words(sample_markdown())

    fenced = "```bash\n# not a title\n```\n\n# Real Title\n"
    assert extract_text_document(fenced.encode(), DocFormat.MARKDOWN).title == "Real Title"


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ('---\ntitle: "From Front Matter"\n---\n# Heading\n', "From Front Matter"),
        ("Setext Title\n============\n\nBody.\n", "Setext Title"),
        ("## Only a subheading\n\nBody.\n", None),
        ("#hashtag is not a heading\n", None),
    ],
)
def test_markdown_title_sources(text: str, title: str | None) -> None:
    assert extract_text_document(text.encode(), DocFormat.MARKDOWN).title == title


def test_plain_text_has_no_title() -> None:
    assert extract_text_document(b"# Looks like a heading\n", DocFormat.TEXT).title is None


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF16_LE + "Grüße\r\naus Köln".encode("utf-16-le"),
        codecs.BOM_UTF16_BE + "Grüße\r\naus Köln".encode("utf-16-be"),
        codecs.BOM_UTF8 + "Grüße\raus Köln".encode(),
        "Grüße\naus Köln".encode(),
    ],
)
def test_text_is_decoded_and_newlines_normalised(data: bytes) -> None:
    doc = extract_text_document(data, DocFormat.TEXT)
    assert doc.text == "Grüße\naus Köln"
    assert doc.words == 3


def test_whitespace_only_text_has_no_text() -> None:
    message = fails(ErrorCode.EXTRACTION_FAILED, extract_text_document, b" \n\t\r\n ", DocFormat.MARKDOWN)
    assert "no text" in message


def test_binary_bytes_are_not_extracted_as_text() -> None:
    fails(ErrorCode.UNSUPPORTED_FORMAT, extract_text_document, b"\x00\x01", DocFormat.TEXT)


def test_extract_document_dispatches_on_format(three_page_pdf: bytes) -> None:
    assert extract_document(three_page_pdf, DocFormat.PDF).pages == 3
    assert extract_document(b"# T\n", DocFormat.MARKDOWN).title == "T"
