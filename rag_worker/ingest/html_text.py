"""HTML pages to text: what a reader sees, with headings and list items kept as Markdown.

Parsed with the standard library's `html.parser`, which never loads anything (no scripts,
images, stylesheets or external entities) and does not expand DOCTYPE-declared entities:
a "billion laughs" page leaves `&lol9;` as literal text instead of exploding.
"""

from __future__ import annotations

import codecs
import logging
import re
from html.parser import HTMLParser

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .text import decode_text, decode_unicode, normalize_newlines

logger = logging.getLogger(__name__)

# Content that is not shown as text: code, styling, templates, embedded objects, <head>.
_SKIPPED = frozenset({"script", "style", "template", "noscript", "svg", "math", "iframe", "object", "head", "select"})
_BLOCKS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure footer "
    "form header hr html li main nav ol p pre section summary table tbody tfoot thead tr ul".split()
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_CELLS = frozenset({"td", "th"})
_SNIFF_BYTES = 4096
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.IGNORECASE)
_ANY_TAG_RE = re.compile(r"<(!doctype\s|[a-z][a-z0-9]*[\s/>])", re.IGNORECASE)
_PAGE_START_RE = re.compile(r"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
# An internal DTD subset (`<!DOCTYPE html [ <!ENTITY …> ]>`) is no HTML; html.parser would leave its
# tail as text.  Only a DOCTYPE at the start is looked at (anchored: linear on any input).
_SUBSET_START_RE = re.compile(r"\s*(?:<\?xml[^>]{0,200}>\s*)?<!DOCTYPE[^\[>]{0,500}\[", re.IGNORECASE)
_SUBSET_END_RE = re.compile(r"\]\s*>")


def decode_html(data: bytes) -> str | None:
    """The page as text: UTF-8/UTF-16 (BOM), else the `<meta charset>` it declares, else the
    encoding it reads best in (windows-1252 on a tie, as browsers do); None if binary."""
    text = decode_unicode(data)
    if text is not None or b"\x00" in data:
        return text
    match = _META_CHARSET_RE.search(data[:_SNIFF_BYTES])
    if match is None:
        return decode_text(data)
    try:
        encoding = codecs.lookup(match.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return decode_text(data)
    return data.decode(encoding, errors="replace")


def looks_like_html(data: bytes) -> bool:
    """True for text with a tag near its start (a full page or a fragment)."""
    text = decode_html(data)
    return text is not None and _ANY_TAG_RE.search(text[:_SNIFF_BYTES]) is not None


def is_html_page(text: str) -> bool:
    """True if `text` starts like a web page (`<!DOCTYPE html>` or `<html>`); for messages."""
    return _PAGE_START_RE.match(text[:_SNIFF_BYTES]) is not None


class _TextCollector(HTMLParser):
    """Collects visible text into a `DocumentBuilder`, one line per block."""

    def __init__(self, builder: DocumentBuilder) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = builder
        self.title: str | None = None
        self.first_h1: str | None = None
        self._skip: list[str] = []
        self._title_parts: list[str] | None = None
        self._parts: list[str] = []
        self._prefix = ""
        self._heading = 0
        self._pre = 0
        self._cells = 0

    def flush(self) -> None:
        text = " ".join("".join(self._parts).split())
        self._parts = []
        if text:
            if self._heading == 1 and self.first_h1 is None:
                self.first_h1 = text
            self.builder.add(self._prefix + text)
        self._prefix = ""
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.title is None and (not self._skip or self._skip == ["head"]):
            self._title_parts = []
            return
        if tag == "body" and self._skip == ["head"]:  # an unclosed <head> ends where the body starts
            self._skip.clear()
        if self._skip or tag in _SKIPPED or _is_hidden(attrs):
            if tag not in _VOID:
                self._skip.append(tag)
            return
        if tag in _HEADINGS:
            self.flush()
            self._heading = _HEADINGS[tag]
            self._prefix = "#" * self._heading + " "
        elif tag == "li":
            self.flush()
            self._prefix = "- "
        elif tag in _CELLS:
            if self._cells:
                self._parts.append(" | ")
            self._cells += 1
        elif tag == "br":
            self.flush()
        elif tag in ("img", "area") or (tag == "input" and _attr(attrs, "type") == "image"):
            # The alternative text is what a screen reader says and what shows when the image does not load.
            alt = _attr(attrs, "alt")
            if alt and alt.strip():
                self._parts.append(f" {alt} ")
        elif tag in _BLOCKS:
            self.flush()
            if tag == "pre":
                self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title_parts is not None:
            self.title = " ".join("".join(self._title_parts).split()) or None
            self._title_parts = None
            if self.title:  # a reader sees it in the tab and in search results: index it as the first line
                self.builder.add(self.title, content=False)
            return
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag in _HEADINGS:
            self.flush()
            self._heading = 0
        elif tag in _BLOCKS:
            self.flush()
            if tag == "pre" and self._pre:
                self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._title_parts is not None:
            self._title_parts.append(data)
        elif self._skip or self.builder.truncated:
            return
        elif self._pre:
            # Preformatted text keeps its lines; each becomes a line of the document.
            lines = normalize_newlines(data).split("\n")
            for line in lines[:-1]:
                self._parts.append(line)
                self.flush()
            self._parts.append(lines[-1])
        else:
            self._parts.append(data)


def _attr(attrs: list[tuple[str, str | None]], name: str) -> str | None:
    """The value of attribute `name` (the first, as browsers read it), or None."""
    return next((value for key, value in attrs if key == name), None)


_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())


def _is_hidden(attrs: list[tuple[str, str | None]]) -> bool:
    """`hidden`, `aria-hidden="true"` or an inline `display:none`: not shown to a reader."""
    for name, value in attrs:
        if name == "hidden" or (name == "aria-hidden" and value == "true"):
            return True
        if name == "style" and value and "display:none" in value.replace(" ", "").lower():
            return True
    return False


def _drop_internal_subset(text: str) -> str:
    """`text` without a leading `<!DOCTYPE … [ internal subset ]>` (all of it, if the subset never ends)."""
    start = _SUBSET_START_RE.match(text)
    if start is None:
        return text
    end = _SUBSET_END_RE.search(text, start.end())
    return text[end.end() :] if end else ""


def extract_html(data: bytes) -> ExtractedDocument:
    """Visible text of an HTML page, `<title>` first and image `alt` texts inline; title from `<title>`, else `<h1>`.

    Raises `UNSUPPORTED_FORMAT` if the bytes are not text and `EXTRACTION_FAILED` if the
    page shows no text.
    """
    text = decode_html(data)
    if text is None:
        raise refuse(
            Failure.BINARY_AS_TEXT,
            "binary content declared as HTML: the file is not text in any known encoding.",
        )
    text = _drop_internal_subset(text)
    builder = DocumentBuilder()
    collector = _TextCollector(builder)
    try:
        collector.feed(text)
        collector.close()
    except Exception:  # html.parser is lenient, but its declaration parser can still assert on junk
        logger.info("html: parser stopped early", exc_info=True)
        builder.warnings.append("The HTML is malformed; text after the damaged part was not read.")
    collector.flush()
    return builder.build(
        title=collector.title or collector.first_h1,
        empty_message="The HTML page contains no visible text.",
    )
