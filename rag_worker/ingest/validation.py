"""Checks on an upload's envelope: its base64 `content` and its `filename`.

Both run before any extraction work and fail with a `RagError` whose message names the
problem for the calling agent; nothing from the upload is echoed back unescaped.
"""

from __future__ import annotations

import binascii
import re
import unicodedata

from protocol.errors import ErrorCode, RagError

BYTES_PER_MB = 1024 * 1024
MAX_FILENAME_BYTES = 255  # the common file-system limit (ext4, NTFS, APFS), in UTF-8 bytes

_WHITESPACE = " \t\r\n\f\v"
_WHITESPACE_BYTES = _WHITESPACE.encode("ascii")
# One translate pass maps the URL-safe alphabet onto the standard one.
_URLSAFE_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_BASE64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_DATA_URL_HEADER_MAX = 512  # "data:<mime>;<params>;base64," is short; don't scan 13 MB for a comma

# Bidirectional embeddings, overrides and isolates: "invoice" + U+202E + "fdp.exe" displays as
# "invoiceexe.pdf".
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Look-alike slashes that Windows' best-fit code-page mapping turns into real separators.
_SEPARATORS = frozenset("/\\\u2215\uff0f\uff3c")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def format_size(size: int, decimals: int = 1) -> str:
    """A byte count for messages: `10 MB`, `12.4 MB`, `300 KB`, `12 bytes`."""
    if size < 1024:
        return f"{size} bytes"
    unit, scale = ("MB", BYTES_PER_MB) if size >= BYTES_PER_MB else ("KB", 1024)
    text = f"{size / scale:.{decimals}f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def _too_large(size: int, max_bytes: int, *, approximate: bool = False) -> RagError:
    shown, limit = format_size(size), format_size(max_bytes)
    if shown == limit:  # 10.02 MB over a 10 MB limit must not read "10 MB; the limit is 10 MB"
        shown = format_size(size, decimals=3)
    return RagError(
        ErrorCode.FILE_TOO_LARGE,
        f"The file is {'about ' if approximate else ''}{shown}; the limit is {limit}.",
        details={"size_bytes": size, "max_bytes": max_bytes},
    )


def _invalid_base64(reason: str) -> RagError:
    return RagError(ErrorCode.INVALID_PARAMETER, f"content is not valid base64: {reason}.")


def _split_data_url(content: str) -> tuple[str | None, str]:
    """(MIME type or None, base64 payload); a plain base64 string is returned unchanged."""
    head = content[:_DATA_URL_HEADER_MAX]
    start = len(head) - len(head.lstrip())
    if head[start : start + 5].lower() != "data:":
        return None, content
    comma = content.find(",", start, start + _DATA_URL_HEADER_MAX)
    if comma < 0:
        raise RagError(ErrorCode.INVALID_PARAMETER, "content starts like a data URL but has no ',' before the data.")
    params = [p.strip().lower() for p in content[start + 5 : comma].split(";")]
    if params[-1] != "base64":
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            "content is a data URL without ';base64'; send the file's bytes base64-encoded.",
        )
    return (params[0] or None), content[comma + 1 :]


def data_url_mime(content: str) -> str | None:
    """The MIME type named by a `data:<mime>;base64,` prefix, or None (no prefix, or none named)."""
    if not isinstance(content, str):
        return None
    try:
        return _split_data_url(content)[0]
    except RagError:
        return None


def _describe_base64_error(payload: str | bytes) -> str:
    """Why `payload` is not base64, for the message (only called on the error path)."""
    raw = payload.encode("ascii") if isinstance(payload, str) else payload
    stray = raw.translate(None, _BASE64_BYTES)
    if stray:
        return f"character {_show_char(chr(stray[0]))} is not in the base64 alphabet"
    return "the '=' padding is wrong or the data is cut short"


