"""Markdown and plain-text documents: decoding, newline normalisation and the title."""

from __future__ import annotations

import codecs
import re

from protocol.errors import ErrorCode, RagError

from .extracted import ExtractedDocument, count_words

# A title lives near the top; don't walk a 10 MB file looking for one.
_TITLE_SCAN_CHARS = 64 * 1024

_ATX_H1_RE = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1_RE = re.compile(r"^ {0,3}=+[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER_TITLE_RE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.IGNORECASE)

EMPTY_TEXT_MESSAGE = "The file contains no text (it is empty or only whitespace)."


def decode_unicode(data: bytes) -> str | None:
    """`data` as text if it is UTF-8 (with or without BOM) or UTF-16 with BOM, else None.

    Text never contains NUL; a NUL byte (or decoded U+0000) means binary content.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"  # the codec reads the BOM, picks the byte order and drops it
    else:
        if b"\x00" in data:
            return None
        encoding = "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    if encoding == "utf-16" and "\x00" in text:
        return None
    return text


def decode_text(data: bytes) -> str | None:
    """`data` as text: Unicode (`decode_unicode`), else the legacy encoding it reads best in, or None.

    Legacy encodings are guessed by charset-normalizer; on a tie windows-1252 wins, as browsers
    read unlabelled pages (short Western text reads equally well in several code pages, and
    only windows-1252 gets its curly quotes and accents right).  Bytes that read as no
    encoding without control codes are binary.
    """
    text = decode_unicode(data)
    if text is not None or _CONTROL_BYTES_RE.search(data):
        return text
    import charset_normalizer

    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None:
        try:
            return data.decode("cp1252")  # too short to judge; its undefined bytes mean binary
        except UnicodeDecodeError:
            return None
    tied = [match for match in matches if match.chaos <= best.chaos]
    for encoding in _PREFERRED_ENCODINGS:
        if any(encoding in match.could_be_from_charset for match in tied):
            return data.decode(encoding, errors="replace")
    return str(best)


# Control codes that never appear in text (tab, line feed, form feed and carriage return do).
_CONTROL_BYTES_RE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# Among encodings that read the bytes equally well: Windows' code pages, which is what a legacy
# file sent today was saved in, windows-1252 first (browsers' default for unlabelled pages).
_PREFERRED_ENCODINGS = ("cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258")


def normalize_newlines(text: str) -> str:
    """Windows (CRLF) and classic-Mac (CR) line ends as `\\n`."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _front_matter_title(lines: list[str]) -> tuple[str | None, int]:
    """(title from YAML front matter, index of the first line after it)."""
    if not lines or lines[0].strip() != "---":
        return None, 0
    title = None
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return title, index + 1
        match = _FRONT_MATTER_TITLE_RE.match(line)
        if match and title is None:
            title = match.group(1).strip("\"'") or None
    return None, 0  # no closing fence: it was not front matter


def markdown_title(text: str) -> str | None:
    """The document's title: front matter `title:`, else the first level-1 heading.

    Both `# Title` and `Title` underlined with `===` count; lines inside fenced code
    blocks do not (a `# comment` in a shell snippet is not a heading).
    """
    lines = text[:_TITLE_SCAN_CHARS].split("\n")
    title, start = _front_matter_title(lines)
    if title:
        return title
    fence: str | None = None
    previous = ""
    for line in lines[start:]:
        fence_match = _FENCE_RE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            previous = ""
            continue
        if fence is not None:
            continue
        atx = _ATX_H1_RE.match(line)
        if atx:
            return atx.group(1).strip() or None
        if previous.strip() and _SETEXT_H1_RE.match(line):
            return previous.strip()
        previous = line
    return None


def require_text(data: bytes) -> str:
    """`data` decoded as text with `\\n` line ends; raises `UNSUPPORTED_FORMAT` if it is not text."""
    text = decode_text(data)
    if text is None:
        raise RagError(
            ErrorCode.UNSUPPORTED_FORMAT,
            "binary content declared as text: the file is not text in any known encoding; save it as UTF-8.",
        )
    return normalize_newlines(text)


def extract_text_document(data: bytes, fmt: str) -> ExtractedDocument:
    """Decode a Markdown or plain-text file into an `ExtractedDocument` (one page).

    `fmt` is `DocFormat.MARKDOWN` or `DocFormat.TEXT`; only Markdown yields a title.
    Raises `UNSUPPORTED_FORMAT` if the bytes are not text and `EXTRACTION_FAILED` if the
    file holds only whitespace.
    """
    text = require_text(data)
    if not text.strip():
        raise RagError(ErrorCode.EXTRACTION_FAILED, EMPTY_TEXT_MESSAGE)
    return ExtractedDocument(
        text=text,
        pages=1,
        words=count_words(text),
        page_offsets=[0],
        title=markdown_title(text) if fmt == "markdown" else None,
    )
