"""OpenDocument text, spreadsheets and presentations (ODT, ODS, ODP) to text.

An OpenDocument file is a zip of XML parts: `content.xml` holds the body, `styles.xml` the
page headers and footers, `meta.xml` the title.  After `zip_packages.check_package` has
proved the zip safe, the parts are read with lxml (entities and DTDs off, see `xml_parts`)
— the format is plain, namespaced XML, and walking it directly keeps what odfpy's
`teletype` drops (notes, comments, headers).  Output follows the Office extractors:
headings as `#` lines, list items as `- `, table rows as `a | b`, one page per sheet or slide;
headers first, footers, footnotes and comments after the body under a label line.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections.abc import Callable, Iterator
from copy import deepcopy

from lxml import etree

from protocol.errors import RagError

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .xml_parts import local_name, parse_xml
from .zip_packages import PackageKind, check_package

logger = logging.getLogger(__name__)

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_WORD_RE = re.compile(r"[^\W_]{2,}")
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"

MAX_DEPTH = 64  # nesting of sections, lists, frames and tables; deeper content is skipped
MAX_COLUMNS = 512
MAX_REPEATED_ROWS = 100  # a row repeated 1,048,576 times is how a spreadsheet says "the rest is empty"
# Read separately (notes, comments, slide notes) or never shown as text.
_NOT_BODY = frozenset(
    "note annotation annotation-end tracked-changes notes forms table-columns table-column sequence-decls "
    "variable-decls user-field-decls bookmark soft-page-break".split()
)
_DAMAGED = {
    "odt": "The OpenDocument text is damaged and could not be read; re-save it and upload it again.",
    "ods": "The OpenDocument spreadsheet is damaged and could not be read; re-save it and upload it again.",
    "odp": "The OpenDocument presentation is damaged and could not be read; re-save it and upload it again.",
}


def inline_text(element: etree._Element) -> str:
    """The text of a paragraph or heading on one line, without its footnotes and comments."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            name = local_name(child)
            if name in ("s", "tab", "line-break"):
                parts.append(" ")
            elif name not in _NOT_BODY:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return " ".join("".join(parts).split())


def _cells(row: etree._Element) -> list[str]:
    """The cell texts of a table row, repeated cells expanded up to `MAX_COLUMNS`, trailing empties dropped."""
    cells: list[str] = []
    for cell in row:
        if local_name(cell) not in ("table-cell", "covered-table-cell"):
            continue
        text = " ".join(block_lines(cell))  # not cell.iter(p): a cell's comment holds paragraphs too
        repeat = _int(cell.get(f"{_TABLE}number-columns-repeated"), 1)
        cells.extend([text] * min(repeat, MAX_COLUMNS - len(cells)))
        if len(cells) >= MAX_COLUMNS:
            break
    while cells and not cells[-1]:
        cells.pop()
    return cells


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value is not None else default
    except ValueError:
        return default


def block_lines(element: etree._Element, depth: int = 0) -> Iterator[str]:
    """Lines of the body below `element`, in document order."""
    if depth > MAX_DEPTH:
        return
    for child in element:
        name = local_name(child)
        if name in _NOT_BODY:
            continue
        if name == "h":
            text = inline_text(child)
            if text:
                level = min(_int(child.get(f"{_TEXT}outline-level"), 1), 6)
                yield "#" * level + " " + text
        elif name == "p":
            text = inline_text(child)
            if text:
                yield text
        elif name == "list-item":
            for index, line in enumerate(block_lines(child, depth + 1)):
                yield f"- {line}" if index == 0 and not line.startswith("- ") else line
        elif name == "table-row":
            cells = _cells(child)
            if cells:
                line = " | ".join(cells)
                yield from [line] * min(_int(child.get(f"{_TABLE}number-rows-repeated"), 1), MAX_REPEATED_ROWS)
        else:  # sections, lists, tables, frames, text boxes, groups: containers of the above
            yield from block_lines(child, depth + 1)


def _side_lines(root: etree._Element) -> Iterator[str]:
    """Footnotes, endnotes and comments of a body, each kind under its label line."""
    kinds: dict[str, list[str]] = {"footnote": [], "endnote": []}
    for note in root.iter(f"{_TEXT}note"):
        body = next(note.iter(f"{_TEXT}note-body"), None)
        citation = next(note.iter(f"{_TEXT}note-citation"), None)
        text = " ".join(block_lines(body)) if body is not None else ""
        if text:
            mark = (citation.text or "").strip() if citation is not None else ""
            kinds.get(note.get(f"{_TEXT}note-class", "footnote"), kinds["footnote"]).append(f"[{mark}] {text}")
    for kind, label in (("footnote", "Footnotes:"), ("endnote", "Endnotes:")):
        if kinds[kind]:
            yield label
            yield from kinds[kind]
    comments = [" ".join(block_lines(c)) for c in root.iter(f"{_OFFICE}annotation")]
    comments = [c for c in comments if c]
    if comments:
        yield "Comments:"
        yield from comments


