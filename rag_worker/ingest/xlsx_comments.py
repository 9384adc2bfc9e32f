"""Comments on Excel cells: threaded comments (Excel 365) and notes (the older comments).

openpyxl's read-only mode, which the XLSX extractor uses to bound memory, loads neither, and
openpyxl never reads threaded comments at all.  They are parts of the package, related to
their sheet: `xl/threadedComments/threadedComment1.xml` (authors in `xl/persons/person.xml`)
and `xl/comments1.xml`.  Excel also writes a note for each threaded comment, prefixed with a
notice for old versions; when a sheet has threaded comments its notes are left out.
"""

from __future__ import annotations

import logging
import posixpath
import zipfile
from io import BytesIO

from lxml import etree

from .xml_parts import local_name, parse_xml, text_of

logger = logging.getLogger(__name__)

_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
#: Comment lines kept per sheet.
MAX_COMMENTS_PER_SHEET = 5_000


def _relationships(archive: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Relationship id → (type, target part) of `part`, targets resolved against its folder."""
    folder, name = posixpath.split(part)
    try:
        root = parse_xml(archive.read(posixpath.join(folder, "_rels", f"{name}.rels")))
    except KeyError:
        return {}
    found = {}
    for rel in root:
        target = rel.get("Target", "")
        if rel.get("TargetMode") == "External" or not target:
            continue
        resolved = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        found[rel.get("Id", "")] = (rel.get("Type", ""), resolved)
    return found


def _people(archive: zipfile.ZipFile) -> dict[str, str]:
    """Threaded comments' person id → display name."""
    names: dict[str, str] = {}
    for part in archive.namelist():
        if part.startswith("xl/persons/") and part.endswith(".xml"):
            for person in parse_xml(archive.read(part)).iter():
                if local_name(person) == "person" and person.get("id"):
                    names[person.get("id", "")] = person.get("displayName", "")
    return names


def _threaded_lines(root: etree._Element, people: dict[str, str]) -> list[str]:
    lines = []
    for comment in root.iter():
        if local_name(comment) != "threadedComment":
            continue
        text = " ".join(" ".join(child.text or "" for child in comment if local_name(child) == "text").split())
        if text:
            author = people.get(comment.get("personId", ""), "")
            reply = "reply " if comment.get("parentId") else ""
            lines.append(f"Comment {comment.get('ref', '')}: {reply}{author + ': ' if author else ''}{text}")
    return lines


def _note_lines(root: etree._Element) -> list[str]:
    authors = [text_of(author) or (author.text or "") for author in root.iter() if local_name(author) == "author"]
    lines = []
    for comment in root.iter():
        if local_name(comment) != "comment":
            continue
        text = text_of(comment)
        index = comment.get("authorId", "")
        author = authors[int(index)] if index.isdigit() and int(index) < len(authors) else ""
        if author and text.startswith(f"{author}:"):
            text = text[len(author) + 1 :].strip()  # Excel repeats the author at the start of a note
        if text:
            lines.append(f"Comment {comment.get('ref', '')}: {author + ': ' if author else ''}{text}")
    return lines


def sheet_comments(data: bytes) -> dict[str, list[str]]:
    """Sheet name → its `Comment B2: author: text` lines; empty when the workbook has none or they cannot be read."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            workbook = parse_xml(archive.read("xl/workbook.xml"))
            sheets = _relationships(archive, "xl/workbook.xml")
            people: dict[str, str] | None = None
            found: dict[str, list[str]] = {}
            for sheet in workbook.iter():
                if local_name(sheet) != "sheet" or sheet.get(_R_ID) not in sheets:
                    continue
                threaded: list[str] = []
                notes: list[str] = []
                for kind, part in _relationships(archive, sheets[sheet.get(_R_ID, "")][1]).values():
                    if kind.endswith("/threadedComment"):
                        people = _people(archive) if people is None else people
                        threaded += _threaded_lines(parse_xml(archive.read(part)), people)
                    elif kind.endswith("/comments"):
                        notes += _note_lines(parse_xml(archive.read(part)))
                lines = (threaded or notes)[:MAX_COMMENTS_PER_SHEET]
                if lines:
                    found[sheet.get("name", "")] = lines
            return found
    except Exception:  # comments are extra: a malformed part must not cost the workbook
        logger.info("xlsx: comments unreadable", exc_info=True)
        return {}
