"""A PDF page as a reader sees it: what it draws, whether its text layer is text, and its image for OCR.

pypdf gives the text layer (`pdf.py`), but the text layer is not always what the page shows:

- a scan compressed with JBIG2 (what office scanners write) needs the `jbig2dec` program
  for pypdf to decode its image, so the page could not be read by OCR;
- text drawn as paths (outlined fonts, some exporters) has no text layer at all;
- a font without a Unicode map gives glyph names (`/g3/g133/...`), Latin-1 junk for CJK
  (`1Ø ÓÚ oì`) or boxes and private-use codes (`□∆□∆`) instead of its words.

pdfium (through `pypdfium2`) renders each such page exactly as a viewer does, JBIG2 and
vector text included, and lists what the page draws; the rendered page goes to OCR.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import pypdfium2
import pypdfium2.raw as pdfium_c

from .ocr import MAX_IMAGE_PIXELS
from .pdf_spacing import PlacedChar

if TYPE_CHECKING:
    from PIL.Image import Image

logger = logging.getLogger(__name__)

#: Pages are rendered at scan resolution; OCR then crops them to their ink and scales them down.
RENDER_DPI = 300
#: Rendered pages hold at most this many pixels (a poster-sized page is rendered coarser).
MAX_RENDER_PIXELS = MAX_IMAGE_PIXELS // 4
# Images smaller than this on both sides are logos, bullets or rules, not scanned text.
_MIN_IMAGE_SIDE = 32
# Nested form XObjects are followed this deep when listing what a page draws.
_MAX_FORM_DEPTH = 8
# pdfium is not thread-safe; the worker may extract in several threads (tests do).
_PDFIUM_LOCK = threading.Lock()
T = TypeVar("T")

# --- text layers that are not text -----------------------------------------------------------
# Glyph names or ids where characters should be: "/g3/g133/g145", "/uni4E2D", "(cid:123)".
_GLYPH_NAMES_RE = re.compile(r"(?:/[A-Za-z]{0,7}[0-9A-Fa-f]{1,5}){3,}|(?:\(cid:\d+\)\s*)+")
# Codes that show nothing readable: private use, replacement character, control codes, the
# geometric shapes an unmapped Type3 font comes out as ("□∆□∆").
_UNREADABLE_RE = re.compile("[\ue000-\uf8ff\ufffd\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u25a0-\u25ff\u2206]")
# The Latin-1 supplement (Ø, Ó, ì, ¾, ü ...): a CJK font read without its map comes out in it.
_LATIN1_SUPPLEMENT_RE = re.compile("[\u00a0-\u00ff]")
#: A text layer is junk when this share of its visible characters is glyph names or unreadable codes.
JUNK_SHARE = 0.3
#: ... or this share is Latin-1 supplement characters, or `LATIN1_SYMBOL_SHARE` capitals and
#: symbols among them (Ø Ó ¾ ±).  Accented text has its accents on small letters: a Hungarian
#: pangram is 30 % Latin-1 but under 2 % capitals and symbols.
LATIN1_JUNK_SHARE = 0.4
LATIN1_SYMBOL_SHARE = 0.12
# Below this many visible characters a share says little: a short page is judged by OCR need alone.
_MIN_JUDGED_CHARS = 12


def unreadable_layer(text: str) -> str | None:
    """Why a page's text layer is not the text a reader sees (for the warning), or None if it reads as text."""
    visible = len(text) - sum(map(str.isspace, text))
    if visible < _MIN_JUDGED_CHARS:
        return None
    glyph_names = sum(len(match) for match in _GLYPH_NAMES_RE.findall(text))
    if glyph_names >= JUNK_SHARE * visible:
        return "glyph names instead of characters"
    if len(_UNREADABLE_RE.findall(text)) >= JUNK_SHARE * visible:
        return "symbols or private codes instead of characters"
    latin1 = _LATIN1_SUPPLEMENT_RE.findall(text)
    symbols = sum(1 for char in latin1 if not char.islower())
    if len(latin1) >= LATIN1_JUNK_SHARE * visible or symbols >= LATIN1_SYMBOL_SHARE * visible:
        return "a font without a Unicode map (its characters come out as accented Latin letters)"
    return None


