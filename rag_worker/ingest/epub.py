"""EPUB e-books to text: chapters in reading (spine) order, each through the HTML extractor.

ebooklib reads the package (container, OPF manifest and spine) after `zip_packages` has
proved the zip safe; each chapter's XHTML then goes through `html_text.extract_html`, so an
e-book reads like the web pages it is made of (headings, lists, image `alt` texts).  Each
chapter is one page.  A DRM-protected book (content listed in `META-INF/encryption.xml`
other than obfuscated fonts) is refused: its chapters are ciphertext.
"""

from __future__ import annotations

import io
import logging
import zipfile
from typing import Any

from protocol.errors import RagError

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .html_text import extract_html
from .xml_parts import local_name, parse_xml
from .zip_packages import check_package

logger = logging.getLogger(__name__)

_ENCRYPTION_PART = "META-INF/encryption.xml"
_FONT_SUFFIXES = (".otf", ".ttf", ".woff", ".woff2")
_DAMAGED = "The EPUB e-book is damaged and could not be read; export it again (for example with Calibre) and upload it."


def _is_drm_protected(archive: zipfile.ZipFile) -> bool:
    """True if `encryption.xml` lists anything but fonts (font obfuscation is common and harmless)."""
    try:
        root = parse_xml(archive.read(_ENCRYPTION_PART))
    except KeyError:
        return False
    uris = [node.get("URI", "") for node in root.iter() if local_name(node) == "CipherReference"]
    return any(not uri.lower().endswith(_FONT_SUFFIXES) for uri in uris)


def _book_title(book: Any) -> str | None:
    titles = book.get_metadata("DC", "title")
    return " ".join(str(titles[0][0]).split()) or None if titles else None


def _chapter_lines(content: bytes, book_title: str | None) -> list[str]:
    """The lines of one chapter; [] for a chapter without text (a cover image)."""
    try:
        chapter = extract_html(content)
    except RagError:
        return []
    lines = chapter.text.split("\n")
    if lines and chapter.title is not None and lines[0] == chapter.title == book_title:
        lines = lines[1:]  # many books repeat the book's title as every chapter's <title>
    return lines


def _read_book(data: bytes) -> ExtractedDocument:
    from ebooklib import ITEM_DOCUMENT, epub

    book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
    title = _book_title(book)
    builder = DocumentBuilder()
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ITEM_DOCUMENT:
            continue
        builder.new_page()
        if not builder.extend(_chapter_lines(item.get_content(), title)):
            break
    return builder.build(title=title, empty_message="The EPUB e-book contains no text.")


def extract_epub(data: bytes) -> ExtractedDocument:
    """Text of an EPUB e-book, one page per chapter in reading order; title from its metadata."""
    check_package(data, "epub")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        if _is_drm_protected(archive):
            raise refuse(Failure.DRM_PROTECTED)
    try:
        return _read_book(data)
    except RagError:
        raise
    except Exception:  # ebooklib raises EpubException, KeyError, lxml errors, … on a damaged book
        logger.info("epub: parser failed", exc_info=True)
        raise refuse(Failure.DAMAGED_DOCUMENT, _DAMAGED) from None
