"""Reading order of the text boxes OCR finds: lines, and columns read one after the other.

A page photographed slightly askew is levelled first: the boxes are turned back by the page's
tilt, measured from the boxes themselves.  The detector returns one box per run of text; on a two-column page the runs of both columns
sit side by side at the same height.  Read straight across, every line would mix the two
columns, and line-end de-hyphenation would then join words of different columns
("Epi- nies").  So a page is first split at a *gutter*: a vertical strip no text box crosses,
with several lines of wide text on both sides.  Boxes that span the gutter (a title, a
figure caption across the page) cut the page into bands; within a band the left column is
read before the right one, each split again if it holds columns of its own.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: A gutter is at least this share of the page's text width, and this many times the median line height.
MIN_GUTTER_SHARE = 0.015
MIN_GUTTER_LINES = 0.5
#: A column holds at least this many boxes, whose median width is at least this share of the page's
#: text width: a table's short cells or a form's label and value are not columns.
MIN_COLUMN_BOXES = 3
MIN_COLUMN_WIDTH_SHARE = 0.2
# Gutters are looked for away from the page's edges (a margin note is not a column).
_EDGE_SHARE = 0.15
_MAX_DEPTH = 3  # columns within columns, at most this deep
#: A tilt is corrected from this many degrees (below, lines stay apart anyway) up to the most a
#: photographed page is held askew (a page turned further is read turned, see `ocr.read_image`).
MIN_SKEW_DEGREES = 0.3
MAX_SKEW_DEGREES = 15.0
# The tilt is measured on at least this many boxes of running text.
MIN_SKEW_BOXES = 3


@dataclass(frozen=True)
class TextBox:
    """One recognised run of text and the rectangle around it, in pixels."""

    left: float
    top: float
    right: float
    bottom: float
    text: str

    @property
    def middle(self) -> float:
        return (self.top + self.bottom) / 2

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @classmethod
    def from_corners(cls, corners: Any, text: str) -> TextBox:
        """From the detector's four (x, y) corners."""
        xs = [float(point[0]) for point in corners]
        ys = [float(point[1]) for point in corners]
        return cls(min(xs), min(ys), max(xs), max(ys), text.strip())


def lines_in_reading_order(boxes: Sequence[Any], texts: Sequence[str]) -> list[str]:
    """The page's lines in reading order: column by column, each top to bottom, boxes on one
    line joined left to right.  `boxes` are four (x, y) corners per text, as the detector gives them."""
    corners = _levelled([[(float(point[0]), float(point[1])) for point in box] for box in boxes])
    items = [TextBox.from_corners(box, text) for box, text in zip(corners, texts, strict=True)]
    return [line for block in _blocks(items, 0) for line in _lines(block)]


def skew(boxes: Sequence[Sequence[tuple[float, float]]]) -> float:
    """The page's tilt in radians (positive: lines run down to the right), from the top edges of the
    detector's boxes (it returns turned rectangles around tilted text): their median slope, taken
    over boxes of running text (wider than tall), 0 when too few or beyond `MAX_SKEW_DEGREES`."""
    slopes = []
    for box in boxes:
        (x0, y0), (x1, y1) = box[0], box[1]
        width, height = math.dist(box[0], box[1]), math.dist(box[1], box[2]) if len(box) > 2 else 0.0
        if width > 2 * height and x1 > x0:
            slopes.append(math.atan2(y1 - y0, x1 - x0))
    if len(slopes) < MIN_SKEW_BOXES:
        return 0.0
    angle = statistics.median(slopes)
    return angle if MIN_SKEW_DEGREES <= abs(math.degrees(angle)) <= MAX_SKEW_DEGREES else 0.0


def _levelled(boxes: list[list[tuple[float, float]]]) -> list[list[tuple[float, float]]]:
    """The boxes turned back by the page's tilt, so a tilted page's lines are level again: on a page
    photographed a few degrees askew, a line's end sits half a line lower than its start, and lines
    read by height would interleave."""
    angle = skew(boxes)
    if not angle:
        return boxes
    cos, sin = math.cos(angle), math.sin(angle)
    return [[(x * cos + y * sin, y * cos - x * sin) for x, y in box] for box in boxes]


def _lines(items: list[TextBox]) -> list[str]:
    """Boxes whose vertical centres are within half a line height of each other are one line, read left to right."""
    lines: list[list[TextBox]] = []
    for item in sorted(items, key=lambda box: (box.middle, box.left)):
        current = lines[-1] if lines else None
        if current is not None and abs(item.middle - current[0].middle) <= max(current[0].height, item.height) / 2:
            current.append(item)
        else:
            lines.append([item])
    return [" ".join(box.text for box in sorted(line, key=lambda box: box.left)) for line in lines]


def _blocks(items: list[TextBox], depth: int) -> list[list[TextBox]]:
    """`items` cut into blocks read one after another: bands between spanning boxes, columns within a band."""
    gutter = _gutter(items) if depth < _MAX_DEPTH else None
    if gutter is None:
        return [items] if items else []
    spanning = sorted((box for box in items if box.left < gutter < box.right), key=lambda box: box.top)
    rest = sorted((box for box in items if not box.left < gutter < box.right), key=lambda box: box.middle)
    blocks: list[list[TextBox]] = []
    for cut in [*spanning, None]:
        band = [box for box in rest if cut is None or box.middle < cut.middle]
        rest = [box for box in rest if box not in band] if cut is not None else []
        left = [box for box in band if box.right <= gutter]
        right = [box for box in band if box.left >= gutter]
        blocks += _blocks(left, depth + 1) + _blocks(right, depth + 1)
        if cut is not None:
            blocks.append([cut])
    return blocks


def _gutter(items: list[TextBox]) -> float | None:
    """The x of the widest vertical strip between two columns of text, or None when the boxes form one column."""
    if len(items) < 2 * MIN_COLUMN_BOXES:
        return None
    start, end = min(box.left for box in items), max(box.right for box in items)
    span = end - start
    if span <= 0:
        return None
    heights = sorted(box.height for box in items)
    min_gap = max(MIN_GUTTER_SHARE * span, MIN_GUTTER_LINES * heights[len(heights) // 2])
    # Boxes wider than most of the page are titles or captions: they may cross the gutter.
    narrow = sorted((box for box in items if box.right - box.left < 0.6 * span), key=lambda box: box.left)
    best: tuple[float, float] | None = None
    reach = start
    for box in narrow:
        gap = box.left - reach
        middle = (reach + box.left) / 2
        if gap >= min_gap and start + _EDGE_SHARE * span < middle < end - _EDGE_SHARE * span:
            if best is None or gap > best[0]:
                best = (gap, middle)
        reach = max(reach, box.right)
    if best is None:
        return None
    gutter = best[1]
    return gutter if _is_column(items, gutter, span, left=True) and _is_column(items, gutter, span, left=False) else None


def _is_column(items: list[TextBox], gutter: float, span: float, *, left: bool) -> bool:
    """True when one side of the gutter holds enough boxes of running text to be a column."""
    side = [box for box in items if (box.right <= gutter if left else box.left >= gutter)]
    if len(side) < MIN_COLUMN_BOXES:
        return False
    widths = sorted(box.right - box.left for box in side)
    return widths[len(widths) // 2] >= MIN_COLUMN_WIDTH_SHARE * span
