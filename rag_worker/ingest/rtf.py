"""RTF documents to text, with striprtf.

striprtf turns the body into text (code pages, `\\'e9` and `\\u252?` escapes, tables) but
drops every destination group, the page headers, footers and footnotes among them.  Those
are what a reader sees too, so each such group is found by its control word and converted on
its own: headers first, then the body, then footers and a `Footnotes:` section, like DOCX.
"""

from __future__ import annotations

import logging
import re

from striprtf.striprtf import rtf_to_text

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse

logger = logging.getLogger(__name__)

RTF_MAGIC = b"{\\rtf"
_CODEPAGE_RE = re.compile(rb"\\ansicpg(\d{3,5})")
# `{\header`, `{\headerl`, `{\footerf`, `{\footnote`, `{\*\footnote`: the groups striprtf drops.
_GROUP_RE = re.compile(r"\{(?:\\\*)?\\(header|footer|footnote)[lrf]?(?![a-z])")
_TITLE_RE = re.compile(r"\{\\title\s([^{}\\]{1,500})\}")
_DAMAGED = "The RTF document could not be read; re-save it (or export it as DOCX) and upload it again."


def looks_like_rtf(data: bytes) -> bool:
    """True if the bytes start with the RTF signature `{\\rtf`."""
    return data.lstrip()[:5] == RTF_MAGIC


def _group_end(text: str, start: int) -> int:
    """The index after the `}` that closes the group opened at `start` (escaped braces skipped)."""
    depth = 0
    index = start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2  # `\{`, `\}` and `\\` are literal; other control words need no care here
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


def _side_groups(rtf: str) -> dict[str, list[str]]:
    """The RTF of each header, footer and footnote group, by kind."""
    found: dict[str, list[str]] = {"header": [], "footer": [], "footnote": []}
    position = 0
    while match := _GROUP_RE.search(rtf, position):
        end = _group_end(rtf, match.start())
        found[match.group(1)].append(rtf[match.end() : end - 1])
        position = end
    return found


def _plain(rtf: str, encoding: str) -> list[str]:
    """Non-blank lines of an RTF fragment as text."""
    # striprtf ships no type hints.
    text: str = rtf_to_text(rtf, encoding=encoding, errors="replace")  # type: ignore[no-untyped-call]
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _encoding(data: bytes) -> str:
    match = _CODEPAGE_RE.search(data[:4096])
    codepage = f"cp{int(match.group(1))}" if match else "cp1252"
    try:
        "".encode(codepage)
    except LookupError:
        return "cp1252"
    return codepage


def extract_rtf(data: bytes) -> ExtractedDocument:
    """Text of an RTF document: headers, body, footers, then footnotes under `Footnotes:`."""
    encoding = _encoding(data)
    rtf = data.decode("latin-1")  # RTF is 7-bit; bytes above 127 are read through the code page by striprtf
    try:
        groups = _side_groups(rtf)
        body = _plain(rtf, encoding)
        headers = [line for group in groups["header"] for line in _plain("{\\rtf1 " + group + "}", encoding)]
        footers = [line for group in groups["footer"] for line in _plain("{\\rtf1 " + group + "}", encoding)]
        notes = [" ".join(_plain("{\\rtf1 " + group + "}", encoding)) for group in groups["footnote"]]
    except Exception:  # striprtf is regex-based; a crafted file can still trip its decoding
        logger.info("rtf: parser failed", exc_info=True)
        raise refuse(Failure.DAMAGED_DOCUMENT, _DAMAGED) from None
    builder = DocumentBuilder()
    builder.extend(list(dict.fromkeys(headers)))
    builder.extend(body)
    builder.extend(list(dict.fromkeys(footers)))
    notes = [f"[{number}] {note}" for number, note in enumerate(filter(None, notes), start=1)]
    if notes:
        builder.extend(["Footnotes:", *notes])
    title = _TITLE_RE.search(rtf[:65536])
    return builder.build(
        title=" ".join(title.group(1).split()) or None if title else None,
        empty_message="The RTF document contains no text.",
    )
