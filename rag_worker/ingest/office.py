"""Word, PowerPoint and Excel files (DOCX, PPTX, XLSX) to text.

Every extractor first passes the package through `ooxml.check_office_package` (zip-bomb
limits, no DOCTYPE in any XML part), then reads it with python-docx, python-pptx or
openpyxl.  Those parsers raise all kinds of exceptions on malformed files; each becomes
`EXTRACTION_FAILED` with a message for the person, the traceback goes to the log.

Output keeps the structure an index can use: headings as Markdown `#` lines, list items as
`- `, table rows as `a | b | c`, one page per slide or sheet.
"""

from __future__ import annotations

import datetime
import logging
import re
from collections.abc import Iterator
from io import BytesIO
from typing import Any

from protocol.errors import ErrorCode, RagError

from .document import DocumentBuilder, ExtractedDocument
from .ooxml import OfficeKind, check_office_package

logger = logging.getLogger(__name__)

MAX_SHEET_ROWS = 100_000  # rows with a value, over the whole workbook
MAX_SHEET_COLUMNS = 512
MAX_GROUP_DEPTH = 16  # nested shape groups in a slide
_HEADING_RE = re.compile(r"^heading ([1-9])$")
_DAMAGED = {
    "docx": "The Word document is damaged and could not be read; re-save it in Word and upload it again.",
    "pptx": "The presentation is damaged and could not be read; re-save it in PowerPoint and upload it again.",
    "xlsx": "The workbook is damaged and could not be read; re-save it in Excel and upload it again.",
}


def _one_line(text: str) -> str:
    """Cell or paragraph text on one line (vertical tabs are Word's soft line breaks)."""
    return " ".join(text.split())


def _run_parser(kind: OfficeKind, extract: Any, data: bytes) -> ExtractedDocument:
    """Check the package, then run `extract`; parser exceptions become `EXTRACTION_FAILED`."""
    check_office_package(data, kind)
    try:
        return extract(BytesIO(data))  # type: ignore[no-any-return]
    except RagError:
        raise
    except Exception:  # python-docx/pptx/openpyxl raise KeyError, ValueError, lxml errors, … on bad input
        logger.info("%s: parser failed", kind, exc_info=True)
        raise RagError(ErrorCode.EXTRACTION_FAILED, _DAMAGED[kind]) from None


def _core_title(properties: Any) -> str | None:
    try:
        title = _one_line(properties.title or "")
    except Exception:  # a malformed docProps/core.xml should not cost the document
        return None
    return title or None


# ---------------------------------------------------------------- DOCX


def _heading_level(style: Any) -> int:
    """1-9 for a heading style (or a style based on one), 1 for Title, 0 otherwise."""
    for _ in range(5):  # custom styles inherit from built-in headings; the chain is short
        if style is None:
            return 0
        name = (style.name or "").lower()
        if name == "title":
            return 1
        match = _HEADING_RE.match(name)
        if match:
            return int(match.group(1))
        style = style.base_style
    return 0


class _ParagraphKinds:
    """Heading level and list-ness of paragraphs, looked up once per style.

    python-docx resolves `paragraph.style` by scanning every style in the document: ~1 ms a
    paragraph, 20 s for a 20,000-paragraph file.  A document uses a handful of styles.
    """

    def __init__(self) -> None:
        self._by_style: dict[str | None, tuple[int, bool]] = {}

    def of(self, paragraph: Any) -> tuple[int, bool]:
        """(heading level or 0, is a list item)."""
        properties = paragraph._p.pPr
        style_id = properties.style if properties is not None else None
        if style_id not in self._by_style:
            style = paragraph.style
            is_list_style = style is not None and (style.name or "").lower().startswith("list")
            self._by_style[style_id] = (_heading_level(style), is_list_style)
        level, is_list = self._by_style[style_id]
        return level, is_list or (properties is not None and properties.numPr is not None)


def _table_rows(table: Any) -> Iterator[str]:
    """`a | b | c` per row; a merged cell appears once, not once per grid column it spans."""
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(_one_line(cell.text))
        if any(cells):
            yield " | ".join(cells)


