"""Upload validation and text extraction: pure synchronous functions the worker runs off its loop.

An upload goes through, in order::

    sanitize_filename(name)                  → the clean name            (INVALID_PARAMETER)
    decode_base64(content, max_bytes)        → bytes                     (INVALID_PARAMETER, FILE_TOO_LARGE)
    detect_format(data, name, mime)          → DocFormat                 (INVALID_PARAMETER, UNSUPPORTED_FORMAT,
                                                                          RESOURCE_LIMIT_EXCEEDED for zip bombs)
    validate_metadata(meta)                  → normalised metadata       (INVALID_METADATA)
    extract_isolated(data, fmt, timeout=…)   → ExtractedDocument         (EXTRACTION_FAILED, FILE_TOO_LARGE, …)

`extract_isolated` runs `extract_document` in a separate, reusable process under a time
bound, so a parser that hangs or crashes on a hostile file fails that file, not the worker.
Every failure is a `protocol.errors.RagError` whose message is safe to show the client.
"""

from __future__ import annotations

from .data_files import extract_csv, extract_json
from .document import DocumentBuilder, ExtractedDocument, count_words
from .extraction import extract_document
from .formats import FORMATS, DocFormat, FormatSpec, detect_format, normalize_mime, supported_types
from .html_text import extract_html
from .isolation import extract_isolated, shutdown_extractors
from .metadata import validate_metadata
from .office import extract_docx, extract_pptx, extract_xlsx
from .pdf import DEFAULT_MAX_PAGES, extract_pdf
from .source_code import extract_code
from .text import decode_text, extract_text_document, markdown_title
from .validation import BYTES_PER_MB, data_url_mime, decode_base64, format_size, sanitize_filename

__all__ = [
    "BYTES_PER_MB",
    "DEFAULT_MAX_PAGES",
    "FORMATS",
    "DocFormat",
    "DocumentBuilder",
    "ExtractedDocument",
    "FormatSpec",
    "count_words",
    "data_url_mime",
    "decode_base64",
    "decode_text",
    "detect_format",
    "extract_code",
    "extract_csv",
    "extract_document",
    "extract_docx",
    "extract_html",
    "extract_isolated",
    "extract_json",
    "extract_pdf",
    "extract_pptx",
    "extract_text_document",
    "extract_xlsx",
    "format_size",
    "markdown_title",
    "normalize_mime",
    "sanitize_filename",
    "shutdown_extractors",
    "supported_types",
    "validate_metadata",
]
