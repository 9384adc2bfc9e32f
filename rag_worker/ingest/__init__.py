"""Upload validation and text extraction: pure synchronous functions the worker runs in threads.

An upload goes through, in order::

    sanitize_filename(name)                  → the clean name            (INVALID_PARAMETER)
    decode_base64(content, max_bytes)        → bytes                     (INVALID_PARAMETER, FILE_TOO_LARGE)
    detect_format(data, name, mime)          → DocFormat                 (INVALID_PARAMETER, UNSUPPORTED_FORMAT)
    validate_metadata(meta)                  → normalised metadata       (INVALID_METADATA)
    extract_document(data, fmt)              → ExtractedDocument         (EXTRACTION_FAILED, FILE_TOO_LARGE)

Every failure is a `protocol.errors.RagError` whose message is safe to show the client.
"""

from __future__ import annotations

from .document import ExtractedDocument, count_words
from .formats import FORMATS, DocFormat, FormatSpec, detect_format, normalize_mime, supported_types
from .metadata import validate_metadata
from .pdf import DEFAULT_MAX_PAGES, extract_pdf
from .text import decode_text, extract_text_document, markdown_title
from .validation import BYTES_PER_MB, data_url_mime, decode_base64, format_size, sanitize_filename


def extract_document(data: bytes, fmt: DocFormat, *, max_pages: int = DEFAULT_MAX_PAGES) -> ExtractedDocument:
    """Extract the text of `data`, already identified as `fmt` by `detect_format`."""
    if fmt is DocFormat.PDF:
        return extract_pdf(data, max_pages=max_pages)
    return extract_text_document(data, fmt)


__all__ = [
    "BYTES_PER_MB",
    "DEFAULT_MAX_PAGES",
    "FORMATS",
    "DocFormat",
    "ExtractedDocument",
    "FormatSpec",
    "count_words",
    "data_url_mime",
    "decode_base64",
    "decode_text",
    "detect_format",
    "extract_document",
    "extract_pdf",
    "extract_text_document",
    "format_size",
    "markdown_title",
    "normalize_mime",
    "sanitize_filename",
    "supported_types",
    "validate_metadata",
]
