"""Inflate every entry of an Office zip once, in bounded steps, before any parser reads it.

The central directory's sizes are what `check_zip_limits` judges, but they are only claims:
an entry may declare 1 KB and inflate to gigabytes.  `zipfile` trims its output to the
declared size, but `ZipFile.read()` — what python-docx calls for every part — first inflates
up to 2 GB in one call.  So each entry is inflated here from the raw bytes, at most 64 KB at
a time, and refused if it runs past its declared size, ends early or fails its CRC.  The
same pass reads each XML part's prolog and refuses a DOCTYPE or entity declaration
(billion laughs, external entities): Office never writes one.
"""

from __future__ import annotations

import logging
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from xml.parsers import expat

from protocol.errors import RagError

from .failures import Failure, advice_for, refuse

logger = logging.getLogger(__name__)

_LOCAL_HEADER_SIZE = 30
_LOCAL_SIGNATURE = b"PK\x03\x04"
_IN_CHUNK = 64 * 1024
_OUT_CHUNK = 64 * 1024

DOCTYPE_MESSAGE = (
    "The file contains XML with a DOCTYPE or entity declarations, which office applications never write "
    "(it may be crafted to attack XML parsers); re-save the document and upload it again."
)
DAMAGED_MESSAGE = "The file is damaged (its zip structure cannot be read); re-save it and upload it again."


class _DoctypeFound(Exception):
    """Raised from an expat handler: the XML declares a DOCTYPE or entities."""


class _RootReached(Exception):
    """Raised from an expat handler: the prolog is over, nothing more to check."""


def _raise(exc: type[Exception]) -> Callable[..., None]:
    def handler(*_args: object) -> None:
        raise exc

    return handler


def _refuse_internal_subset(_name: str, _system: str | None, _public: str | None, has_internal_subset: int) -> None:
    if has_internal_subset:
        raise _DoctypeFound


def new_prolog_scanner(
    on_start: Callable[[str, dict[str, str]], None] | None = None, *, allow_doctype: bool = False
) -> expat.XMLParserType:
    """An expat parser that raises on a DOCTYPE or entity declaration, and at the root element unless `on_start`.

    `allow_doctype` lets a bare `<!DOCTYPE html PUBLIC …>` through (EPUB 2 XHTML has one):
    without an internal subset it declares no entities, and no parser here loads the DTD.
    """
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_internal_subset if allow_doctype else _raise(_DoctypeFound)
    parser.EntityDeclHandler = _raise(_DoctypeFound)
    parser.StartElementHandler = on_start or _raise(_RootReached)
    return parser


def parse_without_doctype(parser: expat.XMLParserType, xml: bytes) -> bool:
    """Parse all of `xml` with a `new_prolog_scanner(on_start)` parser; False if it has a DOCTYPE or is malformed."""
    try:
        parser.Parse(xml, True)
    except (_DoctypeFound, expat.ExpatError):
        return False
    return True


BOMB_ACTION = advice_for(Failure.ZIP_BOMB)


def zip_bomb(reason: str) -> RagError:
    """`RESOURCE_LIMIT_EXCEEDED` for an archive that expands beyond the bounds."""
    return refuse(Failure.ZIP_BOMB, f"The file was refused as a possible zip bomb: {reason}.")


def damaged(message: str = DAMAGED_MESSAGE) -> RagError:
    """`EXTRACTION_FAILED` for an archive that cannot be read (or, with `DOCTYPE_MESSAGE`, is unsafe XML)."""
    return refuse(Failure.UNSAFE_XML if message == DOCTYPE_MESSAGE else Failure.DAMAGED_ARCHIVE, message)


def _raw_bytes(data: bytes, info: zipfile.ZipInfo) -> memoryview:
    """The entry's stored (compressed) bytes, located through its local header."""
    start = info.header_offset
    header = data[start : start + _LOCAL_HEADER_SIZE]
    if len(header) < _LOCAL_HEADER_SIZE or header[:4] != _LOCAL_SIGNATURE:
        raise damaged()
    name_length, extra_length = struct.unpack_from("<HH", header, 26)
    begin = start + _LOCAL_HEADER_SIZE + name_length + extra_length
    raw = memoryview(data)[begin : begin + info.compress_size]
    if len(raw) < info.compress_size:
        raise damaged()
    return raw


def _inflate(raw: memoryview, method: int) -> Iterator[bytes]:
    """The content of a stored or deflated entry, at most 64 KB per chunk whatever the ratio."""
    if method == zipfile.ZIP_STORED:
        for offset in range(0, len(raw), _OUT_CHUNK):
            yield bytes(raw[offset : offset + _OUT_CHUNK])
        return
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as zip stores it
    for offset in range(0, len(raw), _IN_CHUNK):
        pending: bytes | memoryview = raw[offset : offset + _IN_CHUNK]
        while pending and not inflater.eof:
            yield inflater.decompress(pending, _OUT_CHUNK)
            pending = inflater.unconsumed_tail
        if inflater.eof:
            return
    if not inflater.eof:
        raise zlib.error("truncated deflate stream")


def scan_entry(data: bytes, info: zipfile.ZipInfo, *, is_xml: bool, allow_doctype: bool = False) -> None:
    """Inflate one entry; refuse it if it outgrows its declared size, is damaged, or (XML) has a DOCTYPE.

    `allow_doctype` accepts a DOCTYPE without internal subset (see `new_prolog_scanner`).
    """
    scanner = new_prolog_scanner(allow_doctype=allow_doctype) if is_xml else None
    produced = 0
    crc = 0
    try:
        for chunk in _inflate(_raw_bytes(data, info), info.compress_type):
            produced += len(chunk)
            if produced > info.file_size:
                raise zip_bomb("an entry inflates to more than the size it declares")
            crc = zlib.crc32(chunk, crc)
            if scanner is not None:
                try:
                    scanner.Parse(chunk, False)
                except _RootReached:
                    scanner = None  # a DOCTYPE can only come before the root element
    except _DoctypeFound:
        logger.warning("ooxml: part %r declares a DOCTYPE or entities; refused", info.filename)
        raise damaged(DOCTYPE_MESSAGE) from None
    except expat.ExpatError:  # OOXML parts are UTF-8 or UTF-16 XML; anything else is crafted or broken
        logger.info("ooxml: part %r has an unreadable XML prolog", info.filename, exc_info=True)
        raise damaged() from None
    except zlib.error:
        logger.info("ooxml: part %r does not inflate", info.filename, exc_info=True)
        raise damaged() from None
    if produced != info.file_size or crc != info.CRC:
        logger.info("ooxml: part %r has the wrong size or CRC", info.filename)
        raise damaged()
