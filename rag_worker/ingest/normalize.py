"""Text as a reader sees it: one normalisation applied to every document before it is chunked.

Extractors hand over what the file stores, which is not always what a reader sees: PDF fonts
store ligatures ("ﬁ" for "fi") and private-use glyphs, typesetters break words at line ends
("Auf-\\nlage"), word processors leave soft hyphens and zero-width characters.  Left in, they
split one word into several tokens, so "Auflage" matches neither a query nor an exact entity
search.  `normalize_text` undoes them; `normalize_document` applies it page by page so the
page offsets stay true.  The uploaded bytes are stored unchanged; only the indexed text is
normalised.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import regex

from .extracted import ExtractedDocument, count_words

# A line-end hyphen between letters, when the next line starts lower-case: a word broken by
# the typesetter ("Auf-\nlage").  "Mercedes-\nBenz" (capital) and "2019-\n2020" stay as they are.
_LINE_END_HYPHEN_RE = regex.compile(r"(?<=\p{L})[-\u2010][ \t]*\n[ \t]*(?=\p{Ll})")
# A soft hyphen marks where a word may break; at a line end it joins the two halves whatever the case.
_SOFT_HYPHEN_BREAK_RE = regex.compile(r"\u00ad[ \t]*\n[ \t]*")
_HYPHEN_AT_LINE_END_RE = re.compile("[-\u2010][ \t]*\n")
# Private-use glyphs (fonts' own symbols: they mean nothing outside the font), soft hyphens,
# zero-width space, word joiner and BOM.  ZWNJ (U+200C) stays: Persian and Indic spelling needs it.
_INVISIBLE_RE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd\u00ad\u200b\u2060\ufeff]")
# ZWJ joins emoji into one glyph (👩‍💻); anywhere else it only splits a word.
_STRAY_ZWJ_RE = regex.compile(r"(?<![\p{Extended_Pictographic}\uFE0F\U0001F3FB-\U0001F3FF])\u200d|\u200d(?!\p{Extended_Pictographic})")
# Runs of spaces inside a line (indentation at the start of a line is kept: code and lists need it).
# Only runs that change are matched (two or more, or a tab): substituting every single space costs 3x more.
_INNER_SPACES_RE = re.compile(r"(?<=\S)(?:[^\S\n]{2,}|[^\S \n])(?=\S)")
_TRAILING_SPACES_RE = re.compile(r"[^\S\n]+(?=\n|\Z)")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
# Compatibility characters NFKC would make misleading: "2½" becomes "21⁄2" (read as 21/2) and
# "10²" becomes "102".  They are spelled out first: "2 1/2", "10^2".  (NFKC turns "½" alone into
# "1⁄2"; its fraction slash becomes "/" so the digits read as a fraction.)
_VULGAR_FRACTION_RE = re.compile("(\\d?)([\u00bc-\u00be\u2150-\u215e\u2189])")
_DIGIT_SUPERSCRIPT_RE = re.compile("(?<=\\d)[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+")
_COMPATIBILITY_DAMAGE = frozenset("\u00bc\u00bd\u00be\u2044\u2070\u00b9\u00b2\u00b3\u2189") | frozenset(
    map(chr, range(0x2150, 0x215F))
) | frozenset(map(chr, range(0x2074, 0x207A)))


def _spell_out_compatibility(text: str) -> str:
    """Fractions and superscript digits written so NFKC cannot fuse them with the digits before them."""
    text = _VULGAR_FRACTION_RE.sub(
        lambda m: (m[1] + " " if m[1] else "") + unicodedata.normalize("NFKC", m[2]), text
    )
    text = _DIGIT_SUPERSCRIPT_RE.sub(lambda m: "^" + unicodedata.normalize("NFKC", m[0]), text)
    return text.replace("\u2044", "/")


def normalize_text(text: str) -> str:
    """`text` with ligatures expanded (NFKC), line-end hyphenation joined, invisible glyphs dropped, spaces collapsed.

    Paragraph breaks survive as one blank line; leading indentation and the text's ends are
    kept, so pages normalised one by one can be joined again (see `normalize_document`).
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii():
        if not _COMPATIBILITY_DAMAGE.isdisjoint(text):
            text = _spell_out_compatibility(text)
        text = unicodedata.normalize("NFKC", text)
        text = text.replace("\u2028", "\n").replace("\u2029", "\n\n")
        if "\u00ad" in text:
            text = _SOFT_HYPHEN_BREAK_RE.sub("", text)
        text = _INVISIBLE_RE.sub("", text)
        if "\u200d" in text:
            text = _STRAY_ZWJ_RE.sub("", text)
    # Each pass runs only when its cheap precondition holds: most pages need none of them.
    if _HYPHEN_AT_LINE_END_RE.search(text):
        text = _LINE_END_HYPHEN_RE.sub("", text)
    if "  " in text or "\t" in text or "\f" in text or "\v" in text:
        text = _INNER_SPACES_RE.sub(" ", text)
    if " \n" in text or "\t\n" in text or text.endswith((" ", "\t")):
        text = _TRAILING_SPACES_RE.sub("", text)
    if "\n\n\n" in text:
        text = _BLANK_LINES_RE.sub("\n\n", text)
    return text


def normalize_title(title: str | None) -> str | None:
    """A title on one line, normalised like the text; None if nothing is left."""
    if title is None:
        return None
    return " ".join(normalize_text(title).split()) or None


def normalize_document(document: ExtractedDocument) -> ExtractedDocument:
    """`document` with each page normalised on its own and the page offsets recomputed.

    Each page's slice keeps the separator after it, so joining the normalised slices gives
    the normalised text and the offsets are their running lengths.
    """
    text = document.text
    # Text before the first offset (there should be none) belongs to the first page.
    bounds = [0, *document.page_offsets[1:], len(text)]
    pieces = [normalize_text(text[start:end]) for start, end in zip(bounds, bounds[1:], strict=False)]
    offsets: list[int] = []
    position = 0
    for piece in pieces:
        offsets.append(position)
        position += len(piece)
    normalized = "".join(pieces)
    return dataclasses.replace(
        document,
        text=normalized,
        words=count_words(normalized),
        page_offsets=offsets if document.page_offsets else [],
        title=normalize_title(document.title),
    )
