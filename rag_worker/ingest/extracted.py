"""What text extraction hands to indexing: the text, its pages and a few counts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode, RagError

from .ocr import OcrOptions

#: Most pages read of one PDF or TIFF (a bound on hostile page counts); callers may pass less.
DEFAULT_MAX_PAGES = 2_000


@dataclass(frozen=True)
class ExtractOptions:
    """What an extractor may need besides the bytes: the file's name (source files name it in
    their header line), the page bound (PDFs, TIFFs) and whether scans are read by OCR."""

    filename: str | None = None
    max_pages: int = DEFAULT_MAX_PAGES
    ocr: OcrOptions = field(default_factory=OcrOptions)
    #: Inside an archive or e-mail: how deep, and the unpacking budget the whole upload shares
    #: (`containers.ContainerBudget`).
    container_depth: int = 0
    container_budget: Any = None
    #: Reads one file found inside an archive or e-mail (detects its format, runs its row's
    #: extractor): set by `extraction.extract_document`, which may import detection — the format
    #: table cannot, since detection reads the table.
    read_item: Any = None


#: A format's extractor: the bytes, already identified as that format, to their text.
Extractor = Callable[[bytes, ExtractOptions], "ExtractedDocument"]


@dataclass(frozen=True)
class ExtractedDocument:
    """Plain text extracted from an uploaded file.

    `page_offsets[i]` is the character offset in `text` where page i+1 starts, so a chunk's
    position can be mapped back to a page.  `warnings` lists problems that did not stop the
    extraction (pages that could not be read), worded for the caller's result.  `ocr_pages`
    are the (1-based) pages read by OCR, `empty_pages` those that gave no text at all.
    """

    text: str
    pages: int
    words: int
    page_offsets: list[int]
    title: str | None = None
    warnings: list[str] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    empty_pages: list[int] = field(default_factory=list)


def count_words(text: str) -> int:
    """Whitespace-separated words in `text`.

    Large texts are split line by line: one `split()` over 10 MB would hold ~2 million
    strings at once.
    """
    if len(text) < 1_000_000:
        return len(text.split())
    return sum(map(len, map(str.split, text.splitlines())))


# A cap on extracted text, whatever the input size: an XLSX whose 1 million cells all point
# at one 30 KB shared string, or deeply nested JSON whose every line repeats a long path,
# would otherwise expand a 10 MB upload into gigabytes.  20 M characters is ~3 M words,
# far more than anyone indexes from one file.
MAX_TEXT_CHARS = 20_000_000
PAGE_SEPARATOR = "\n\n"


def storable_text(text: str) -> str:
    """`text` that every store accepts, same length (offsets stay valid): NUL → space, lone surrogate → "?".

    JSON strings may hold `\\u0000` (PostgreSQL text refuses it) and unpaired `\\ud800` (not UTF-8).
    """
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class DocumentBuilder:
    """Collects the lines of a document page by page, within a character budget.

    Formats that build their text line by line (Office, CSV, JSON, HTML) share this so page
    offsets, word counts, the budget and the "no text" refusal work the same everywhere.
    `add` returns False once the budget is spent; callers stop reading the file then.
    """

    def __init__(self, max_chars: int = MAX_TEXT_CHARS) -> None:
        self._pages: list[list[str]] = []
        self._chars = 0
        self._max_chars = max_chars
        self._content_lines = 0
        self.truncated = False
        self.warnings: list[str] = []

    def new_page(self) -> None:
        """Start the next page (slide, sheet); an empty page still counts as a page."""
        self._pages.append([])

    def add(self, line: str, *, content: bool = True) -> bool:
        """Append `line` to the current page; `content=False` marks headings we generated.

        Returns False (and records it) when the line no longer fits the budget.
        """
        if self.truncated:
            return False
        if not self._pages:
            self.new_page()
        if self._chars + len(line) + 1 > self._max_chars:
            self.truncated = True
            self.warnings.append(f"The text was cut at {self._max_chars:,} characters; the rest was not indexed.")
            return False
        self._pages[-1].append(line)
        self._chars += len(line) + 1
        if content and line.strip():
            self._content_lines += 1
        return True

    def extend(self, lines: list[str]) -> bool:
        """`add` each line; False as soon as one no longer fits."""
        return all(self.add(line) for line in lines)

    def build(self, *, title: str | None, empty_message: str) -> ExtractedDocument:
        """The finished document; raises `EXTRACTION_FAILED` with `empty_message` if no content was added."""
        if self._content_lines == 0:
            raise RagError(ErrorCode.EXTRACTION_FAILED, empty_message)
        texts = ["\n".join(lines).strip("\n") for lines in self._pages]
        offsets: list[int] = []
        offset = 0
        for text in texts:
            offsets.append(offset)
            offset += len(text) + len(PAGE_SEPARATOR)
        text = storable_text(PAGE_SEPARATOR.join(texts))
        return ExtractedDocument(
            text=text,
            pages=len(texts),
            words=count_words(text),
            page_offsets=offsets,
            title=title,
            warnings=list(self.warnings),
        )
