"""One entry point from a detected format to its extractor.

`extract_document` runs in the caller's thread; the worker calls it through
`isolation.extract_isolated`, which runs it in a separate process under a time bound.
"""

from __future__ import annotations

from collections.abc import Callable

from .data_files import extract_csv, extract_json
from .epub import extract_epub
from .extracted import ExtractedDocument
from .formats import DocFormat
from .html_text import extract_html
from .images import extract_image
from .normalize import normalize_document
from .ocr import OcrOptions
from .office import extract_docx, extract_pptx, extract_xlsx
from .opendocument import extract_odp, extract_ods, extract_odt
from .pdf import DEFAULT_MAX_PAGES, extract_pdf
from .rtf import extract_rtf
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
    DocFormat.ODT: extract_odt,
    DocFormat.ODS: extract_ods,
    DocFormat.ODP: extract_odp,
    DocFormat.RTF: extract_rtf,
    DocFormat.EPUB: extract_epub,
}
_IMAGE_FORMATS = frozenset({DocFormat.PNG, DocFormat.JPEG, DocFormat.TIFF})


def extract_document(
    data: bytes,
    fmt: DocFormat,
    *,
    filename: str | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    ocr: OcrOptions | None = None,
) -> ExtractedDocument:
    """Extract the text of `data`, already identified as `fmt` by `detect_format`, normalised for indexing.

    `filename` names source files in their header line; `max_pages` bounds PDFs and TIFFs;
    `ocr` says whether scanned pages and images are read by OCR (default: on).  Every format
    passes through `normalize_document` here, once (ligatures, hyphenation, invisible glyphs).
    """
    return normalize_document(_extract(data, fmt, filename=filename, max_pages=max_pages, ocr=ocr or OcrOptions()))


def _extract(
    data: bytes, fmt: DocFormat, *, filename: str | None, max_pages: int, ocr: OcrOptions
) -> ExtractedDocument:
    """The text of `data` as its format's extractor reads it."""
    if fmt is DocFormat.PDF:
        return extract_pdf(data, max_pages=max_pages, ocr=ocr)
    if fmt in _IMAGE_FORMATS:
        return extract_image(data, ocr=ocr, max_pages=max_pages)
    if fmt is DocFormat.CODE:
        return extract_code(data, filename)
    extract = _EXTRACTORS.get(fmt)
    return extract(data) if extract is not None else extract_text_document(data, fmt)
