"""The values filled into a PDF form: what a reader sees in the fields, which no text layer holds.

A form field's value lives in its widget annotation (`/V`, inherited from `/Parent` fields),
not in the page's content stream, so a text extractor returns the labels ("Name:") without
the answers.  Each page gets one `name: value` line per filled field it shows: text fields
and choices as written, check boxes and radio buttons by their chosen state.  Empty and
unchecked fields say nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from pypdf import PageObject
from pypdf.generic import ArrayObject, DictionaryObject, NameObject

logger = logging.getLogger(__name__)

_MAX_FIELD_DEPTH = 16  # /Parent chains are followed at most this far (a loop is no form)
#: Fields per page written out; a page of thousands of widgets is a grid, not a form.
MAX_FIELDS_PER_PAGE = 500
_MAX_VALUE_CHARS = 2000


def _inherited(widget: DictionaryObject, key: str) -> Any:
    """`key` of the widget or the nearest field above it."""
    node: Any = widget
    for _ in range(_MAX_FIELD_DEPTH):
        if not isinstance(node, DictionaryObject):
            return None
        if key in node:
            return node[key]
        node = node.get("/Parent")
        node = node.get_object() if node is not None else None
    return None


def _name(widget: DictionaryObject) -> str:
    """The field's user-facing name (`/TU`), else its full name (`parent.child`)."""
    tooltip = _inherited(widget, "/TU")
    if isinstance(tooltip, str) and tooltip.strip():
        return tooltip.strip()
    parts: list[str] = []
    node: Any = widget
    for _ in range(_MAX_FIELD_DEPTH):
        if not isinstance(node, DictionaryObject):
            break
        title = node.get("/T")
        if isinstance(title, str) and title:
            parts.append(title)
        parent = node.get("/Parent")
        node = parent.get_object() if parent is not None else None
    return ".".join(reversed(parts))


def _value(widget: DictionaryObject) -> str | None:
    """The shown value: text, the chosen options, or the checked state; None when empty or unchecked."""
    value = _inherited(widget, "/V")
    if isinstance(value, ArrayObject):
        value = ", ".join(str(item) for item in value if isinstance(item, str))
    if isinstance(value, NameObject):  # a check box or radio button: /Off, else the chosen state's name
        if value == "/Off":
            return None
        state = widget.get("/AS")
        if isinstance(state, NameObject) and state == "/Off":
            return None  # this widget is another button of the group than the chosen one
        return "Yes" if value in ("/Yes", "/On", "/1") else str(value)[1:]
    if isinstance(value, str):
        text = " ".join(value.split())
        return text[:_MAX_VALUE_CHARS] or None
    return None


def form_lines(page: PageObject) -> list[str]:
    """`name: value` for each filled form field shown on `page`, in the page's annotation order."""
    try:
        annotations = page.get("/Annots")
        annotations = annotations.get_object() if annotations is not None else None
        if not isinstance(annotations, ArrayObject):
            return []
        lines: list[str] = []
        seen: set[str] = set()
        for reference in annotations[:MAX_FIELDS_PER_PAGE]:
            widget = reference.get_object()
            if not isinstance(widget, DictionaryObject) or widget.get("/Subtype") != "/Widget":
                continue
            value = _value(widget)
            name = _name(widget)
            if value is None or name in seen:
                continue
            seen.add(name)
            lines.append(f"{name}: {value}" if name else value)
        return lines
    except Exception:  # a malformed form is the form's loss, not the page's
        logger.info("pdf: form fields unreadable", exc_info=True)
        return []
