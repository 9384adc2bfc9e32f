"""Text from pictures: PNG/JPEG/TIFF uploads and the scanned pages of PDFs, read by OCR.

Image headers are checked against `ocr.MAX_IMAGE_PIXELS` before any pixel is decoded, so a
few-KB file declaring a gigapixel image is refused, not unpacked.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable
from io import BytesIO
from typing import TYPE_CHECKING, Any

from protocol.errors import RagError

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .ocr import (
    OCR_OFF_ADVICE,
    OcrBudget,
    OcrNotes,
    OcrOptions,
    OcrReading,
    check_pixels,
    ocr_image,
    page_warnings,
    read_image,
)
from .page_counts import tiff_page_count, too_many_pages

if TYPE_CHECKING:
    from PIL.Image import Image
    from pypdf import PageObject

logger = logging.getLogger(__name__)

# Page images smaller than this on both sides are logos, bullets or rules, not scanned text.
MIN_SCAN_SIDE = 32

IMAGE_OCR_OFF_MESSAGE = f"The file is an image; its text can only be read by OCR. {OCR_OFF_ADVICE}"
NO_IMAGE_TEXT_MESSAGE = (
    "No readable text was found in the image (OCR found none); upload a sharper scan (300 dpi) "
    "or a text-based copy of the document."
)
PDF_OCR_OFF_MESSAGE = f"The PDF has no text layer (its pages are scanned images). {OCR_OFF_ADVICE}"
PDF_NO_OCR_TEXT_MESSAGE = (
    "The PDF has no text layer and OCR found no readable text on its pages as they are drawn (they hold "
    "drawings or images without legible text); if it is a scan of a text, scan it at 300 dpi with good contrast, "
    "or upload a text-based PDF."
)


def _open_image(data: bytes) -> Image:
    """The image in `data`, header read only; bombs and undecodable files become `RagError`s."""
    from PIL import Image as PilImage
    from PIL import UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PilImage.DecompressionBombWarning)  # our own bound applies below
            image = PilImage.open(BytesIO(data))
    except PilImage.DecompressionBombError:
        raise refuse(Failure.TOO_MANY_PIXELS) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        logger.info("image: cannot open", exc_info=True)
        raise refuse(Failure.DAMAGED_IMAGE) from None
    check_pixels(image.width, image.height, "The image")
    return image


def _frame_reading(image: Image, number: int) -> OcrReading:
    """OCR one frame (page) of an image file, after its pixel bound and EXIF orientation."""
    from PIL import ImageOps

    check_pixels(image.width, image.height, f"Page {number} of the image")
    try:
        frame = ImageOps.exif_transpose(image.copy())
    except (OSError, ValueError, SyntaxError):
        logger.info("image: frame %d cannot be decoded", number, exc_info=True)
        raise refuse(Failure.DAMAGED_IMAGE) from None
    return read_image(frame)


def extract_image(data: bytes, *, ocr: OcrOptions, max_pages: int) -> ExtractedDocument:
    """The text of a PNG, JPEG or TIFF (each TIFF frame a page), read by OCR.

    Raises `EXTRACTION_FAILED` when OCR is off, the file is damaged or no text is found,
    `RESOURCE_LIMIT_EXCEEDED` for an image over the pixel bound and `FILE_TOO_LARGE` for a
    TIFF with more than `max_pages` pages.
    """
    if not ocr.enabled:
        raise refuse(Failure.OCR_OFF, IMAGE_OCR_OFF_MESSAGE)
    from PIL import ImageSequence

    # Pages counted from the TIFF's directory chain, bounded: Pillow's n_frames parses every page.
    pages = tiff_page_count(data, max_pages)
    if pages > max_pages:
        raise too_many_pages("image", pages, max_pages, counted_to_limit=True)
    image = _open_image(data)
    frames = int(getattr(image, "n_frames", 1) or 1)  # now bounded: a TIFF's chain was counted above
    if frames > max_pages:
        raise too_many_pages("image", frames, max_pages)
    budget = OcrBudget(ocr)
    notes = OcrNotes()
    builder = DocumentBuilder()
    read: list[int] = []
    empty: list[int] = []
    for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
        builder.new_page()
        if not budget.allows(number):
            continue
        lines = notes.record(number, _frame_reading(frame, number))
        (read if lines else empty).append(number)
        if not builder.extend(lines):
            break
    if not read:
        raise refuse(Failure.NO_TEXT_IN_SCAN, NO_IMAGE_TEXT_MESSAGE)
    document = builder.build(title=None, empty_message=NO_IMAGE_TEXT_MESSAGE)
    read_notes = ["The image was read by OCR; check names and numbers."] if frames == 1 else page_warnings(read, empty)
    skipped = budget.warning()
    return dataclasses.replace(
        document,
        warnings=[*read_notes, *notes.warnings(), *([skipped] if skipped else []), *document.warnings],
        ocr_pages=read,
        empty_pages=empty,
    )


class ScannedPages:
    """Reads a PDF's image-only pages by OCR, within one document's page and time budget.

    `read` gives a page's text (OCR's when it found any, else what the text layer had) and
    records which pages were read by OCR and which needed OCR that was off or out of budget.
    """

    def __init__(self, options: OcrOptions) -> None:
        self.options = options
        self.budget = OcrBudget(options)
        self.ocr_pages: list[int] = []
        self.unread: list[int] = []  # pages OCR would have read had it been on
        self.attempted = 0

    def read(self, number: int, text: str, ocr_lines: Callable[[], list[str]]) -> str:
        """The text of scanned page `number`, whose own text layer gave only `text`;
        `ocr_lines` reads the page (its rendering or its images) by OCR."""
        if not self.options.enabled:
            self.unread.append(number)
            return text
        if not self.budget.allows(number):
            return text
        self.attempted += 1
        lines = ocr_lines()
        if not lines:
            return text
        self.ocr_pages.append(number)
        return "\n".join(lines)

    def warnings(self, empty_pages: list[int]) -> list[str]:
        """What the result should say about OCR: pages read, pages with no text, pages skipped."""
        notes = page_warnings(self.ocr_pages, empty_pages)
        skipped = self.budget.warning()
        if skipped:
            notes.append(skipped)
        if self.unread and not self.options.enabled:
            notes.append(f"{len(self.unread)} scanned page(s) were not read: {OCR_OFF_ADVICE}")
        return notes

    def refusal(self) -> RagError | None:
        """Why a PDF with no text at all is refused, when its scanned pages explain it."""
        if self.unread and not self.options.enabled:
            return refuse(Failure.OCR_OFF, PDF_OCR_OFF_MESSAGE)
        if self.attempted:
            return refuse(Failure.NO_TEXT_IN_SCAN, PDF_NO_OCR_TEXT_MESSAGE)
        return None


def _xobject_size(page: PageObject, key: Any) -> tuple[int, int] | None:
    """(width, height) an image XObject declares, following form XObjects; None when unknown (inline)."""
    try:
        names = [key] if isinstance(key, str) else list(key)
        holder: Any = page
        for name in names:
            holder = holder["/Resources"]["/XObject"][name].get_object()
        return int(holder["/Width"]), int(holder["/Height"])
    except Exception:  # inline images ("~0~") and odd resource trees
        return None


def pdf_page_lines(page: PageObject, number: int) -> list[str]:
    """OCR the images page `number` draws (a scan is usually one), in the page's orientation."""
    lines: list[str] = []
    try:
        keys = list(page.images.keys())
    except Exception:
        logger.info("pdf: page %d images cannot be listed", number, exc_info=True)
        return lines
    rotation = int(page.get("/Rotate", 0) or 0) % 360
    for key in keys:
        size = _xobject_size(page, key)
        if size is not None:
            if min(size) < MIN_SCAN_SIDE:
                continue
            check_pixels(size[0], size[1], f"The image on page {number}")
        try:
            image = page.images[key].image
        except Exception:  # an undecodable image is one page's loss, logged, not the document's
            logger.info("pdf: page %d image %s cannot be decoded", number, key, exc_info=True)
            continue
        if image is None or min(image.size) < MIN_SCAN_SIDE:
            continue
        if rotation:
            image = image.rotate(-rotation, expand=True)  # /Rotate turns the page clockwise for display
        lines.extend(ocr_image(image))
    return lines
