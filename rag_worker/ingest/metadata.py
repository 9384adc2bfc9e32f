"""User metadata sent with a document: a small flat object of strings, numbers and string lists.

It is stored with the document and comes back in listings and query sources, so it is kept
flat and bounded, and free of characters that some storage backends refuse (NUL in
PostgreSQL text).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from protocol.errors import ErrorCode, RagError

MAX_KEYS = 32
MAX_STRING_CHARS = 2_000
MAX_LIST_ITEMS = 50
MAX_LIST_ITEM_CHARS = 200
# Integers beyond 2**53 lose precision in JavaScript clients (LibreChat, the TS SDK).
MAX_SAFE_INTEGER = 2**53 - 1

_KEY_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# Tab, newline and carriage return are ordinary in descriptions; other C0 controls are not.
_FORBIDDEN_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _invalid(message: str) -> RagError:
    return RagError(ErrorCode.INVALID_METADATA, message)


def _show_key(key: str) -> str:
    """A key quoted for a message, cut short so a hostile key can't flood it."""
    return repr(key if len(key) <= 64 else key[:61] + "...")


def _clean_string(key: str, value: str, limit: int, what: str) -> str:
    if len(value) > limit:
        raise _invalid(f"metadata {_show_key(key)}: {what} has {len(value)} characters; at most {limit} are allowed.")
    if _FORBIDDEN_CONTROLS.search(value):
        raise _invalid(f"metadata {_show_key(key)}: {what} contains control characters; remove them.")
    return unicodedata.normalize("NFC", value)


def _clean_list(key: str, value: list[Any]) -> list[str]:
    if len(value) > MAX_LIST_ITEMS:
        raise _invalid(f"metadata {_show_key(key)} has {len(value)} items; at most {MAX_LIST_ITEMS} are allowed.")
    items: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise _invalid(f"metadata {_show_key(key)} must be a list of strings; it contains {_type_name(item)}.")
        text = _clean_string(key, item, MAX_LIST_ITEM_CHARS, "an item").strip()
        if text and text not in items:  # a tag list is a set; blanks and repeats carry nothing
            items.append(text)
    return items


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a value of type {type(value).__name__}"


def _clean_value(key: str, value: Any) -> Any:
    # bool before int: True is an int in Python, but it should stay a boolean.
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise _invalid(f"metadata {_show_key(key)}: the number is too large (at most ±{MAX_SAFE_INTEGER}).")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(f"metadata {_show_key(key)}: numbers must be finite (no NaN or Infinity).")
        return value
    if isinstance(value, str):
        return _clean_string(key, value, MAX_STRING_CHARS, "the value")
    if isinstance(value, list | tuple):
        return _clean_list(key, list(value))
    if isinstance(value, dict):
        raise _invalid(f"metadata {_show_key(key)} is a nested object; metadata must be flat (no objects inside).")
    raise _invalid(
        f"metadata {_show_key(key)} is {_type_name(value)}; use a string, a number, true/false or a list of strings."
    )


def validate_metadata(meta: dict[str, Any] | None) -> dict[str, Any]:
    """Check user metadata and return a normalised copy (NFC strings, de-duplicated string lists).

    Rules: a flat object of at most 32 keys matching `[A-Za-z0-9_.-]{1,64}`; values are
    strings (≤ 2,000 characters), finite numbers, booleans, or lists of at most 50 strings
    (≤ 200 characters each); `tags` must be a list of strings.  `None` means no metadata.
    Raises `INVALID_METADATA` naming the offending key.
    """
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise _invalid(f"metadata must be an object of key/value pairs, not {_type_name(meta)}.")
    if len(meta) > MAX_KEYS:
        raise _invalid(f"metadata has {len(meta)} keys; at most {MAX_KEYS} are allowed.")
    clean: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            shown = _show_key(key) if isinstance(key, str) else repr(type(key).__name__)
            raise _invalid(f"metadata key {shown} is not valid: use 1-64 letters, digits, '_', '.' or '-'.")
        if key == "tags" and not isinstance(value, list | tuple):
            raise _invalid(f"metadata 'tags' must be a list of strings, not {_type_name(value)}.")
        clean[key] = _clean_value(key, value)
    return clean
