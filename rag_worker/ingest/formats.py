"""The document formats this server reads: one table, `FORMATS`, and the names derived from it.

`FORMATS` says for each format its extensions, the MIME types that may declare it
(with the aliases clients really send), the type stored with the document, and how to
recognise its content, how the upload tool names it (`family`) and its extractor.  Adding a
format means a `DocFormat` member and a `FormatSpec` row here, beside its extractor's module.  Deciding which format an upload is, from its
extension, declared type and bytes, is `detection.detect_format`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from .containers import extract_zip, is_plain_zip
from .data_files import extract_csv, extract_json
from .email_message import extract_email, looks_like_email
from .epub import extract_epub
from .extracted import ExtractedDocument, ExtractOptions, Extractor
from .html_text import extract_html, looks_like_html
from .images import extract_image
from .legacy_office import is_outlook_message
from .magic import (
    looks_like_jpeg,
    looks_like_json,
    looks_like_pdf,
    looks_like_png,
    looks_like_text,
    looks_like_tiff,
)
from .notebook import extract_notebook
from .office import extract_docx, extract_pptx, extract_xlsx
from .ooxml import OfficeKind, is_office_kind
from .opendocument import extract_odp, extract_ods, extract_odt
from .outlook_message import extract_msg
from .pdf import extract_pdf
from .rtf import extract_rtf, looks_like_rtf
from .source_code import LANGUAGES, MIME_TYPES, extract_code
from .text import extract_text_document
from .zip_packages import PackageKind, is_package_kind

# Declared types that mean "I don't know": the extension and the bytes decide.
UNKNOWN_MIME_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "application/unknown"})


class DocFormat(enum.StrEnum):
    """A document format this server can extract text from."""

    PDF = "pdf"
    MARKDOWN = "markdown"
    TEXT = "text"
    HTML = "html"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    CSV = "csv"
    JSON = "json"
    NOTEBOOK = "notebook"
    CODE = "code"
    ODT = "odt"
    ODS = "ods"
    ODP = "odp"
    RTF = "rtf"
    EPUB = "epub"
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"
    EMAIL = "email"
    OUTLOOK_MESSAGE = "msg"
    ZIP = "zip"


def _office(kind: OfficeKind) -> Callable[[bytes], bool]:
    return lambda data: is_office_kind(data, kind)


def _package(kind: PackageKind) -> Callable[[bytes], bool]:
    return lambda data: is_package_kind(data, kind)


def _bytes_only(extract: Callable[[bytes], ExtractedDocument]) -> Extractor:
    """An extractor that needs nothing but the bytes."""
    return lambda data, _options: extract(data)


def _image(data: bytes, options: ExtractOptions) -> ExtractedDocument:
    return extract_image(data, ocr=options.ocr, max_pages=options.max_pages)


@dataclass(frozen=True)
class FormatSpec:
    """What identifies one format and how it is named.

    `matches` is the content check; for Office formats it also refuses zip bombs (raising
    `RagError`), so an unsafe archive is stopped while its format is detected.
    `canonical_mime` is stored with a document whose declared type says nothing more.
    `noun` names such content in messages ("not a PDF", "not a Word document (DOCX)").
    """

    format: DocFormat
    label: str
    extensions: tuple[str, ...]
    mime_types: frozenset[str]
    matches: Callable[[bytes], bool]
    is_text: bool
    canonical_mime: str
    noun: str
    family: str  # how the upload tool's description names it: one of protocol's UPLOAD_FAMILIES
    extract: Extractor  # its text, as `extraction.extract_document` asks for it
    #: A folder walk takes it without being asked (images are not: a repository's icons and
    #: screenshots are rarely documents, and each costs seconds of OCR).
    walked: bool = True


_ZIP_TYPES = frozenset({"application/zip", "application/x-zip-compressed", "application/x-zip"})
_OOXML = "application/vnd.openxmlformats-officedocument"
_ODF = "application/vnd.oasis.opendocument"
# MIME types are compared lower-cased (`normalize_mime`).
_MACRO_WORD = "application/vnd.ms-word.document.macroenabled.12"
_MACRO_POWERPOINT = "application/vnd.ms-powerpoint.presentation.macroenabled.12"
_MACRO_EXCEL = "application/vnd.ms-excel.sheet.macroenabled.12"

FORMATS: dict[DocFormat, FormatSpec] = {
    spec.format: spec
    for spec in (
        FormatSpec(
            DocFormat.PDF,
            "PDF",
            (".pdf",),
            frozenset({"application/pdf", "application/x-pdf", "application/acrobat"}),
            looks_like_pdf,
            is_text=False,
            canonical_mime="application/pdf",
            noun="a PDF",
            family="PDF or scan",
            extract=lambda data, o: extract_pdf(data, max_pages=o.max_pages, ocr=o.ocr),
        ),
        FormatSpec(
            DocFormat.MARKDOWN,
            "Markdown",
            (".md", ".markdown", ".mdown", ".mkd"),
            # Many clients (and Python's mimetypes on older systems) send text/plain for .md.
            frozenset({"text/markdown", "text/x-markdown", "text/plain"}),
            looks_like_text,
            is_text=True,
            canonical_mime="text/markdown",
            noun="Markdown",
            family="Markdown",
            extract=lambda data, _: extract_text_document(data, DocFormat.MARKDOWN),
        ),
        FormatSpec(
            DocFormat.TEXT,
            "plain text",
            # LaTeX and reStructuredText are read as they are written: their markup is mostly words.
            (".txt", ".text", ".tex", ".latex", ".ltx", ".rst"),
            frozenset({"text/plain", "text/x-tex", "application/x-tex", "application/x-latex", "text/x-rst"}),
            looks_like_text,
            is_text=True,
            canonical_mime="text/plain",
            noun="plain text",
            family="text",
            extract=lambda data, _: extract_text_document(data, DocFormat.TEXT),
        ),
        FormatSpec(
            DocFormat.HTML,
            "HTML",
            (".html", ".htm", ".xhtml"),
            frozenset({"text/html", "application/xhtml+xml", "application/xhtml"}),
            looks_like_html,
            is_text=True,
            canonical_mime="text/html",
            noun="HTML",
            family="HTML",
            extract=_bytes_only(extract_html),
        ),
        FormatSpec(
            DocFormat.DOCX,
            "Word",
            (".docx", ".docm"),  # macro-enabled: the same XML (macros never run)
            # Old Windows registries send application/msword for every Word file.
            frozenset({f"{_OOXML}.wordprocessingml.document", "application/msword", _MACRO_WORD}) | _ZIP_TYPES,
            _office("docx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.wordprocessingml.document",
            noun="a Word document (DOCX)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_docx),
        ),
        FormatSpec(
            DocFormat.PPTX,
            "PowerPoint",
            (".pptx", ".pptm"),  # macro-enabled: the same XML (macros never run)
            frozenset({f"{_OOXML}.presentationml.presentation", "application/vnd.ms-powerpoint", _MACRO_POWERPOINT})
            | _ZIP_TYPES,
            _office("pptx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.presentationml.presentation",
            noun="a PowerPoint presentation (PPTX)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_pptx),
        ),
        FormatSpec(
            DocFormat.XLSX,
            "Excel",
            (".xlsx", ".xlsm"),  # macro-enabled: the same XML (macros never run)
            frozenset({f"{_OOXML}.spreadsheetml.sheet", "application/vnd.ms-excel", _MACRO_EXCEL}) | _ZIP_TYPES,
            _office("xlsx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.spreadsheetml.sheet",
            noun="an Excel workbook (XLSX)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_xlsx),
        ),
        FormatSpec(
            DocFormat.CSV,
            "CSV",
            (".csv", ".tsv"),
            # Windows browsers send application/vnd.ms-excel for .csv (Excel owns the extension).
            frozenset(
                {
                    "text/csv",
                    "application/csv",
                    "text/x-csv",
                    "application/x-csv",
                    "text/comma-separated-values",
                    "text/tab-separated-values",
                    "application/vnd.ms-excel",
                    "text/plain",
                }
            ),
            looks_like_text,
            is_text=True,
            canonical_mime="text/csv",
            noun="CSV",
            family="text",
            extract=_bytes_only(extract_csv),
        ),
        FormatSpec(
            DocFormat.JSON,
            "JSON",
            (".json",),
            frozenset({"application/json", "text/json", "application/x-json", "text/plain"}),
            looks_like_json,
            is_text=True,
            canonical_mime="application/json",
            noun="JSON",
            family="text",
            extract=_bytes_only(extract_json),
        ),
        FormatSpec(
            DocFormat.NOTEBOOK,
            "Jupyter notebook",
            (".ipynb",),
            frozenset({"application/x-ipynb+json", "application/json", "text/plain"}),
            looks_like_json,
            is_text=True,
            canonical_mime="application/x-ipynb+json",
            noun="a Jupyter notebook",
            family="text",
            extract=_bytes_only(extract_notebook),
        ),
        FormatSpec(
            DocFormat.ODT,
            "OpenDocument text",
            (".odt",),
            frozenset({f"{_ODF}.text", "application/x-vnd.oasis.opendocument.text"}) | _ZIP_TYPES,
            _package("odt"),
            is_text=False,
            canonical_mime=f"{_ODF}.text",
            noun="an OpenDocument text (ODT)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_odt),
        ),
        FormatSpec(
            DocFormat.ODS,
            "OpenDocument spreadsheet",
            (".ods",),
            frozenset({f"{_ODF}.spreadsheet", "application/x-vnd.oasis.opendocument.spreadsheet"}) | _ZIP_TYPES,
            _package("ods"),
            is_text=False,
            canonical_mime=f"{_ODF}.spreadsheet",
            noun="an OpenDocument spreadsheet (ODS)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_ods),
        ),
        FormatSpec(
            DocFormat.ODP,
            "OpenDocument presentation",
            (".odp",),
            frozenset({f"{_ODF}.presentation", "application/x-vnd.oasis.opendocument.presentation"}) | _ZIP_TYPES,
            _package("odp"),
            is_text=False,
            canonical_mime=f"{_ODF}.presentation",
            noun="an OpenDocument presentation (ODP)",
            family="Office/OpenDocument",
            extract=_bytes_only(extract_odp),
        ),
        FormatSpec(
            DocFormat.RTF,
            "RTF",
            (".rtf",),
            # Word registers itself for RTF, so some Windows clients send application/msword.
            frozenset({"application/rtf", "text/rtf", "application/x-rtf", "text/richtext", "application/msword"}),
            looks_like_rtf,
            is_text=False,
            canonical_mime="application/rtf",
            noun="an RTF document",
            family="RTF",
            extract=_bytes_only(extract_rtf),
        ),
        FormatSpec(
            DocFormat.EPUB,
            "EPUB",
            (".epub",),
            frozenset({"application/epub+zip", "application/epub", "application/x-epub+zip"}) | _ZIP_TYPES,
            _package("epub"),
            is_text=False,
            canonical_mime="application/epub+zip",
            noun="an EPUB e-book",
            family="EPUB",
            extract=_bytes_only(extract_epub),
        ),
        FormatSpec(
            DocFormat.CODE,
            "source code",
            tuple(LANGUAGES),
            MIME_TYPES,
            looks_like_text,
            is_text=True,
            canonical_mime="text/plain",
            noun="source code",
            family="code",
            extract=lambda data, o: extract_code(data, o.filename),
        ),
        FormatSpec(
            DocFormat.EMAIL,
            "e-mail",
            (".eml",),
            frozenset({"message/rfc822", "text/plain"}),
            looks_like_email,
            is_text=False,
            canonical_mime="message/rfc822",
            noun="an e-mail",
            family="e-mail",
            extract=extract_email,
        ),
        FormatSpec(
            DocFormat.OUTLOOK_MESSAGE,
            "Outlook message",
            (".msg",),
            frozenset({"application/vnd.ms-outlook", "application/x-ole-storage"}),
            is_outlook_message,
            is_text=False,
            canonical_mime="application/vnd.ms-outlook",
            noun="an Outlook message",
            family="e-mail",
            extract=extract_msg,
        ),
        FormatSpec(
            DocFormat.ZIP,
            "ZIP of documents",
            (".zip",),
            _ZIP_TYPES,
            is_plain_zip,
            is_text=False,
            canonical_mime="application/zip",
            noun="a ZIP archive",
            family="ZIP",
            extract=extract_zip,
            walked=False,  # a folder's archives are usually data or backups of what the walk reads anyway
        ),
        # Images are read by OCR.
        FormatSpec(
            DocFormat.PNG,
            "PNG image",
            (".png",),
            frozenset({"image/png", "image/x-png"}),
            looks_like_png,
            is_text=False,
            canonical_mime="image/png",
            noun="a PNG image",
            family="image",
            extract=_image,
            walked=False,
        ),
        FormatSpec(
            DocFormat.JPEG,
            "JPEG image",
            (".jpg", ".jpeg", ".jpe", ".jfif"),
            frozenset({"image/jpeg", "image/jpg", "image/pjpeg"}),
            looks_like_jpeg,
            is_text=False,
            canonical_mime="image/jpeg",
            noun="a JPEG image",
            family="image",
            extract=_image,
            walked=False,
        ),
        FormatSpec(
            DocFormat.TIFF,
            "TIFF image",
            (".tif", ".tiff"),
            frozenset({"image/tiff", "image/tif", "image/x-tiff"}),
            looks_like_tiff,
            is_text=False,
            canonical_mime="image/tiff",
            noun="a TIFF image",
            family="image",
            extract=_image,
            walked=False,
        ),
    )
}

_BY_EXTENSION = {ext: spec for spec in FORMATS.values() for ext in spec.extensions}


def spec_for_extension(ext: str) -> FormatSpec | None:
    """The format a lower-cased extension (`.pdf`) names, if this server reads it."""
    return _BY_EXTENSION.get(ext)


def supported_extensions(*, walked_only: bool = False) -> frozenset[str]:
    """Every extension this server indexes (`.pdf`, `.md`, `.py`, ...); `walked_only`: those a
    folder walk takes unasked."""
    return frozenset(ext for ext, spec in _BY_EXTENSION.items() if spec.walked or not walked_only)


def supported_types() -> str:
    """The supported formats for messages: `PDF (.pdf), Markdown (.md, …), …, source code (.py, .js, … and 80 more)`."""
    parts = []
    for spec in FORMATS.values():
        shown = ", ".join(spec.extensions[:6])
        more = f" and {len(spec.extensions) - 6} more" if len(spec.extensions) > 6 else ""
        parts.append(f"{spec.label} ({shown}{more})")
    return ", ".join(parts)


def normalize_mime(declared: str | None) -> str | None:
    """`Text/Markdown; charset=UTF-8` → `text/markdown`; None for absent or "unknown" types."""
    if not declared or not isinstance(declared, str):
        return None
    mime = declared.split(";", 1)[0].strip().lower()
    if not mime or mime in UNKNOWN_MIME_TYPES:
        return None
    return mime


def extension_of(filename: str) -> str:
    """The lower-cased extension with its dot (`.pdf`), or "" when the name has none."""
    dot = filename.rfind(".")
    return filename[dot:].lower() if dot > 0 else ""
