"""Which document format an upload is: its extension, declared MIME type and bytes must agree.

One table, `FORMATS`, says for each format its extensions, the MIME types that may declare it
(with the aliases clients really send), the type stored with the document, and how to
recognise its content.  Adding a format means adding a `DocFormat` member, a `FormatSpec`
row and an extractor in `extract_document`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import RagError

from . import source_code
from .failures import Failure, refuse
from .html_text import decode_html, is_html_page, looks_like_html
from .legacy_office import describe_ole2, is_ole2, legacy_failure
from .magic import (
    OTHER_SIGNATURES,
    PDF_MAGIC,
    looks_like_jpeg,
    looks_like_json,
    looks_like_pdf,
    looks_like_png,
    looks_like_text,
    looks_like_tiff,
)
from .ooxml import OfficeKind, is_office_kind, office_kind
from .rtf import looks_like_rtf
from .text import decode_text
from .zip_packages import PackageKind, is_package_kind, package_kind

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
    CODE = "code"
    ODT = "odt"
    ODS = "ods"
    ODP = "odp"
    RTF = "rtf"
    EPUB = "epub"
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"


def _office(kind: OfficeKind) -> Callable[[bytes], bool]:
    return lambda data: is_office_kind(data, kind)


def _package(kind: PackageKind) -> Callable[[bytes], bool]:
    return lambda data: is_package_kind(data, kind)


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
    #: A folder walk takes it without being asked (images are not: a repository's icons and
    #: screenshots are rarely documents, and each costs seconds of OCR).
    walked: bool = True


_ZIP_TYPES = frozenset({"application/zip", "application/x-zip-compressed", "application/x-zip"})
_OOXML = "application/vnd.openxmlformats-officedocument"
_ODF = "application/vnd.oasis.opendocument"

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
        ),
        FormatSpec(
            DocFormat.TEXT,
            "plain text",
            (".txt", ".text"),
            frozenset({"text/plain"}),
            looks_like_text,
            is_text=True,
            canonical_mime="text/plain",
            noun="plain text",
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
        ),
        FormatSpec(
            DocFormat.DOCX,
            "Word",
            (".docx",),
            # Old Windows registries send application/msword for every Word file.
            frozenset({f"{_OOXML}.wordprocessingml.document", "application/msword"}) | _ZIP_TYPES,
            _office("docx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.wordprocessingml.document",
            noun="a Word document (DOCX)",
        ),
        FormatSpec(
            DocFormat.PPTX,
            "PowerPoint",
            (".pptx",),
            frozenset({f"{_OOXML}.presentationml.presentation", "application/vnd.ms-powerpoint"}) | _ZIP_TYPES,
            _office("pptx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.presentationml.presentation",
            noun="a PowerPoint presentation (PPTX)",
        ),
        FormatSpec(
            DocFormat.XLSX,
            "Excel",
            (".xlsx",),
            frozenset({f"{_OOXML}.spreadsheetml.sheet", "application/vnd.ms-excel"}) | _ZIP_TYPES,
            _office("xlsx"),
            is_text=False,
            canonical_mime=f"{_OOXML}.spreadsheetml.sheet",
            noun="an Excel workbook (XLSX)",
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
        ),
        FormatSpec(
            DocFormat.CODE,
            "source code",
            tuple(source_code.LANGUAGES),
            source_code.MIME_TYPES,
            looks_like_text,
            is_text=True,
            canonical_mime="text/plain",
            noun="source code",
        ),
        # Images are read by OCR (`images.extract_image`).
        FormatSpec(
            DocFormat.PNG,
            "PNG image",
            (".png",),
            frozenset({"image/png", "image/x-png"}),
            looks_like_png,
            is_text=False,
            canonical_mime="image/png",
            noun="a PNG image",
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
            walked=False,
        ),
    )
}

_BY_EXTENSION = {ext: spec for spec in FORMATS.values() for ext in spec.extensions}


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


def describe_content(data: bytes) -> str:
    """What the bytes look like, for messages: "a PDF", "a Word document (DOCX)", "text", "binary data"."""
    if data.startswith(PDF_MAGIC):
        return "a PDF"
    kind = office_kind(data) or package_kind(data)
    if kind is not None:
        return FORMATS[DocFormat(kind)].noun
    if is_ole2(data):
        return describe_ole2(data)
    for signature, description in OTHER_SIGNATURES:
        if data.startswith(signature):
            return description
    if decode_text(data) is not None:
        text = decode_html(data)
        return "an HTML page" if text is not None and is_html_page(text) else "text"
    if looks_like_pdf(data):
        return "a PDF"
    return "binary data"


def _spec_for_mime(mime: str, data: bytes | None = None) -> FormatSpec | None:
    """The format a MIME type names when the file name has no extension.

    A type several formats accept (`application/zip`, `text/plain`) picks the first whose
    content check passes, else the first listed.
    """
    candidates = [spec for spec in FORMATS.values() if mime in spec.mime_types]
    if data is not None and len(candidates) > 1:
        return next((spec for spec in candidates if spec.matches(data)), candidates[0])
    return candidates[0] if candidates else None


def detect_format(data: bytes, filename: str, declared_mime: str | None) -> DocFormat:
    """Decide an upload's format from its extension, declared MIME type and content.

    All three must agree; `application/octet-stream` (or no type) leaves the decision to the
    extension and the content, and a name without an extension to the declared type.
    Raises `INVALID_PARAMETER` for an empty file and `UNSUPPORTED_FORMAT`, saying what was
    declared and what the content looks like, for anything unknown or inconsistent.
    """
    if not data:
        raise refuse(Failure.EMPTY_FILE, "the file is empty (0 bytes); send the file's content.")
    mime = normalize_mime(declared_mime)
    ext = extension_of(filename)
    if mime is not None and len(mime) > 100:  # a client's value goes into the message: keep it short
        mime = mime[:100] + "..."
    if len(ext) > 20:
        ext = ext[:20] + "..."

    legacy = legacy_failure(data, ext, mime)
    if legacy is not None:
        raise _legacy_refusal(legacy, data, ext, mime)
    if ext:
        spec = _BY_EXTENSION.get(ext)
        if spec is None:
            raise refuse(
                Failure.UNSUPPORTED_EXTENSION,
                f"'{ext}' files are not supported (the content looks like {describe_content(data)}). "
                f"Supported types: {supported_types()}."
            )
    else:
        spec = _spec_for_mime(mime, data) if mime else None
        if spec is None:
            declared = f"the declared type {mime} is not supported" if mime else "no type was declared"
            raise refuse(
                Failure.NO_EXTENSION,
                f"the file name has no extension and {declared}; name the file with one of: {supported_types()}.",
            )

    if mime is not None and mime not in spec.mime_types:
        if _spec_for_mime(mime) is None:
            raise refuse(
                Failure.UNSUPPORTED_MIME,
                f"declared {mime}, which is not a supported type (the content looks like "
                f"{describe_content(data)}). Supported types: {supported_types()}.",
            )
        raise refuse(
            Failure.MIME_EXTENSION_MISMATCH,
            f"declared {mime} but the file name ends in {ext} (the content looks like {describe_content(data)}); "
            "send matching values.",
        )

    if not spec.matches(data):
        content = describe_content(data)
        if spec.is_text and content == "binary data":
            raise refuse(
                Failure.BINARY_AS_TEXT,
                f"binary content declared as text ({mime or ext}): the file is not UTF-8 or UTF-16 text.",
            )
        claim = f"declared {mime}" if mime else f"the file name ends in {ext}"
        raise refuse(Failure.CONTENT_MISMATCH, f"{claim} but the content is {content}, not {spec.noun}.")
    return spec.format


def _legacy_refusal(kind: Failure, data: bytes, ext: str, mime: str | None) -> RagError:
    """The refusal of an old binary Office file or a password-protected one, naming what was sent."""
    sent = f"'{ext}' file" if ext else f"file declared {mime}"
    if kind is Failure.PASSWORD_PROTECTED_OFFICE:
        return refuse(kind, f"The {sent} is a password-protected Office file; its text cannot be read.")
    if not is_ole2(data):
        return refuse(kind, f"'{ext}' files (old binary Office format) are not supported; "
                            f"the content looks like {describe_content(data)}.")
    return refuse(kind, f"The {sent} is {describe_ole2(data)}; only the newer DOCX, XLSX and PPTX formats are read.")
