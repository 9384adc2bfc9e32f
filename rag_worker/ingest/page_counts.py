"""Pages counted from a file's own structure, cheaply and bounded, before anything is decoded.

A 4 MB TIFF can chain 100,000 one-pixel pages: Pillow's `n_frames` parses every page's
directory in full to count them, which took an extractor ~2 minutes before the page limit
refused the file.  Here a TIFF's pages are counted by following the chain of image file
directories (IFDs) — two small reads per page, stopping one past the limit and at the first
loop or offset out of the file — and a PDF's by its page tree's declared `/Count`, so a file
over the limit is refused in the worker, before it takes an extractor process.

An animated PNG's frame count is one header field (`acTL`), read the same way.  GIF and WebP are
not accepted formats: detection refuses them before any decoder sees a frame.
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING

from protocol.errors import RagError

from .failures import Failure, refuse

if TYPE_CHECKING:  # `formats` imports the extractors, which import this module
    from .formats import DocFormat

# (bytes of an IFD's entry count, of one entry, of the next-IFD offset) for classic and BigTIFF.
_CLASSIC = ("H", 12, "I")
_BIG = ("Q", 20, "Q")
# A PDF's page-tree root: `/Type /Pages` with its `/Count` in the same dictionary.  Looked up in
# the first and last MB only (where writers put it), so a crafted file cannot make this scan long.
_PAGES_COUNT = re.compile(rb"/Type\s*/Pages\b[^>]{0,400}?/Count\s+(\d{1,12})|/Count\s+(\d{1,12})[^>]{0,400}?/Type\s*/Pages\b")
_PDF_SCAN_BYTES = 1 << 20


def tiff_page_count(data: bytes, limit: int) -> int:
    """The number of pages in the TIFF's IFD chain, counted up to `limit + 1` at most.

    A chain that loops, or a directory that points or reaches outside the file, ends the count
    there (the decoder will say the file is damaged)."""
    if len(data) < 8 or data[:2] not in (b"II", b"MM"):
        return 0
    order = "<" if data[:2] == b"II" else ">"
    magic = struct.unpack_from(order + "H", data, 2)[0]
    if magic == 42:
        (count_format, entry_size, next_format), offset = _CLASSIC, struct.unpack_from(order + "I", data, 4)[0]
    elif magic == 43 and len(data) >= 16:
        (count_format, entry_size, next_format), offset = _BIG, struct.unpack_from(order + "Q", data, 8)[0]
    else:
        return 0
    count_size, next_size = struct.calcsize(count_format), struct.calcsize(next_format)
    pages, seen = 0, set()
    while offset and pages <= limit and offset not in seen and offset + count_size <= len(data):
        seen.add(offset)
        entries = struct.unpack_from(order + count_format, data, offset)[0]
        next_at = offset + count_size + entries * entry_size
        if next_at + next_size > len(data):
            break  # a directory cut off by the end of the file is no page
        pages += 1
        offset = struct.unpack_from(order + next_format, data, next_at)[0]
    return pages


def png_frame_count(data: bytes) -> int:
    """An animated PNG's declared frames (`acTL`, which comes before the first image data); 1 otherwise."""
    offset = 8  # the signature
    while offset + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, offset)
        if kind == b"acTL" and offset + 12 <= len(data):
            return int(struct.unpack_from(">I", data, offset + 8)[0])
        if kind in (b"IDAT", b"IEND"):
            break
        offset += 12 + length
    return 1


def pdf_declared_pages(data: bytes) -> int:
    """The largest `/Count` of a `/Type /Pages` dictionary near the start or end of the PDF; 0 if none.

    Only a quick early refusal: the extractor still counts the pages it can reach."""
    regions = (data[:_PDF_SCAN_BYTES], data[-_PDF_SCAN_BYTES:]) if len(data) > 2 * _PDF_SCAN_BYTES else (data,)
    counts = [int(a or b) for region in regions for a, b in _PAGES_COUNT.findall(region)]
    return max(counts, default=0)


def check_page_bound(data: bytes, fmt: DocFormat, max_pages: int) -> None:
    """Refuse (FILE_TOO_LARGE) a TIFF, PDF or animated PNG whose structure declares more than `max_pages` pages."""
    if fmt == "tiff":
        pages = tiff_page_count(data, max_pages)
        kind = "image"
    elif fmt == "pdf":
        pages = pdf_declared_pages(data)
        kind = "PDF"
    elif fmt == "png":
        pages = png_frame_count(data)
        kind = "image"
    else:
        return
    if pages > max_pages:
        raise too_many_pages(kind, pages, max_pages, counted_to_limit=fmt == "tiff")


def too_many_pages(kind: str, pages: int, max_pages: int, *, counted_to_limit: bool = False) -> RagError:
    """FILE_TOO_LARGE naming the pages found (`more than N` when counting stopped at the limit)."""
    found = f"more than {max_pages:,}" if counted_to_limit else f"{pages:,}"
    return refuse(
        Failure.TOO_MANY_PAGES,
        f"The {kind} has {found} pages; at most {max_pages:,} can be indexed. Split it into smaller files.",
        details={"pages": pages, "max_pages": max_pages},
    )
