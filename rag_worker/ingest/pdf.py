"""PDF text extraction with pypdf, with a clear reason when a PDF gives no text.

The reasons a client can act on: the PDF is encrypted, damaged or truncated, has no text
layer (scanned images), or has more pages than the limit.  pypdf's own exception text
goes to the log only.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections.abc import Callable
from io import BytesIO

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError
from pypdf.generic import DictionaryObject

from .extracted import DEFAULT_MAX_PAGES, ExtractedDocument, count_words
from .failures import FAILURES, Failure, refuse
from .images import ScannedPages, pdf_page_lines
from .ocr import MIN_TEXT_CHARS, OcrNotes, OcrOptions, page_ranges, read_image
from .page_counts import too_many_pages
from .pdf_forms import form_lines
from .pdf_pages import RenderedPages, unreadable_layer
from .pdf_spacing import respace_page

logger = logging.getLogger(__name__)

PAGE_SEPARATOR = "\n\n"
# Producers fill /Title with these when the author left it blank; they are not titles.
_PLACEHOLDER_TITLES = frozenset({"untitled", "(anonymous)", "anonymous", "(unspecified)", "unknown", "title"})

ENCRYPTED_MESSAGE = FAILURES[Failure.ENCRYPTED_PDF].message
DAMAGED_MESSAGE = FAILURES[Failure.DAMAGED_PDF].message
NO_TEXT_MESSAGE = FAILURES[Failure.NO_TEXT_LAYER].message


class _PypdfWarnings(logging.Handler):
    """Counts the warnings pypdf logs from this thread.

    pypdf is lenient: a corrupt content stream is logged as a warning and the page comes
    back empty, so an empty page with a warning is a damaged page, not a blank one.  The
    worker extracts in several threads at once, hence the thread filter.  (If logging is
    configured above WARNING, pypdf creates no records and damage reads as "no text".)
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.count += 1


def _open(data: bytes) -> PdfReader:
    """A reader for `data`, decrypted with the empty password when that is all it takes."""
    try:
        reader = PdfReader(BytesIO(data))
        encrypted = reader.is_encrypted
    except Exception:  # pypdf raises many types (PdfReadError, ValueError, KeyError, …) on bad input
        logger.info("pdf: cannot open", exc_info=True)
        raise refuse(Failure.DAMAGED_PDF) from None
    if encrypted:
        # Many "encrypted" PDFs only restrict printing/copying and open with an empty user password.
        try:
            opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
        except DependencyError:
            logger.warning("pdf: AES-encrypted PDF but no AES implementation (install pypdf[crypto])", exc_info=True)
            opened = False
        except Exception:
            logger.info("pdf: decryption failed", exc_info=True)
            opened = False
        if not opened:
            raise refuse(Failure.ENCRYPTED_PDF)
    return reader


def _page_count(reader: PdfReader, max_pages: int) -> tuple[int, int]:
    """(pages pypdf can reach, pages the document says it has — 0 when unknown), refusing more than `max_pages`.

    The page tree's own `/Count` is checked first: pypdf walks the whole tree to count the pages it reaches."""
    try:
        declared = _declared_page_count(reader)
    except Exception:
        declared = 0
    if declared > max_pages:
        raise too_many_pages("PDF", declared, max_pages)
    try:
        reachable = len(reader.pages)
    except Exception:
        logger.info("pdf: page tree unreadable", exc_info=True)
        raise refuse(Failure.DAMAGED_PDF) from None
    if reachable > max_pages:
        raise too_many_pages("PDF", reachable, max_pages)
    return reachable, declared


def _declared_page_count(reader: PdfReader) -> int:
    """The page tree's ``/Count``; 0 when an object on the way is not what the spec says."""
    root = reader.trailer["/Root"]
    pages = root["/Pages"] if isinstance(root, DictionaryObject) else None
    count = pages["/Count"] if isinstance(pages, DictionaryObject) else None
    return int(count) if isinstance(count, int | float | str) else 0


def _title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        raw = metadata.title if metadata is not None else None
    except Exception:  # a broken /Info dictionary should not cost the document
        logger.info("pdf: unreadable document information", exc_info=True)
        return None
    if not isinstance(raw, str):
        return None
    title = " ".join(raw.replace("\x00", "").split())
    if not title or title.lower() in _PLACEHOLDER_TITLES:
        return None
    return title


