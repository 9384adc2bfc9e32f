"""What text extraction hands to indexing: the text, its pages and a few counts."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExtractedDocument:
    """Plain text extracted from an uploaded file.

    `page_offsets[i]` is the character offset in `text` where page i+1 starts, so a chunk's
    position can be mapped back to a page.  `warnings` lists problems that did not stop the
    extraction (pages that could not be read), worded for the caller's result.
    """

    text: str
    pages: int
    words: int
    page_offsets: list[int]
    title: str | None = None
    warnings: list[str] = field(default_factory=list)


def count_words(text: str) -> int:
    """Whitespace-separated words in `text`.

    Large texts are split line by line: one `split()` over 10 MB would hold ~2 million
    strings at once.
    """
    if len(text) < 1_000_000:
        return len(text.split())
    return sum(map(len, map(str.split, text.splitlines())))
