"""Archives and e-mails (issue 27, item 14): every file inside is read by its own format and named
`archive.zip/inner.pdf` / `mail.eml/attachment.pdf` in the text; entries, expansion, depth and
item count are bounded for the whole upload, as uploads are."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage

import pytest

from protocol.errors import ErrorCode, RagError
from rag_worker.ingest import containers
from rag_worker.ingest.detection import detect_format
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from tests.fixtures.documents import make_docx, make_pdf, make_zip

PDF_FACT = "The Orinoco pump was serviced on 3 May by Ingrid Dahl."
DOCX_FACT = "The Orinoco budget is 4,200 EUR."


def make_email(*, attachments: dict[str, bytes] | None = None, html: str | None = None) -> bytes:
    message = EmailMessage()
    message["From"] = "Ingrid Dahl <ingrid@example.com>"
    message["To"] = "ops@example.com"
    message["Subject"] = "Service report for Zürich"
    message["Date"] = "Mon, 4 May 2026 10:00:00 +0200"
    message.set_content("Hello,\nthe service report is attached.\nIngrid")
    if html is not None:
        message.add_alternative(html, subtype="html")
    for name, data in (attachments or {}).items():
        maintype, subtype = ("application", "pdf") if name.endswith(".pdf") else ("application", "octet-stream")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


def extract(data: bytes, name: str) -> tuple[DocFormat, str, list[str]]:
    fmt = detect_format(data, name, None)
    document = extract_document(data, fmt, filename=name)
    return fmt, document.text, document.warnings


def test_email_headers_body_and_attachments_are_indexed_each_named_by_its_path() -> None:
    data = make_email(attachments={"report.pdf": make_pdf([PDF_FACT]), "budget.docx": make_docx([("", DOCX_FACT)])})
    fmt, text, warnings = extract(data, "mail.eml")
    assert fmt is DocFormat.EMAIL
    assert "Subject: Service report for Zürich" in text and "From: Ingrid Dahl <ingrid@example.com>" in text
    assert "the service report is attached." in text
    assert f"## mail.eml/report.pdf\n\n{PDF_FACT}" in text
    assert f"## mail.eml/budget.docx\n\n{DOCX_FACT}" in text
    assert warnings == []


def test_email_title_is_its_subject() -> None:
    data = make_email()
    assert extract_document(data, DocFormat.EMAIL, filename="mail.eml").title == "Service report for Zürich"


def test_html_only_part_of_an_email_is_read_as_a_page_when_there_is_no_plain_text() -> None:
    message = EmailMessage()
    message["From"], message["Subject"] = "a@example.com", "Newsletter"
    message.set_content("<html><body><h1>Spring news</h1><p>The <b>Orinoco</b> line ships in June.</p></body></html>",
                        subtype="html")
    _, text, _ = extract(message.as_bytes(), "news.eml")
    assert "The Orinoco line ships in June." in text
    assert "<b>" not in text


def test_zip_of_documents_indexes_each_file_named_archive_slash_inner() -> None:
    data = make_zip({"docs/report.pdf": make_pdf([PDF_FACT]), "budget.docx": make_docx([("", DOCX_FACT)]),
                     "__MACOSX/._budget.docx": b"resource fork", ".DS_Store": b"\x00\x00"})
    fmt, text, warnings = extract(data, "archive.zip")
    assert fmt is DocFormat.ZIP
    assert f"## archive.zip/docs/report.pdf\n\n{PDF_FACT}" in text
    assert f"## archive.zip/budget.docx\n\n{DOCX_FACT}" in text
    assert "resource fork" not in text
    assert warnings == []


def test_email_inside_a_zip_is_read_with_its_attachments() -> None:
    mail = make_email(attachments={"report.pdf": make_pdf([PDF_FACT])})
    _, text, _ = extract(make_zip({"inbox/mail.eml": mail}), "archive.zip")
    assert f"## archive.zip/inbox/mail.eml/report.pdf\n\n{PDF_FACT}" in text


def test_files_that_cannot_be_read_are_named_with_their_reason_and_the_rest_is_indexed() -> None:
    data = make_zip({"report.pdf": make_pdf([PDF_FACT]), "setup.exe": b"MZ\x90\x00 binary", "photo.png": b"\x89PNG\r\n\x1a\n"})
    _, text, warnings = extract(data, "archive.zip")
    assert PDF_FACT in text
    assert len(warnings) == 1
    assert warnings[0].startswith("2 file(s) inside were not indexed: ")
    assert "archive.zip/setup.exe ('.exe' files are not supported" in warnings[0]
    assert "archive.zip/photo.png (a PNG image inside is not read by OCR" in warnings[0]


def test_archive_with_nothing_readable_is_refused_naming_what_was_skipped() -> None:
    with pytest.raises(RagError) as caught:
        extract(make_zip({"setup.exe": b"MZ binary"}), "archive.zip")
    assert caught.value.code is ErrorCode.EXTRACTION_FAILED
    assert caught.value.message.startswith("No file in the archive could be read. Skipped: archive.zip/setup.exe")


def test_archives_nested_deeper_than_the_limit_are_not_opened() -> None:
    data = make_zip({"report.pdf": make_pdf([PDF_FACT])})
    for level in range(containers.MAX_DEPTH):
        data = make_zip({f"level{level}.zip": data})
    with pytest.raises(RagError) as caught:
        extract(data, "archive.zip")
    assert caught.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED
    assert caught.value.message == (
        "archive.zip/level2.zip/level1.zip/level0.zip/report.pdf is inside more than 3 nested archives or e-mails; "
        "at most 3 levels are opened."
    )


def test_archive_with_more_files_than_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containers.ContainerBudget, "__init__", lambda self: setattr(self, "items", 3) or
                        setattr(self, "bytes", containers.MAX_EXPANDED_BYTES))
    data = make_zip({f"note{n}.txt": b"Orinoco note" for n in range(5)})
    with pytest.raises(RagError) as caught:
        extract(data, "archive.zip")
    assert caught.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED
    assert "more than 500 files" in caught.value.message


def test_zip_bomb_entry_inside_an_archive_refuses_the_upload() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("zeros.txt", "w", force_zip64=True) as entry:
            for _ in range(200):
                entry.write(bytes(1024 * 1024))
    with pytest.raises(RagError) as caught:
        extract(out.getvalue(), "archive.zip")
    assert caught.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED


def test_encrypted_zip_entries_are_refused_saying_so() -> None:
    data = bytearray(make_zip({"a.txt": b"Orinoco"}))
    # Set the "encrypted" flag bit in the local and central headers, as a password-protected zip has it.
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        data[at + offset] |= 0x1
    with pytest.raises(RagError) as caught:
        extract(bytes(data), "archive.zip")
    assert "encrypted" in caught.value.message


def test_a_zip_is_no_longer_told_to_be_converted() -> None:
    data = make_zip({"report.pdf": make_pdf([PDF_FACT])})
    assert detect_format(data, "archive.zip", "application/zip") is DocFormat.ZIP
