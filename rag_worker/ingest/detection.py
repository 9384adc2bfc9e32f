"""Which document format an upload is: its extension, declared MIME type and bytes must agree.

`detect_format` reads the `formats.FORMATS` table: the extension picks a row (or, without
one, the declared type does), the declared type must be one the row accepts, and the
row's content check must pass.  Every refusal says what was declared and what the content
looks like (`describe_content`).
"""

from __future__ import annotations

from protocol.errors import RagError

from .failures import Failure, refuse
from .formats import FORMATS, DocFormat, FormatSpec, extension_of, normalize_mime, spec_for_extension, supported_types
from .html_text import decode_html, is_html_page
from .legacy_office import describe_ole2, is_ole2, legacy_failure
from .magic import OTHER_SIGNATURES, PDF_MAGIC, looks_like_pdf
from .ooxml import office_kind
from .text import decode_text
from .zip_packages import package_kind


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
        spec = spec_for_extension(ext)
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
                f"binary content declared as text ({mime or ext}): the file is not text in any known encoding.",
            )
        claim = f"declared {mime}" if mime else f"the file name ends in {ext}"
        raise refuse(Failure.CONTENT_MISMATCH, f"{claim} but the content is {content}, not {spec.noun}.")
    return spec.format


def _legacy_refusal(kind: Failure, data: bytes, ext: str, mime: str | None) -> RagError:
    """The refusal of an old binary Office file or a password-protected one, naming what was sent."""
    sent = f"'{ext}' file" if ext else f"file declared {mime}" if mime else "file"
    if kind is Failure.PASSWORD_PROTECTED_OFFICE:
        return refuse(kind, f"The {sent} is a password-protected Office file; its text cannot be read.")
    if kind is Failure.OUTLOOK_MESSAGE:
        return refuse(kind, f"The {sent} is {describe_content(data)}; Outlook messages are read when "
                            "named .msg.")
    if not is_ole2(data):
        return refuse(kind, f"'{ext}' files (old binary Office format) are not supported; "
                            f"the content looks like {describe_content(data)}.")
    return refuse(kind, f"The {sent} is {describe_ole2(data)}; only the newer DOCX, XLSX and PPTX formats are read.")