# Fields a header or footer prints (page numbers, the sheet's name, the date): the file stores
# placeholders for them ("???", "Page 1 / 99"), not what any printed page shows.
_PRINT_FIELDS = tuple(f"{_TEXT}{name}" for name in (
    "page-number", "page-count", "sheet-name", "date", "time", "file-name", "title", "chapter",
))


def _without_print_fields(element: etree._Element) -> list[str]:
    """The lines of a header or footer with its print fields left out; a paragraph that held a field
    and has at most one word besides it ("Page 1 / 99", "???") is boilerplate and dropped."""
    copy = deepcopy(element)
    lines = []
    for paragraph in copy.iter(f"{_TEXT}p", f"{_TEXT}h"):
        fields = list(paragraph.iter(*_PRINT_FIELDS))
        for field in fields:
            field.text = ""
            for child in list(field):
                field.remove(child)
        text = inline_text(paragraph)
        if text and not (fields and len(_WORD_RE.findall(text)) <= 1):
            lines.append(text)
    return lines


def _headers_and_footers(styles: etree._Element | None) -> tuple[list[str], list[str]]:
    """(header lines, footer lines) of the master pages, each distinct text once."""
    headers: list[str] = []
    footers: list[str] = []
    if styles is None:
        return headers, footers
    seen: set[str] = set()
    for element in styles.iter():
        name = local_name(element)
        if name.startswith(("header", "footer")) and str(element.tag).startswith(_STYLE):
            for line in _without_print_fields(element):
                if line not in seen:
                    seen.add(line)
                    (headers if name.startswith("header") else footers).append(line)
    return headers, footers


def _slide_title(page: etree._Element) -> str:
    for frame in page.iter(f"{_DRAW}frame"):
        if frame.get(f"{_PRESENTATION}class") == "title":
            return inline_text(frame)
    return ""


def _add_presentation(body: etree._Element, builder: DocumentBuilder) -> str | None:
    first_title = None
    for number, page in enumerate(body.iter(f"{_DRAW}page"), start=1):
        builder.new_page()
        title = _slide_title(page)
        first_title = first_title or title or None
        builder.add(f"## Slide {number}: {title}" if title else f"## Slide {number}", content=bool(title))
        lines = [line for line in block_lines(page) if line != title]
        notes = next(page.iter(f"{_PRESENTATION}notes"), None)
        note_text = " ".join(block_lines(notes)) if notes is not None else ""
        if note_text:
            lines.append(f"Notes: {note_text}")
        if not builder.extend(lines):
            break
    return first_title


def _add_spreadsheet(body: etree._Element, builder: DocumentBuilder) -> None:
    for sheet in body.iter(f"{_TABLE}table"):
        builder.new_page()
        builder.add(f"## Sheet: {sheet.get(f'{_TABLE}name', '')}", content=False)
        if not builder.extend(list(block_lines(sheet))):
            break


def _read(archive: zipfile.ZipFile, name: str) -> etree._Element | None:
    try:
        return parse_xml(archive.read(name))
    except KeyError:
        return None


def _title(meta: etree._Element | None) -> str | None:
    element = next(meta.iter(_DC_TITLE), None) if meta is not None else None
    if element is None:
        return None
    return " ".join((element.text or "").split()) or None


def _read_package(data: bytes, kind: PackageKind) -> ExtractedDocument:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        content = _read(archive, "content.xml")
        styles = _read(archive, "styles.xml")
        meta = _read(archive, "meta.xml")
    body = next(content.iter(f"{_OFFICE}body"), None) if content is not None else None
    if body is None:
        raise refuse(Failure.DAMAGED_DOCUMENT, _DAMAGED[kind])
    builder = DocumentBuilder()
    headers, footers = _headers_and_footers(styles)
    builder.extend(headers)
    first_title = None
    if kind == "odp":
        first_title = _add_presentation(body, builder)
    elif kind == "ods":
        _add_spreadsheet(body, builder)
    else:
        builder.extend(list(block_lines(body)))
    builder.extend(footers)
    builder.extend(list(_side_lines(body)))
    return builder.build(title=_title(meta) or first_title, empty_message=f"The {kind.upper()} file contains no text.")


def _extractor(kind: PackageKind) -> Callable[[bytes], ExtractedDocument]:
    def extract(data: bytes) -> ExtractedDocument:
        check_package(data, kind)
        try:
            return _read_package(data, kind)
        except RagError:
            raise
        except Exception:  # lxml and zipfile raise many types on damaged input
            logger.info("%s: parser failed", kind, exc_info=True)
            raise refuse(Failure.DAMAGED_DOCUMENT, _DAMAGED[kind]) from None

    extract.__doc__ = f"Text of an OpenDocument {kind.upper()} file (body, headers, footers, notes, comments)."
    return extract


extract_odt = _extractor("odt")
extract_ods = _extractor("ods")
extract_odp = _extractor("odp")
