"""Office Open XML packages (DOCX, XLSX, PPTX): which kind a zip is, and whether it is safe to open.

An Office file is a zip of XML parts, so a hostile one can be a zip bomb (a 10 MB upload
that inflates to gigabytes), carry thousands of entries, or hold XML with a DOCTYPE that
expands entities (billion laughs) or points at external files.  Before any Office parser
sees the bytes:

- `check_zip_limits` reads only the central directory — declared sizes, counts, names and
  methods — and refuses bombs without inflating anything (this runs during detection);
- `check_office_package` then inflates every entry once in 64 KB steps (`zip_scan`),
  proving the declared sizes true and refusing XML parts with a DOCTYPE or entities.

`office_kind` says which of the three formats a zip is, from `[Content_Types].xml`.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from typing import Literal

from .failures import Failure, refuse
from .validation import format_size
from .zip_scan import damaged, new_prolog_scanner, parse_without_doctype, scan_entry, zip_bomb

logger = logging.getLogger(__name__)

OfficeKind = Literal["docx", "xlsx", "pptx"]

MAX_ENTRIES = 2_000
MAX_UNCOMPRESSED_BYTES = 100 * 1024 * 1024
# Deflate tops out near 1032:1; real XML parts compress 5-30:1 and a sheet of repeated cells
# maybe 200:1.  Only large entries are judged by ratio: a 1 KB empty part may compress 100:1.
MAX_ENTRY_RATIO = 200
RATIO_CHECK_MIN_BYTES = 5 * 1024 * 1024
MAX_CONTENT_TYPES_BYTES = 1024 * 1024

CONTENT_TYPES_PART = "[Content_Types].xml"
# The main part's content type names the format.  Macro-enabled files (.docm, .xlsm, .pptm)
# are the same XML plus a macro part (never run, never read): they are read as their plain kind.
DOCM_MAIN_CONTENT_TYPE = "application/vnd.ms-word.document.macroenabled.main+xml"
MAIN_CONTENT_TYPES: dict[str, OfficeKind] = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": "pptx",
    DOCM_MAIN_CONTENT_TYPE: "docx",
    "application/vnd.ms-excel.sheet.macroenabled.main+xml": "xlsx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.main+xml": "pptx",
}
# Embedded objects (the workbook behind every PPTX chart) are zips themselves.  We never open
# them, so they cannot recurse; anywhere else a nested archive has no business in a document.
_EMBEDDINGS_RE = re.compile(r"^(word|xl|ppt)/embeddings/[^/]+$")
_ARCHIVE_SUFFIXES = (".zip", ".docx", ".xlsx", ".pptx", ".docm", ".xlsm", ".pptm", ".jar", ".gz", ".7z", ".rar")
_ALLOWED_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_BAD_NAME_RE = re.compile(r"(^|/)\.\.(/|$)|^/|\\|^[A-Za-z]:|\x00")


def open_zip(data: bytes) -> zipfile.ZipFile | None:
    """A ZipFile over `data` (reads the central directory only), or None if it is no zip."""
    if not data.startswith(b"PK"):
        return None
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError):
        logger.info("ooxml: not a readable zip", exc_info=True)
        return None


def check_zip_limits(archive: zipfile.ZipFile, compressed_size: int) -> None:
    """Refuse a zip bomb, a zip with too many entries, nested archives or unsafe names.

    Reads only the central directory.  Raises `RESOURCE_LIMIT_EXCEEDED` for size and count
    limits and `UNSUPPORTED_FORMAT` for structure no Office application writes.
    """
    entries = archive.infolist()
    if len(entries) > MAX_ENTRIES:
        raise refuse(
            Failure.TOO_MANY_ENTRIES,
            f"The file is a zip with {len(entries):,} entries; documents with more than {MAX_ENTRIES:,} "
            "are refused (it may be a zip bomb).",
            details={"entries": len(entries), "max_entries": MAX_ENTRIES},
        )
    total = 0
    for info in entries:
        name = info.filename
        if _BAD_NAME_RE.search(name):
            raise refuse(
                Failure.INVALID_PACKAGE,
                "The zip contains an entry with an unsafe path (absolute, '..' or a drive letter); "
                "it is not a valid document.",
            )
        if info.compress_type not in _ALLOWED_METHODS:
            raise refuse(
                Failure.INVALID_PACKAGE,
                "The zip uses a compression method office documents never use; re-save the document.",
            )
        if info.flag_bits & 0x1:
            raise refuse(Failure.ENCRYPTED_ARCHIVE)
        if name.lower().endswith(_ARCHIVE_SUFFIXES) and not _EMBEDDINGS_RE.match(name):
            raise refuse(
                Failure.INVALID_PACKAGE,
                "The file contains a nested archive outside the embedded-objects folder; it is not a valid document.",
            )
        if info.file_size >= RATIO_CHECK_MIN_BYTES and info.file_size > MAX_ENTRY_RATIO * max(info.compress_size, 1):
            raise zip_bomb(f"one entry expands {info.file_size // max(info.compress_size, 1):,}-fold")
        total += info.file_size
        if total > MAX_UNCOMPRESSED_BYTES:
            raise zip_bomb(
                f"it expands to more than {format_size(MAX_UNCOMPRESSED_BYTES)} from {format_size(compressed_size)}"
            )


def read_content_types(archive: zipfile.ZipFile) -> tuple[dict[str, str], dict[str, str]] | None:
    """(`Override` part name → type, `Default` extension → type) from `[Content_Types].xml`, or None.

    Parsed with DTDs refused and at most 1 MB read, whatever the entry claims.
    """
    overrides: dict[str, str] = {}
    defaults: dict[str, str] = {}

    def on_start(name: str, attrs: dict[str, str]) -> None:
        local = name.rsplit(":", 1)[-1]
        if local == "Override" and "PartName" in attrs:
            overrides[attrs["PartName"].lstrip("/")] = attrs.get("ContentType", "").lower()
        elif local == "Default" and "Extension" in attrs:
            defaults[attrs["Extension"].lower()] = attrs.get("ContentType", "").lower()

    try:
        with archive.open(CONTENT_TYPES_PART) as stream:
            raw = stream.read(MAX_CONTENT_TYPES_BYTES + 1)
    except (KeyError, zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
        return None
    if len(raw) > MAX_CONTENT_TYPES_BYTES:
        return None
    if not parse_without_doctype(new_prolog_scanner(on_start), raw):
        return None
    return overrides, defaults


def _main_kind(archive: zipfile.ZipFile) -> tuple[OfficeKind | None, dict[str, str], dict[str, str]]:
    """(the format its main part names or None, overrides, defaults) of an opened package."""
    types = read_content_types(archive)
    if types is None:
        return None, {}, {}
    overrides, defaults = types
    kinds = {MAIN_CONTENT_TYPES[t] for t in overrides.values() if t in MAIN_CONTENT_TYPES}
    return (kinds.pop() if len(kinds) == 1 else None), overrides, defaults


def office_kind(data: bytes) -> OfficeKind | None:
    """Which Office format `data` is ("docx", "xlsx", "pptx"), or None. Never raises; no size checks."""
    archive = open_zip(data)
    if archive is None:
        return None
    with archive:
        return _main_kind(archive)[0]


def is_office_kind(data: bytes, kind: OfficeKind) -> bool:
    """The content check of an Office format: a safe zip whose main part is `kind`.

    Raises `RESOURCE_LIMIT_EXCEEDED` / `UNSUPPORTED_FORMAT` for a zip that fails
    `check_zip_limits`, so a bomb is refused while its format is being detected.
    """
    archive = open_zip(data)
    if archive is None:
        return False
    with archive:
        check_zip_limits(archive, len(data))
        return _main_kind(archive)[0] == kind


def check_office_package(data: bytes, kind: OfficeKind) -> None:
    """Everything to check before a parser opens `data` as `kind`; raises `RagError` if unsafe."""
    archive = open_zip(data)
    if archive is None:
        raise damaged()
    with archive:
        check_zip_limits(archive, len(data))
        found, overrides, defaults = _main_kind(archive)
        if found != kind:
            raise refuse(Failure.INVALID_PACKAGE, f"The file is not a valid {kind.upper()} document.")
        for info in archive.infolist():
            if not info.is_dir():
                scan_entry(data, info, is_xml=_is_xml_part(info.filename, overrides, defaults))


def _is_xml_part(name: str, overrides: dict[str, str], defaults: dict[str, str]) -> bool:
    """True for a part a parser may read as XML: by extension or by its declared content type."""
    lower = name.lower()
    if lower.endswith((".xml", ".rels", ".vml")):
        return True
    content_type = overrides.get(name) or defaults.get(lower.rsplit(".", 1)[-1], "")
    return content_type.endswith("+xml") or content_type in ("application/xml", "text/xml")