def _clean_page_text(text: str) -> str:
    """Page text that every store accepts: no NUL (PostgreSQL), no lone surrogates (UTF-8, JSON)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.strip()


def _has_images(page: PageObject) -> bool:
    """True if the page draws an image: a scanned page, whose quirks pypdf may warn about."""
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return False
        return any(ref.get_object().get("/Subtype") == "/Image" for ref in xobjects.get_object().values())
    except Exception:
        return False


def _needs_ocr(rendered: RenderedPages, page: PageObject, number: int, text: str) -> bool:
    """True for a page whose text is in what it draws: a scan (an image, under at most a stamp's worth
    of text) or text drawn as paths (no text layer at all; a chart's paths beside its labels are not)."""
    if not rendered.available:
        return _has_images(page)
    image, paths = rendered.draws(number - 1)
    return image or (paths and not text)


def _page_ocr(rendered: RenderedPages, page: PageObject, number: int, notes: OcrNotes) -> Callable[[], list[str]]:
    """How page `number` is read by OCR: its rendering (JBIG2, vector text and all), else its decoded images."""

    def read() -> list[str]:
        image = rendered.render(number - 1) if rendered.available else None
        return notes.record(number, read_image(image)) if image is not None else pdf_page_lines(page, number)

    return read


def _one_copy_of_shared_content(parts: list[str], rendered: RenderedPages) -> None:
    """Pages with the very same text that draw one shared form XObject (a two-page spread drawn
    once, each page showing its half) get the text inside their own page box, from pdfium, so
    every sentence is indexed once, on the page that shows it."""
    pages: dict[str, list[int]] = {}
    for index, text in enumerate(parts):
        if len(text) >= MIN_TEXT_CHARS:
            pages.setdefault(text, []).append(index)
    for indexes in pages.values():
        if len(indexes) < 2 or not rendered.available:
            continue
        for index in indexes:
            visible = _clean_page_text(rendered.visible_text(index))
            if visible and len(visible) < len(parts[index]):
                parts[index] = visible


def _unreadable_warnings(unreadable: dict[int, str], ocr_pages: list[int]) -> list[str]:
    """What the result says about text layers that were not text: read by OCR instead, or left out."""
    if not unreadable:
        return []
    reasons = sorted(set(unreadable.values()))
    replaced = [n for n in unreadable if n in ocr_pages]
    dropped = [n for n in unreadable if n not in ocr_pages]
    notes = []
    if replaced:
        notes.append(f"The text layer of {page_ranges(replaced)} held {'; '.join(reasons)}; "
                     f"{'they were' if len(replaced) > 1 else 'it was'} read from the rendered page by OCR instead.")
    if dropped:
        notes.append(f"The text layer of {page_ranges(dropped)} held {'; '.join(reasons)} and was left out "
                     "(OCR could not read those pages).")
    return notes


def _page_list(numbers: list[int]) -> str:
    """`page 3` / `pages 2, 5, 9 and 4 more`."""
    shown = ", ".join(str(n) for n in numbers[:10])
    more = f" and {len(numbers) - 10} more" if len(numbers) > 10 else ""
    return f"page{'s' if len(numbers) > 1 else ''} {shown}{more}"


def extract_pdf(data: bytes, *, max_pages: int = DEFAULT_MAX_PAGES, ocr: OcrOptions | None = None) -> ExtractedDocument:
    """Extract the text of a PDF, page by page, joined with a blank line.

    An encrypted PDF that opens with the empty password is read normally.  Pages that fail
    to extract are skipped and listed in `warnings`; if no page yields text the PDF is
    refused.  Raises `EXTRACTION_FAILED` (encrypted, damaged or truncated, no text layer)
    or `FILE_TOO_LARGE` (more than `max_pages` pages).  A page with (almost) no text that
    draws an image is a scan: it is read by OCR when `ocr` allows (`ocr_pages`, `warnings`).
    """
    reader = _open(data)
    scans = ScannedPages(ocr or OcrOptions())
    reachable, declared = _page_count(reader, max_pages)

    parts: list[str] = []
    failed: list[int] = []
    unreadable: dict[int, str] = {}  # page → why its text layer is not its text
    problems = _PypdfWarnings()
    pypdf_logger = logging.getLogger("pypdf")
    pypdf_logger.addHandler(problems)
    rendered = RenderedPages(data)
    notes = OcrNotes()
    try:
        for number, page in enumerate(reader.pages, start=1):
            warnings_before = problems.count
            raised = False
            try:
                text = _clean_page_text(page.extract_text())
            except Exception:
                logger.info("pdf: page %d failed to extract", number, exc_info=True)
                text, raised = "", True
            why = unreadable_layer(text)
            if why is None and text and rendered.available:
                # Words run together or letter-spaced by pypdf get pdfium's spacing (from the glyphs' boxes).
                text = respace_page(text, rendered.text(number - 1), functools.partial(rendered.characters, number - 1))
            if why is not None:
                # Junk indexed as text buries the facts; the page is read from its rendering instead.
                unreadable[number] = why
                text = scans.read(number, "", _page_ocr(rendered, page, number, notes))
            elif not text and (raised or (problems.count > warnings_before and not _needs_ocr(rendered, page, number, text))):
                failed.append(number)
            elif len(text) < MIN_TEXT_CHARS and not raised and _needs_ocr(rendered, page, number, text):
                text = scans.read(number, text, _page_ocr(rendered, page, number, notes))
            filled = form_lines(page)
            if filled:
                text = "\n".join([text, *filled]).strip("\n")
            parts.append(text)
        _one_copy_of_shared_content(parts, rendered)
    finally:
        pypdf_logger.removeHandler(problems)
        rendered.close()
    words = sum(map(count_words, parts))
    page_offsets = list(itertools.accumulate((len(part) + len(PAGE_SEPARATOR) for part in parts[:-1]), initial=0))

    if words == 0:
        damaged = failed or reachable == 0 or declared > reachable
        refusal = None if damaged else scans.refusal()
        if refusal is not None:
            raise refusal
        raise refuse(Failure.DAMAGED_PDF if damaged else Failure.NO_TEXT_LAYER)

    empty = [n for n, part in enumerate(parts, start=1) if not part and n not in failed]
    warnings: list[str] = scans.warnings(empty)
    warnings.extend(_unreadable_warnings(unreadable, scans.ocr_pages))
    warnings.extend(notes.warnings())
    if failed:
        warnings.append(f"{len(failed)} of {reachable} pages could not be read ({_page_list(failed)}).")
    if declared > reachable:
        warnings.append(f"The PDF says it has {declared} pages but only {reachable} could be found; it may be damaged.")
    for warning in warnings:
        logger.info("pdf: %s", warning)
    return ExtractedDocument(
        text=PAGE_SEPARATOR.join(parts),
        pages=reachable,
        words=words,
        page_offsets=page_offsets,
        title=_title(reader),
        warnings=warnings,
        ocr_pages=scans.ocr_pages,
        empty_pages=empty,
    )