def _read_docx(stream: BytesIO) -> ExtractedDocument:
    import docx

    document = docx.Document(stream)
    builder = DocumentBuilder()
    kinds = _ParagraphKinds()
    first_heading: str | None = None
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            lines = list(_table_rows(block))
        else:
            text = _one_line(block.text)
            if not text:
                continue
            level, is_list = kinds.of(block)
            if level and first_heading is None:
                first_heading = text
            prefix = "#" * level + " " if level else "- " if is_list else ""
            lines = [prefix + text]
        if not builder.extend(lines):
            break
    return builder.build(
        title=_core_title(document.core_properties) or first_heading,
        empty_message="The Word document contains no text.",
    )


def extract_docx(data: bytes) -> ExtractedDocument:
    """Text of a Word document: headings as `#` lines, list items as `- `, table rows as `a | b`."""
    return _run_parser("docx", _read_docx, data)


# ---------------------------------------------------------------- PPTX


def _shape_lines(shapes: Any, skip: Any, depth: int = 0) -> Iterator[str]:
    """Text of the shapes on a slide, groups included, in the order they are stored."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if skip is not None and shape.element is skip.element:  # proxies are new objects on every access
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP and depth < MAX_GROUP_DEPTH:
            yield from _shape_lines(shape.shapes, skip, depth + 1)
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield from _table_rows(shape.table)
        elif shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                text = _one_line(paragraph.text)
                if text:
                    yield ("- " if paragraph.level else "") + text


def _read_pptx(stream: BytesIO) -> ExtractedDocument:
    import pptx

    presentation = pptx.Presentation(stream)
    builder = DocumentBuilder()
    first_title: str | None = None
    for number, slide in enumerate(presentation.slides, start=1):
        builder.new_page()
        title_shape = slide.shapes.title
        title = _one_line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
        first_title = first_title or title or None
        builder.add(f"## Slide {number}: {title}" if title else f"## Slide {number}", content=bool(title))
        lines = list(_shape_lines(slide.shapes, title_shape))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = _one_line(slide.notes_slide.notes_text_frame.text)
            if notes:
                lines.append(f"Notes: {notes}")
        if not builder.extend(lines):
            break
    return builder.build(
        title=_core_title(presentation.core_properties) or first_title,
        empty_message="The presentation contains no text.",
    )


def extract_pptx(data: bytes) -> ExtractedDocument:
    """Text of a presentation, one page per slide, each headed `## Slide N: title`."""
    return _run_parser("pptx", _read_pptx, data)


# ---------------------------------------------------------------- XLSX


def format_cell(value: object) -> str:
    """A cell value as it would read in the sheet: `12`, `0.25`, `2024-05-01`, `TRUE`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:.15g}"
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time() else value.isoformat(sep=" ")
    if isinstance(value, str):
        return _one_line(value)
    return str(value)


def _sheet_rows(sheet: Any) -> Iterator[str]:
    """`a | b | c` per row that has a value; trailing empty cells dropped."""
    # Passing max_col bounds every row's width: a hostile sheet may declare A1:XFD1048576.
    width = min(sheet.max_column or MAX_SHEET_COLUMNS, MAX_SHEET_COLUMNS)
    for row in sheet.iter_rows(max_col=width, values_only=True):
        last = len(row) - 1
        while last >= 0 and (row[last] is None or row[last] == ""):
            last -= 1
        if last >= 0:
            yield " | ".join(format_cell(value) for value in row[: last + 1])


def _read_xlsx(stream: BytesIO) -> ExtractedDocument:
    import openpyxl

    workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True, keep_links=False)
    builder = DocumentBuilder()
    rows = 0
    try:
        for sheet in workbook.worksheets:
            builder.new_page()
            builder.add(f"## Sheet: {_one_line(sheet.title)}", content=False)
            for line in _sheet_rows(sheet):
                if rows == MAX_SHEET_ROWS:
                    builder.warnings.append(
                        f"Only the first {MAX_SHEET_ROWS:,} rows with values were indexed; the rest was skipped."
                    )
                    rows += 1  # past the limit: the outer loop stops too
                    break
                if not builder.add(line):
                    break
                rows += 1
            if rows > MAX_SHEET_ROWS or builder.truncated:
                break
        title = _core_title(workbook.properties)
    finally:
        workbook.close()
    return builder.build(title=title, empty_message="The workbook contains no cell values.")


def extract_xlsx(data: bytes) -> ExtractedDocument:
    """Cell values of a workbook, one page per sheet, rows as `a | b | c` (cached formula results)."""
    return _run_parser("xlsx", _read_xlsx, data)
