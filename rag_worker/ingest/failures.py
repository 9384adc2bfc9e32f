"""Why an upload was refused, and what the caller should do about it: one table, one call.

`protocol.errors` gives one suggested action per error code, but one code covers failures
that need different fixes: an encrypted PDF wants its password removed, a truncated one
wants uploading again, a DOC wants converting to DOCX.  Every refusal in `ingest/` names its
`Failure` kind here and gets the code, a default message and the advice that fits:

    raise refuse(Failure.ENCRYPTED_PDF)
    raise refuse(Failure.CONTENT_MISMATCH, f"declared {mime} but the content is a PDF.")

Adding a kind means adding a member and a row; the test suite checks every member has one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode, RagError


@dataclass(frozen=True)
class FailureInfo:
    """The error code, default message and suggested action of one failure kind."""

    code: ErrorCode
    message: str
    advice: str


class Failure(enum.Enum):
    """A kind of refused upload; `FAILURES[kind]` says its code, message and advice."""

    # Detection: name, declared type and content
    EMPTY_FILE = enum.auto()
    UNSUPPORTED_EXTENSION = enum.auto()
    NO_EXTENSION = enum.auto()
    UNSUPPORTED_MIME = enum.auto()
    MIME_EXTENSION_MISMATCH = enum.auto()
    CONTENT_MISMATCH = enum.auto()
    BINARY_AS_TEXT = enum.auto()
    LEGACY_WORD = enum.auto()
    LEGACY_EXCEL = enum.auto()
    LEGACY_POWERPOINT = enum.auto()
    PASSWORD_PROTECTED_OFFICE = enum.auto()
    OUTLOOK_MESSAGE = enum.auto()
    # PDF
    ENCRYPTED_PDF = enum.auto()
    DAMAGED_PDF = enum.auto()
    NO_TEXT_LAYER = enum.auto()
    TOO_MANY_PAGES = enum.auto()
    # Archives (Office, OpenDocument, EPUB)
    ZIP_BOMB = enum.auto()
    TOO_MANY_ENTRIES = enum.auto()
    INVALID_PACKAGE = enum.auto()
    ENCRYPTED_ARCHIVE = enum.auto()
    UNSAFE_XML = enum.auto()
    DAMAGED_ARCHIVE = enum.auto()
    DRM_PROTECTED = enum.auto()
    NESTED_TOO_DEEP = enum.auto()
    # Scans and images (OCR)
    DAMAGED_IMAGE = enum.auto()
    TOO_MANY_PIXELS = enum.auto()
    OCR_OFF = enum.auto()
    NO_TEXT_IN_SCAN = enum.auto()
    OCR_MODEL_MISSING = enum.auto()
    # Any format
    DAMAGED_DOCUMENT = enum.auto()
    NO_TEXT = enum.auto()
    MALFORMED_DATA = enum.auto()


_RESAVE = "Upload the file again (it may have been cut off in transfer); if it persists, re-save or export it in the program that made it and upload that."
_SUPPORTED = "Convert the file to one of the supported types listed in the message and upload that."

FAILURES: dict[Failure, FailureInfo] = {
    Failure.EMPTY_FILE: FailureInfo(
        ErrorCode.INVALID_PARAMETER,
        "The file is empty (0 bytes); send the file's content.",
        "Send the file's content (base64) and call the tool again.",
    ),
    Failure.UNSUPPORTED_EXTENSION: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT, "This file type is not supported.", _SUPPORTED
    ),
    Failure.NO_EXTENSION: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The file name has no extension and its type is unknown.",
        "Name the file with the extension of its type (such as report.pdf) and upload it again.",
    ),
    Failure.UNSUPPORTED_MIME: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The declared MIME type is not a supported type.",
        "Declare the file's real MIME type, or application/octet-stream to let the name and content decide.",
    ),
    Failure.MIME_EXTENSION_MISMATCH: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The declared MIME type and the file name's extension disagree.",
        "Declare the MIME type that matches the file name's extension (or application/octet-stream), "
        "or fix the file name, and upload it again.",
    ),
    Failure.CONTENT_MISMATCH: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The file's content is not what its name or declared type says.",
        "Check that this is the file you meant to send; if it is, give it the name and type of what its "
        "content is (named in the message) and upload it again.",
    ),
    Failure.BINARY_AS_TEXT: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The file is declared as text but is not text in any known encoding.",
        "Save the file as UTF-8 text (or send it under its real type) and upload it again.",
    ),
    Failure.LEGACY_WORD: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "Old binary Word documents (DOC) are not supported.",
        "Convert it to DOCX (File → Save As → Word Document) and upload that.",
    ),
    Failure.LEGACY_EXCEL: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "Old binary Excel workbooks (XLS) are not supported.",
        "Convert it to XLSX (File → Save As → Excel Workbook) and upload that.",
    ),
    Failure.LEGACY_POWERPOINT: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "Old binary PowerPoint presentations (PPT) are not supported.",
        "Convert it to PPTX (File → Save As → PowerPoint Presentation) and upload that.",
    ),
    Failure.OUTLOOK_MESSAGE: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The file is an Outlook message (MSG) named as another type.",
        "Upload it with its name ending in .msg (as Outlook saves it); its text and attachments are read then.",
    ),
    Failure.PASSWORD_PROTECTED_OFFICE: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The Office file is password-protected (encrypted), so its text cannot be read.",
        "Remove the password (File → Info → Protect → Encrypt with Password, clear it), save, and upload that copy.",
    ),
    Failure.ENCRYPTED_PDF: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The PDF is encrypted; upload an unencrypted copy.",
        "Upload an unencrypted copy, or remove the password (open it and save or print it to a new PDF).",
    ),
    Failure.DAMAGED_PDF: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The PDF is damaged or truncated and no text could be read from it; upload the file again or re-save it.",
        _RESAVE,
    ),
    Failure.NO_TEXT_LAYER: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The PDF has no text layer (scanned images?); upload a text-based PDF or run OCR first.",
        "Run OCR on the document (or export it from its source as a text-based PDF) and upload that.",
    ),
    Failure.DAMAGED_IMAGE: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The image is damaged or not a PNG, JPEG or TIFF file; re-save it and upload it again.",
        _RESAVE,
    ),
    Failure.TOO_MANY_PIXELS: FailureInfo(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        "The image has more pixels than OCR can read safely (a decompression bomb?).",
        "Scan or export it at a lower resolution (300 dpi is plenty) and upload it again.",
    ),
    Failure.OCR_OFF: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The text is in scanned images, and OCR is off on this server.",
        "Ask the server's administrator to set LIGHTRAG_MCP_OCR=auto, or upload a text-based copy "
        "(or one you ran OCR on).",
    ),
    Failure.NO_TEXT_IN_SCAN: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "OCR found no readable text in the scanned pages.",
        "Scan the pages again at 300 dpi with good contrast, or upload a text-based copy.",
    ),
    Failure.OCR_MODEL_MISSING: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "Reading scanned pages needs the OCR model, which is not installed on this server.",
        "Ask the server's administrator to run `make setup`, which installs it; or upload a text-based copy.",
    ),
    Failure.TOO_MANY_PAGES: FailureInfo(
        ErrorCode.FILE_TOO_LARGE,
        "The document has more pages than can be indexed.",
        "Split the document into smaller files and upload them one by one.",
    ),
    Failure.ZIP_BOMB: FailureInfo(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        "The file was refused as a possible zip bomb.",
        "Split the document, or re-save it without large embedded media, and upload it again.",
    ),
    Failure.TOO_MANY_ENTRIES: FailureInfo(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        "The file is a zip with too many entries (it may be a zip bomb).",
        "Split the document, or re-save it without large embedded media, and upload it again.",
    ),
    Failure.INVALID_PACKAGE: FailureInfo(
        ErrorCode.UNSUPPORTED_FORMAT,
        "The zip has a structure no office application writes.",
        "Re-save the document in the program that made it and upload that copy.",
    ),
    Failure.ENCRYPTED_ARCHIVE: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The file contains encrypted zip entries; upload an unencrypted copy.",
        "Remove the password or encryption, save, and upload that copy.",
    ),
    Failure.UNSAFE_XML: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The file contains XML with a DOCTYPE or entity declarations (it may be crafted to attack XML parsers).",
        "Re-save the document in the program that made it and upload it again.",
    ),
    Failure.DAMAGED_ARCHIVE: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The file is damaged (its zip structure cannot be read); re-save it and upload it again.",
        _RESAVE,
    ),
    Failure.DRM_PROTECTED: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The e-book is DRM-protected (its content is encrypted), so its text cannot be read.",
        "Upload a DRM-free copy of the e-book.",
    ),
    Failure.NESTED_TOO_DEEP: FailureInfo(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        "The file holds archives or e-mails nested too deep to be read.",
        "Unpack the inner archives (or save the attachments) and upload those files.",
    ),
    Failure.DAMAGED_DOCUMENT: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The document is damaged and could not be read.",
        _RESAVE,
    ),
    Failure.NO_TEXT: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The document contains no text.",
        "Check that this is the file you meant; a document without text cannot be indexed.",
    ),
    Failure.MALFORMED_DATA: FailureInfo(
        ErrorCode.EXTRACTION_FAILED,
        "The data file cannot be parsed.",
        "Fix the syntax error named in the message (or export the data again) and upload it again.",
    ),
}


def refuse(kind: Failure, message: str | None = None, *, details: dict[str, Any] | None = None) -> RagError:
    """The `RagError` for `kind`: its code and advice, with `message` (or the kind's default message)."""
    info = FAILURES[kind]
    return RagError(info.code, message or info.message, suggested_action=info.advice, details=details)


def advice_for(kind: Failure) -> str:
    """The suggested action of `kind`, for callers that build a `RagError` themselves."""
    return FAILURES[kind].advice
