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

from protocol.errors import RagError

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .ooxml import DOCM_MAIN_CONTENT_TYPE, OfficeKind, check_office_package
from .xlsx_comments import sheet_comments
from .xml_parts import children_named, local_name, paragraphs_of, parse_xml, text_of

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
        raise refuse(Failure.DAMAGED_DOCUMENT, _DAMAGED[kind]) from None


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


def _story_lines(story: Any) -> Iterator[str]:
    """Lines of a header or footer: its paragraphs and table rows, in order."""
    for block in story.iter_inner_content():
        if hasattr(block, "rows"):
            yield from _table_rows(block)
        else:
            text = _one_line(block.text)
            if text:
                yield text


def _headers_and_footers(document: Any) -> tuple[list[str], list[str]]:
    """(header lines, footer lines), each distinct text once however many sections repeat it."""
    seen: set[str] = set()
    headers: list[str] = []
    footers: list[str] = []
    for section in document.sections:
        for name in _HEADER_FOOTER_ATTRIBUTES:
            story = getattr(section, name)
            if story.is_linked_to_previous:  # no definition of its own: the previous section's shows
                continue
            for line in _story_lines(story):
                if line not in seen:
                    seen.add(line)
                    (headers if name.endswith("header") else footers).append(line)
    return headers, footers


_HEADER_FOOTER_ATTRIBUTES = (
    "first_page_header", "header", "even_page_header", "first_page_footer", "footer", "even_page_footer",
)


# Word's side stories: (relationship type's last segment, label line, element of one note).
_NOTE_PARTS = (("footnotes", "Footnotes:", "footnote"), ("endnotes", "Endnotes:", "endnote"))


def _note_lines(document: Any) -> Iterator[str]:
    """Footnotes, endnotes and comments, each kind under its label line (`Footnotes:`)."""
    parts = {
        rel.reltype.rsplit("/", 1)[-1]: rel.target_part for rel in document.part.rels.values() if not rel.is_external
    }
    for suffix, label, element in _NOTE_PARTS:
        part = parts.get(suffix)
        if part is None:
            continue
        notes = []
        for note in children_named(parse_xml(part.blob), element):
            # Separator "notes" (type separator / continuationSeparator) hold the rule above the notes.
            if note.get(_W_TYPE) not in (None, "normal"):
                continue
            text = paragraphs_of(note)
            if text:
                notes.append(f"[{note.get(_W_ID, '')}] {text}")
        if notes:
            yield label
            yield from notes
    comments = [c for c in (_comment_line(c) for c in document.comments) if c]
    if comments:
        yield "Comments:"
        yield from comments


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_W_TYPE = f"{_W}type"
_W_ID = f"{_W}id"


def _comment_line(comment: Any) -> str:
    """`author: text` of one Word comment."""
    text = _one_line(comment.text)
    author = _one_line(comment.author or "")
    return f"{author}: {text}" if text and author else text


_DOCM_MAIN_AS_WRITTEN = "application/vnd.ms-word.document.macroEnabled.main+xml"  # Word's spelling


def _open_docx(stream: BytesIO) -> Any:
    """The python-docx document of a DOCX or DOCM: `docx.Document` refuses the macro-enabled
    main part's content type, though its XML is the same, so that type is mapped to the same part class."""
    from docx.opc.part import PartFactory
    from docx.package import Package
    from docx.parts.document import DocumentPart

    for content_type in (_DOCM_MAIN_AS_WRITTEN, DOCM_MAIN_CONTENT_TYPE):
        PartFactory.part_type_for.setdefault(content_type, DocumentPart)
    return Package.open(stream).main_document_part.document


def _read_docx(stream: BytesIO) -> ExtractedDocument:
    document = _open_docx(stream)
    builder = DocumentBuilder()
    kinds = _ParagraphKinds()
    first_heading: str | None = None
    headers, footers = _headers_and_footers(document)
    builder.extend(headers)
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
    builder.extend(footers)
    builder.extend(list(_note_lines(document)))
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


def _slide_notes(slide: Any) -> str:
    """The speaker notes of a slide, on one line; "" if it has none.

    Some producers leave the notes in a placeholder python-pptx does not take for the notes
    body, so every text placeholder but the slide image, number, date and footer counts.
    """
    if not slide.has_notes_slide:
        return ""
    notes_slide = slide.notes_slide
    frame = notes_slide.notes_text_frame
    if frame is not None:
        return _one_line(frame.text)
    texts = [
        _one_line(shape.text_frame.text)
        for shape in notes_slide.placeholders
        if shape.has_text_frame and _placeholder_type(shape) not in _NOT_NOTES
    ]
    return " ".join(text for text in texts if text)


_NOT_NOTES = frozenset({"SLIDE_IMAGE", "SLIDE_NUMBER", "DATE", "FOOTER", "HEADER"})


def _placeholder_type(shape: Any) -> str:
    try:
        return str(shape.placeholder_format.type.name)
    except Exception:  # an unknown placeholder type in a damaged file: treat it as text
        return ""


def _slide_comments(slide: Any) -> Iterator[str]:
    """Review comments on a slide: modern (`p188:cm`) and legacy (`p:cm`) comment parts."""
    for rel in slide.part.rels.values():
        if rel.is_external or not rel.reltype.endswith("/comments"):
            continue
        for comment in parse_xml(rel.target_part.blob).iter():
            if local_name(comment) == "cm":
                # Modern comments hold DrawingML paragraphs (`a:t`), legacy ones a `p:text` element.
                text = text_of(comment, ("t", "text"))
                if text:
                    yield text


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
        notes = _slide_notes(slide)
        if notes:
            lines.append(f"Notes: {notes}")
        lines.extend(f"Comment: {comment}" for comment in _slide_comments(slide))
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

    comments = sheet_comments(stream.getvalue())
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
            builder.extend(comments.get(sheet.title, []))
        title = _core_title(workbook.properties)
    finally:
        workbook.close()
    return builder.build(title=title, empty_message="The workbook contains no cell values.")


def extract_xlsx(data: bytes) -> ExtractedDocument:
    """Cell values of a workbook, one page per sheet, rows as `a | b | c` (cached formula results)."""
    return _run_parser("xlsx", _read_xlsx, data)
