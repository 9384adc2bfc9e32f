"""Content checks by magic numbers and text sniffing, for `detection.detect_format`."""

from __future__ import annotations

from .text import decode_text

PDF_MAGIC = b"%PDF-"
# The PDF spec lets readers accept a header within the first 1024 bytes (junk before it).
PDF_HEADER_WINDOW = 1024


def looks_like_pdf(data: bytes) -> bool:
    """True if a `%PDF-` header starts within the first 1024 bytes."""
    return data.find(PDF_MAGIC, 0, PDF_HEADER_WINDOW + len(PDF_MAGIC)) >= 0


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
TIFF_MAGICS = (b"II*\x00", b"MM\x00*")  # little- and big-endian


def looks_like_png(data: bytes) -> bool:
    """True for the PNG signature."""
    return data.startswith(PNG_MAGIC)


def looks_like_jpeg(data: bytes) -> bool:
    """True for a JPEG start-of-image marker."""
    return data.startswith(JPEG_MAGIC)


def looks_like_tiff(data: bytes) -> bool:
    """True for a TIFF header, either byte order."""
    return data.startswith(TIFF_MAGICS)


# Magic numbers of common files, to say what the content *is* in messages.
OTHER_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (such as DOCX, XLSX or PPTX)"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    # Also what a password-protected DOCX/XLSX/PPTX is: an encrypted package in a compound file.
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office file (DOC, XLS or PPT) or a password-protected one"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"{\\rtf", "an RTF document"),
)


def _as_text(data: bytes) -> str | None:
    """`data` decoded as text, or None for a known binary format or bytes that are not text."""
    if data.startswith(PDF_MAGIC) or any(data.startswith(sig) for sig, _ in OTHER_SIGNATURES):
        return None
    return decode_text(data)


def looks_like_text(data: bytes) -> bool:
    """True for UTF-8 (BOM optional) or BOM-marked UTF-16 without NULs, that is no known binary format."""
    return _as_text(data) is not None


def looks_like_json(data: bytes) -> bool:
    """Text whose first non-blank character opens an object or an array."""
    text = _as_text(data)
    return text is not None and text.lstrip()[:1] in ("{", "[")
