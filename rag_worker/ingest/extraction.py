"""One entry point from a detected format to its extractor (the `extract` of its `FORMATS` row).

`extract_document` runs in the caller's thread; the worker calls it through
`isolation.extract_isolated`, which runs it in a separate process under a time bound.
"""

from __future__ import annotations

from protocol.errors import ErrorCode, RagError

from .containers import Item
from .detection import detect_format
from .extracted import DEFAULT_MAX_PAGES, ExtractedDocument, ExtractOptions
from .formats import FORMATS, DocFormat
from .normalize import normalize_document
from .ocr import OcrOptions


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
    options = ExtractOptions(filename=filename, max_pages=max_pages, ocr=ocr or OcrOptions(), read_item=read_item)
    return normalize_document(FORMATS[fmt].extract(data, options))


def read_item(item: Item, options: ExtractOptions) -> ExtractedDocument:
    """One file inside an archive or e-mail, detected and read like an upload of its own."""
    spec = FORMATS[detect_format(item.data, item.name, None)]
    if spec.family == "image":  # seconds of OCR each: a folder of photos zipped would outrun the time limit
        raise RagError(ErrorCode.UNSUPPORTED_FORMAT, f"{spec.noun} inside is not read by OCR; upload it on its own.")
    return spec.extract(item.data, options)