def decode_base64(content: str, max_bytes: int) -> bytes:
    """Decode an upload's base64 `content`, refusing anything malformed or over `max_bytes`.

    Accepts the standard and URL-safe alphabets (not mixed), whitespace and line breaks
    anywhere, missing trailing padding, and a `data:<mime>;base64,` prefix.  The size is
    checked from the encoded length before decoding, so an oversized upload costs no decode.
    Raises `INVALID_PARAMETER` for malformed input and `FILE_TOO_LARGE` over the limit.
    """
    if not isinstance(content, str):
        raise RagError(ErrorCode.INVALID_PARAMETER, "content must be a base64-encoded string.")
    _, payload = _split_data_url(content)

    # A cheap bound before any copy: even if half of it were line breaks it would be too large.
    if len(payload) // 2 * 3 // 4 > max_bytes:
        raise _too_large(len(payload) * 3 // 4, max_bytes, approximate=True)

    has_whitespace = any(ch in payload for ch in _WHITESPACE)
    urlsafe = "-" in payload or "_" in payload
    data: str | bytes = payload
    if has_whitespace or urlsafe:
        if urlsafe and ("+" in payload or "/" in payload):
            raise _invalid_base64("it mixes the standard (+/) and URL-safe (-_) alphabets")
        try:
            raw = payload.encode("ascii")
        except UnicodeEncodeError as exc:
            raise _invalid_base64(_describe_char(payload, exc.start)) from None
        # bytes.translate is a C loop; str.translate would be ~50x slower on 13 MB.
        data = raw.translate(_URLSAFE_TO_STANDARD if urlsafe else None, _WHITESPACE_BYTES)
    elif not payload.isascii():
        raise _invalid_base64(_describe_char(payload, next(i for i, ch in enumerate(payload) if not ch.isascii())))

    padding = _trailing_padding(data[-4:])
    # The exact size, still before decoding.
    size = _decoded_size(len(data), padding)
    if size > max_bytes:
        raise _too_large(size, max_bytes)
    # Unpadded base64 (usual for URL-safe) is unambiguous; only 1 char past a quantum is not.
    missing = 4 - len(data) % 4 if padding == 0 and len(data) % 4 in (2, 3) else 0
    if missing:
        data = data + "=" * missing if isinstance(data, str) else data + b"=" * missing
    try:
        decoded = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise _invalid_base64(_describe_base64_error(data)) from None
    if len(decoded) > max_bytes:  # the check above is exact; this one guards its arithmetic
        raise _too_large(len(decoded), max_bytes)
    return decoded


def _describe_char(payload: str, position: int) -> str:
    return f"character {_show_char(payload[position])} at position {position} is not in the base64 alphabet"


def _show_char(ch: str) -> str:
    """`'!' (U+0021)` for printable characters, `U+0000` for the rest (safe to put in a message)."""
    return f"{ch!r} (U+{ord(ch):04X})" if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"


def _trailing_padding(tail: str | bytes) -> int:
    """How many '=' end `tail` (whitespace already removed)."""
    text = tail if isinstance(tail, str) else tail.decode("ascii", "replace")
    return len(text) - len(text.rstrip("="))


def _decoded_size(chars: int, padding: int) -> int:
    """Bytes that `chars` base64 characters (whitespace excluded, padding included) decode to."""
    return chars // 4 * 3 + max(chars % 4 - 1, 0) - padding


def _invalid_filename(reason: str) -> RagError:
    return RagError(ErrorCode.INVALID_PARAMETER, f"filename {reason}.")


def sanitize_filename(name: str) -> str:
    """Return `name` NFC-normalised and stripped, or raise `INVALID_PARAMETER` saying why not.

    A filename must be a bare name: no folders (`/`, `\\`, look-alike slashes), no drive
    letter, not `.`/`..`, no control or bidirectional-override characters, and at most
    255 bytes in UTF-8.
    """
    if not isinstance(name, str):
        raise _invalid_filename("must be a string")
    clean = unicodedata.normalize("NFC", name).strip()
    if not clean:
        raise _invalid_filename("is empty")
    if any(ch in _BIDI_CONTROLS for ch in clean):
        raise _invalid_filename(
            "contains bidirectional override characters (they can disguise the real extension); remove them"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in clean):
        raise _invalid_filename("contains control characters (such as NUL, tab or newline); remove them")
    if any(ch in _SEPARATORS for ch in clean):
        raise _invalid_filename("must be a bare file name without folders ('/' or '\\'); send only the last part")
    if _DRIVE_RE.match(clean):
        raise _invalid_filename("must not start with a drive letter (such as 'C:'); send only the file name")
    if set(clean) == {"."}:
        raise _invalid_filename("must not be '.' or '..'")
    size = len(clean.encode("utf-8"))
    if size > MAX_FILENAME_BYTES:
        raise _invalid_filename(f"is too long ({size} bytes in UTF-8; at most {MAX_FILENAME_BYTES})")
    return clean
