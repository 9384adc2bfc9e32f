"""OpenDocument (ODT, ODS, ODP) and EPUB packages: which kind a zip is, and whether it is safe to open.

Both formats are zips whose first entry, `mimetype`, holds their MIME type uncompressed, so
the kind is read from there (not from the extension).  The safety checks are the Office
ones (`ooxml.check_zip_limits`, then `zip_scan.scan_entry` over every entry), except that
an EPUB's XHTML may carry a bare `<!DOCTYPE html …>`; entity declarations are refused in
every XML part of both formats.
"""

from __future__ import annotations

import zipfile
from typing import Literal

from .failures import Failure, refuse
from .ooxml import check_zip_limits, open_zip
from .zip_scan import damaged, scan_entry

PackageKind = Literal["odt", "ods", "odp", "epub"]

MIMETYPE_ENTRY = "mimetype"
PACKAGE_MIME_TYPES: dict[str, PackageKind] = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/epub+zip": "epub",
}
_XML_SUFFIXES = (".xml", ".rdf", ".opf", ".ncx", ".xhtml", ".xht", ".html", ".htm", ".svg", ".smil")
_MAX_MIMETYPE_BYTES = 200


def _kind_of(archive: zipfile.ZipFile) -> PackageKind | None:
    try:
        with archive.open(MIMETYPE_ENTRY) as stream:
            declared = stream.read(_MAX_MIMETYPE_BYTES).decode("ascii").strip().lower()
    except (KeyError, zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, UnicodeDecodeError):
        return None
    return PACKAGE_MIME_TYPES.get(declared)


def package_kind(data: bytes) -> PackageKind | None:
    """Which package `data` is ("odt", "ods", "odp", "epub"), or None. Never raises; no size checks."""
    archive = open_zip(data)
    if archive is None:
        return None
    with archive:
        return _kind_of(archive)


def is_package_kind(data: bytes, kind: PackageKind) -> bool:
    """The content check of a package format; refuses zip bombs (`RagError`) like the Office check."""
    archive = open_zip(data)
    if archive is None:
        return False
    with archive:
        check_zip_limits(archive, len(data))
        return _kind_of(archive) == kind


def check_package(data: bytes, kind: PackageKind) -> None:
    """Everything to check before a parser opens `data` as `kind`; raises `RagError` if unsafe."""
    archive = open_zip(data)
    if archive is None:
        raise damaged()
    with archive:
        check_zip_limits(archive, len(data))
        if _kind_of(archive) != kind:
            raise refuse(Failure.INVALID_PACKAGE, f"The file is not a valid {kind.upper()} document.")
        for info in archive.infolist():
            if not info.is_dir():
                is_xml = info.filename.lower().endswith(_XML_SUFFIXES)
                scan_entry(data, info, is_xml=is_xml, allow_doctype=kind == "epub")