class RenderedPages:
    """pdfium's view of one PDF: what each page draws and its rendered image.

    `available` is False when pdfium cannot open the file (pypdf could); callers then fall
    back to the images pypdf decodes.
    """

    def __init__(self, data: bytes) -> None:
        self._document: pypdfium2.PdfDocument | None = None
        try:
            with _PDFIUM_LOCK:
                self._document = pypdfium2.PdfDocument(data)
        except (pypdfium2.PdfiumError, ValueError, OSError):
            logger.info("pdf: pdfium cannot open the file; scans are read from their decoded images", exc_info=True)

    @property
    def available(self) -> bool:
        return self._document is not None

    def draws(self, index: int) -> tuple[bool, bool]:
        """(an image of scan size, a path) page `index` (0-based) draws: where text OCR can read may be."""
        if self._document is None:
            return False, False
        try:
            with _PDFIUM_LOCK:
                page = self._document[index]
                try:
                    kinds = {_kind(obj) for obj in page.get_objects(max_depth=_MAX_FORM_DEPTH)}
                finally:
                    page.close()
        except (pypdfium2.PdfiumError, ValueError, IndexError):
            logger.info("pdf: page %d objects cannot be listed", index + 1, exc_info=True)
            return False, False
        return "image" in kinds, "path" in kinds

    def visible_text(self, index: int) -> str:
        """The text of page `index` (0-based) that lies inside its page box ("" when pdfium cannot read it)."""

        def inside_the_box(page: pypdfium2.PdfPage, textpage: pypdfium2.PdfTextPage) -> str:
            left, bottom, right, top = page.get_cropbox()  # in page space, as the characters' boxes
            return str(textpage.get_text_bounded(left, bottom, right, top))

        return self._read_text(index, inside_the_box, "")

    def text(self, index: int) -> str:
        """pdfium's text of page `index` (0-based), every space it infers included ("" when it cannot read it)."""
        return self._read_text(index, lambda _, textpage: str(textpage.get_text_range()), "")

    def characters(self, index: int) -> list[PlacedChar]:
        """pdfium's characters of page `index` (0-based) in its reading order, with their boxes,
        the spaces and line breaks it inferred marked as such ([] when pdfium cannot read it)."""
        return self._read_text(index, lambda _, textpage: _placed_chars(textpage), [])

    def _read_text(self, index: int, read: Callable[[pypdfium2.PdfPage, pypdfium2.PdfTextPage], T], nothing: T) -> T:
        """`read` of page `index`'s text page, under pdfium's lock; `nothing` when pdfium cannot read it."""
        if self._document is None:
            return nothing
        try:
            with _PDFIUM_LOCK:
                page = self._document[index]
                try:
                    textpage = page.get_textpage()
                    try:
                        return read(page, textpage)
                    finally:
                        textpage.close()
                finally:
                    page.close()
        except (pypdfium2.PdfiumError, ValueError, IndexError):
            logger.info("pdf: page %d text cannot be read by pdfium", index + 1, exc_info=True)
            return nothing

    def render(self, index: int) -> Image | None:
        """Page `index` (0-based) in grey at `RENDER_DPI`, turned as a viewer shows it; None if it cannot be drawn."""
        if self._document is None:
            return None
        try:
            with _PDFIUM_LOCK:
                page = self._document[index]
                try:
                    width, height = page.get_size()
                    scale = RENDER_DPI / 72
                    if width * height * scale * scale > MAX_RENDER_PIXELS:
                        scale = math.sqrt(MAX_RENDER_PIXELS / max(1.0, width * height))
                    bitmap = page.render(scale=scale, grayscale=True)
                    image: Image = bitmap.to_pil()
                    return image
                finally:
                    page.close()
        except (pypdfium2.PdfiumError, ValueError, IndexError, MemoryError):
            logger.info("pdf: page %d cannot be rendered", index + 1, exc_info=True)
            return None

    def close(self) -> None:
        if self._document is not None:
            with _PDFIUM_LOCK:
                self._document.close()
            self._document = None


def _placed_chars(textpage: pypdfium2.PdfTextPage) -> list[PlacedChar]:
    chars = []
    for number in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, number)
        left, _, right, _ = textpage.get_charbox(number, loose=True)
        chars.append(PlacedChar(
            chr(code) if 0 < code < 0x110000 else "\ufffd",
            bool(pdfium_c.FPDFText_IsGenerated(textpage, number)),
            float(left), float(right), float(pdfium_c.FPDFText_GetFontSize(textpage, number)),
        ))
    return chars


def _kind(obj: pypdfium2.PdfObject) -> str | None:
    """"image" for an image at least `_MIN_IMAGE_SIDE` pixels on a side, "path" for a path (vector text is paths)."""
    if obj.type == pdfium_c.FPDF_PAGEOBJ_PATH:
        return "path"
    if obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE:
        try:
            width, height = obj.get_px_size()
        except (pypdfium2.PdfiumError, AttributeError):
            return "image"
        return "image" if min(int(width), int(height)) >= _MIN_IMAGE_SIDE else None
    return None
