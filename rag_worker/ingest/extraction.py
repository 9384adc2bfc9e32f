"""One entry point from a detected format to its extractor.

`extract_document` runs in the caller's thread; the worker calls it through
`isolation.extract_isolated`, which runs it in a separate process under a time bound.
"""

from __future__ import annotations

from collections.abc import Callable

from .data_files import extract_csv, extract_json
from .document import ExtractedDocument
from .formats import DocFormat
from .html_text import extract_html
from .office import extract_docx, extract_pptx, extract_xlsx
from .pdf import DEFAULT_MAX_PAGES, extract_pdf
from .source_code import extract_code
from .text import extract_text_document

# Formats whose extractor needs nothing but the bytes.
_EXTRACTORS: dict[DocFormat, Callable[[bytes], ExtractedDocument]] = {
    DocFormat.HTML: extract_html,
    DocFormat.DOCX: extract_docx,
    DocFormat.PPTX: extract_pptx,
    DocFormat.XLSX: extract_xlsx,
    DocFormat.CSV: extract_csv,
    DocFormat.JSON: extract_json,
}


def extract_document(
    data: bytes,
    fmt: DocFormat,
    *,
    filename: str | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
) -> ExtractedDocument:
    """Extract the text of `data`, already identified as `fmt` by `detect_format`.

    `filename` names source files in their header line; `max_pages` bounds PDFs.
    """
    if fmt is DocFormat.PDF:
        return extract_pdf(data, max_pages=max_pages)
    if fmt is DocFormat.CODE:
        return extract_code(data, filename)
    extract = _EXTRACTORS.get(fmt)
    return extract(data) if extract is not None else extract_text_document(data, fmt)
