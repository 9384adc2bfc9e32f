"""Which document format an upload is: its extension, declared MIME type and bytes must agree.

One table, `FORMATS`, says for each format its extensions, the MIME types that may declare it
and how to recognise its content.  Adding HTML, DOCX, PPTX, XLSX, CSV, JSON or source code
later means adding a `DocFormat` member, a `FormatSpec` row and an extractor.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import ErrorCode, RagError

from .text import decode_text

PDF_MAGIC = b"%PDF-"
# The PDF spec lets readers accept a header within the first 1024 bytes (junk before it).
PDF_HEADER_WINDOW = 1024
# Declared types that mean "I don't know": the extension and the bytes decide.
UNKNOWN_MIME_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "application/unknown"})


class DocFormat(enum.StrEnum):
    """A document format this server can extract text from."""

    PDF = "pdf"
    MARKDOWN = "markdown"
    TEXT = "text"


def looks_like_pdf(data: bytes) -> bool:
    """True if a `%PDF-` header starts within the first 1024 bytes."""
    return data.find(PDF_MAGIC, 0, PDF_HEADER_WINDOW + len(PDF_MAGIC)) >= 0


# Magic numbers of common files people upload by mistake, to say what the content *is*.
_OTHER_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (such as DOCX, XLSX or PPTX)"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office file (DOC, XLS or PPT)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"{\\rtf", "an RTF document"),
)


def looks_like_text(data: bytes) -> bool:
    """True for UTF-8 (BOM optional) or BOM-marked UTF-16 without NULs, that is no known binary format."""
    if data.startswith(PDF_MAGIC) or any(data.startswith(sig) for sig, _ in _OTHER_SIGNATURES):
        return False
    return decode_text(data) is not None


@dataclass(frozen=True)
class FormatSpec:
    """What identifies one format: a label for messages, extensions, MIME types, a content check."""

    format: DocFormat
    label: str
    extensions: tuple[str, ...]
    mime_types: frozenset[str]
    matches: Callable[[bytes], bool]
    is_text: bool


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
        ),
        FormatSpec(
            DocFormat.MARKDOWN,
            "Markdown",
            (".md", ".markdown", ".mdown", ".mkd"),
            # Many clients (and Python's mimetypes on older systems) send text/plain for .md.
            frozenset({"text/markdown", "text/x-markdown", "text/plain"}),
            looks_like_text,
            is_text=True,
        ),
        FormatSpec(
            DocFormat.TEXT,
            "plain text",
            (".txt", ".text"),
            frozenset({"text/plain"}),
            looks_like_text,
            is_text=True,
        ),
    )
}

_BY_EXTENSION = {ext: spec for spec in FORMATS.values() for ext in spec.extensions}


def supported_types() -> str:
    """The supported formats for messages: `PDF (.pdf), Markdown (.md, …), plain text (.txt, …)`."""
    return ", ".join(f"{spec.label} ({', '.join(spec.extensions)})" for spec in FORMATS.values())


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
    """What the bytes look like, for messages: "a PDF", "text", "a PNG image", "binary data"."""
    if data.startswith(PDF_MAGIC):
        return "a PDF"
    for signature, description in _OTHER_SIGNATURES:
        if data.startswith(signature):
            return description
    if decode_text(data) is not None:
        return "text"
    if looks_like_pdf(data):
        return "a PDF"
    return "binary data"


def _unsupported(message: str) -> RagError:
    return RagError(ErrorCode.UNSUPPORTED_FORMAT, message)


def _spec_for_mime(mime: str) -> FormatSpec | None:
    """The format a MIME type names when the file name has no extension (the first listed wins)."""
    return next((spec for spec in FORMATS.values() if mime in spec.mime_types), None)


def detect_format(data: bytes, filename: str, declared_mime: str | None) -> DocFormat:
    """Decide an upload's format from its extension, declared MIME type and content.

    All three must agree; `application/octet-stream` (or no type) leaves the decision to the
    extension and the content, and a name without an extension to the declared type.
    Raises `INVALID_PARAMETER` for an empty file and `UNSUPPORTED_FORMAT`, saying what was
    declared and what the content looks like, for anything unknown or inconsistent.
    """
    if not data:
        raise RagError(ErrorCode.INVALID_PARAMETER, "the file is empty (0 bytes); send the file's content.")
    mime = normalize_mime(declared_mime)
    ext = extension_of(filename)
    if mime is not None and len(mime) > 100:  # a client's value goes into the message: keep it short
        mime = mime[:100] + "..."
    if len(ext) > 20:
        ext = ext[:20] + "..."

    if ext:
        spec = _BY_EXTENSION.get(ext)
        if spec is None:
            raise _unsupported(
                f"'{ext}' files are not supported (the content looks like {describe_content(data)}). "
                f"Supported types: {supported_types()}."
            )
    else:
        spec = _spec_for_mime(mime) if mime else None
        if spec is None:
            declared = f"the declared type {mime} is not supported" if mime else "no type was declared"
            raise _unsupported(
                f"the file name has no extension and {declared}; name the file with one of: {supported_types()}."
            )

    if mime is not None and mime not in spec.mime_types:
        if _spec_for_mime(mime) is None:
            raise _unsupported(
                f"declared {mime}, which is not a supported type (the content looks like "
                f"{describe_content(data)}). Supported types: {supported_types()}."
            )
        raise _unsupported(
            f"declared {mime} but the file name ends in {ext} (the content looks like {describe_content(data)}); "
            "send matching values."
        )

    if not spec.matches(data):
        content = describe_content(data)
        if spec.is_text and content == "binary data":
            raise _unsupported(
                f"binary content declared as text ({mime or ext}): the file is not UTF-8 or UTF-16 text."
            )
        claim = f"declared {mime}" if mime else f"the file name ends in {ext}"
        raise _unsupported(f"{claim} but the content is {content}, not {_article(spec.label)}.")
    return spec.format


def _article(label: str) -> str:
    return f"a {label}" if label == "PDF" else label
