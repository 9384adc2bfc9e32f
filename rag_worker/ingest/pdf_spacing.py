"""Word spacing of a PDF text layer as a reader sees it (issue 27 item 6).

Many PDFs hold no space characters: each word is placed at its own position (LaTeX output,
Word's "Save as PDF", forms), and the extractor must decide from the gap between two glyphs
whether a space is there.  pypdf decides from the space glyph's width, which some fonts lack
or misstate, so words run together (`Thinkofyourfavoritescienceﬁctionmovie`, `Zhang2,MelissaDell3`)
or a monospaced word is letter-spaced (`D e t e c t r o n 2`).  pdfium decides from the
characters' boxes (the gap against the font size and the glyph widths), as the viewers that
use it do, and marks the spaces it inferred.

pdfium's inferred spaces are checked against the glyphs' boxes first (`spaced_text`): one is
kept where the gap is wider than the line's usual gap between letters, so an OCR text layer,
which spreads every letter apart, is not cut into `Nort h Buon a Vist a`.  The page's text
stays pypdf's (its line order and hyphenation are what the rest of the reader expects); only on
a line that both extractors read with the same characters in the same order (spaces aside) is
the spacing taken from pdfium:

- a space pdfium sees between two characters pypdf ran together is inserted, inside runs of at
  least `MIN_SPLIT_RUN` characters (a short code such as `AZ` is left whole);
- a space pypdf put inside a letter-spaced run (three or more single characters, each
  followed by one space) is removed where pdfium sees the characters touching.

Words of normal text are never joined: only single characters of such a run lose a space.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

# pdfium writes these for a hyphen at a line end, and joins the two lines: the break is put back.
_PDFIUM_HYPHENS = {"\ufffe": "-\n", "\x02": "-\n"}
# A run of three or more single characters separated by single spaces: "D e t e c t r o n 2".
_LETTER_SPACED_RE = re.compile(r"(?<!\S)\S(?: \S){2,}(?!\S)")


#: An inferred space is a space when its gap exceeds the line's usual gap between letters by this
#: share of the font size (a word space is about a quarter of it; letters of a word touch).
MIN_SPACE_EM = 0.1
#: ... and a gap this wide (in font sizes) is a space whatever the line's usual gap: labels set apart
#: (a chart's month initials "J F M A") are not letters of one word.
WIDE_SPACE_EM = 0.5
#: Spaces are inserted only into runs of at least this many characters: a short code ("AZ", "KG,")
#: whose letters an OCR layer spreads apart is not split, while run-together words are long.
MIN_SPLIT_RUN = 6


class PlacedChar(NamedTuple):
    """One character of pdfium's text page: what it is, whether pdfium inferred it (a space or a
    line break the content stream does not hold), its left and right edge and its font size."""

    char: str
    generated: bool
    left: float
    right: float
    size: float


def spaced_text(chars: list[PlacedChar]) -> str:
    """pdfium's text of a page with its inferred spaces kept only where the gap is wider than the
    line's usual gap between letters: an OCR layer or a letter-spaced font places every letter
    apart, and pdfium would cut each word where two letters are no further apart than the rest."""
    out: list[str] = []
    line: list[int] = []
    for index, placed in enumerate(chars):
        if placed.char in "\r\n":
            out.append(_line_text(chars, line))
            out.append(placed.char)
            line = []
        else:
            line.append(index)
    out.append(_line_text(chars, line))
    return "".join(out)


def _line_text(chars: list[PlacedChar], line: list[int]) -> str:
    letters = [i for i in line if not chars[i].char.isspace()]
    gaps = [chars[b].left - chars[a].right for a, b in zip(letters, letters[1:], strict=False)]
    usual = statistics.median(gaps) if gaps else 0.0
    text = []
    for position, index in enumerate(line):
        placed = chars[index]
        if placed.generated and placed.char == " ":
            before = next((chars[i] for i in reversed(line[:position]) if not chars[i].char.isspace()), None)
            after = next((chars[i] for i in line[position + 1 :] if not chars[i].char.isspace()), None)
            if before is not None and after is not None:
                gap = after.left - before.right
                if gap - usual < MIN_SPACE_EM * before.size and gap < WIDE_SPACE_EM * before.size:
                    continue
        text.append(_PDFIUM_HYPHENS.get(placed.char, placed.char))
    return "".join(text)


def respace_page(layer: str, pdfium_text: str, characters: Callable[[], list[PlacedChar]]) -> str:
    """`layer` respaced from pdfium's characters (`characters()`, read only when needed: a box per
    character costs more than the page's text).  When even every space pdfium infers would change
    nothing and no run is letter-spaced, the page is left as it is."""
    if not layer or not pdfium_text:
        return layer
    if respace(layer, pdfium_text) == layer and not _LETTER_SPACED_RE.search(layer):
        return layer
    return respace(layer, spaced_text(characters()))


def _keys(text: str) -> tuple[str, list[int]]:
    """The non-space characters of `text`, ligatures and compatibility forms unfolded
    (pypdf keeps "ﬁ", pdfium gives "fi"), and for each the index of its source character."""
    if text.isascii():  # the common case, without a normalisation per character
        sources = [index for index, char in enumerate(text) if not char.isspace()]
        return "".join(text[index] for index in sources), sources
    keys: list[str] = []
    sources = []
    for index, char in enumerate(text):
        if char.isspace():
            continue
        folded = unicodedata.normalize("NFKC", char) if not char.isascii() else char
        for part in folded or char:
            if not part.isspace():
                keys.append(part)
                sources.append(index)
    return "".join(keys), sources


def _letter_spaced_gaps(text: str) -> set[int]:
    """Positions of the spaces inside letter-spaced runs of `text`."""
    gaps: set[int] = set()
    for match in _LETTER_SPACED_RE.finditer(text):
        gaps.update(match.start() + offset for offset in range(1, len(match.group()), 2))
    return gaps


def respace(layer: str, reference: str) -> str:
    """`layer` (pypdf's page text) with the spacing of `reference` (pdfium's text of the same page)
    on each line both read with the same characters in the same order; other lines unchanged."""
    if not layer or not reference:
        return layer
    theirs: dict[str, list[str]] = {}
    for line in reference.replace("\r\n", "\n").split("\n"):
        key = _key(line)
        if key:
            theirs.setdefault(key, []).append(line)
    lines = layer.split("\n")
    for number, line in enumerate(lines):
        same = theirs.get(_key(line))
        if same:
            reference_line = same.pop(0)
            if reference_line != line:
                lines[number] = _respace_line(line, reference_line)
    return "\n".join(lines)


def _key(line: str) -> str:
    """What a line is matched on: its characters without spaces, compatibility forms unfolded."""
    squeezed = "".join(line.split())
    return squeezed if squeezed.isascii() else "".join(unicodedata.normalize("NFKC", squeezed).split())


def _respace_line(line: str, reference: str) -> str:
    """`line` with `reference`'s spaces between the characters they share (their keys are equal)."""
    ours, our_sources = _keys(line)
    theirs, their_sources = _keys(reference)
    if ours != theirs:  # a combining mark composed by the line's normalisation, not the character's
        return line
    letter_spaced = _letter_spaced_gaps(line)
    long_runs = {index for match in re.finditer(rf"\S{{{MIN_SPLIT_RUN},}}", line) for index in range(*match.span())}
    inserts: set[int] = set()  # a space goes before this index of `line`
    deletes: set[int] = set()  # the space at this index of `line` goes
    for step in range(len(ours) - 1):
        left, right = our_sources[step], our_sources[step + 1]
        if left == right or their_sources[step] == their_sources[step + 1]:
            continue  # two halves of one ligature
        ours_between = line[left + 1 : right]
        theirs_between = reference[their_sources[step] + 1 : their_sources[step + 1]]
        if not ours_between and theirs_between and right in long_runs:
            inserts.add(right)
        elif ours_between == " " and not theirs_between and left + 1 in letter_spaced:
            deletes.add(left + 1)
    if not inserts and not deletes:
        return line
    return "".join(
        (" " if index in inserts else "") + ("" if index in deletes else char) for index, char in enumerate(line)
    )
