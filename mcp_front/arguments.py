"""Tool arguments as a call sends them: what clients send for "not given" dropped, strings
coerced where the schema wants numbers or booleans, and schema violations described so the
model can fix its call."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from protocol.schema import Schema

if TYPE_CHECKING:
    import jsonschema

MAX_ERROR_DETAIL = 300


# LibreChat's Gemini/Vertex path gives a tool without arguments the schema {input: string} and
# sends `{"input": ""}`: an undeclared `input` with nothing in it means no argument at all.
_STRAY_INPUT = "input"


def drop_not_given(value: Any, schema: Schema) -> Any:
    """`value` without the members that only say "not given", at any depth of an object.

    `null` for an optional member the schema does not allow to be null (older LibreChat and
    several agent frameworks make every optional field nullable and send null), and an empty
    `input` the schema does not declare (above). A required member keeps its null: validation
    names it. One rule for every tool, driven by the schema.
    """
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [drop_not_given(item, schema["items"]) for item in value]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    kept: dict[str, Any] = {}
    for key, item in value.items():
        declared = properties.get(key)
        if item is None and key not in required and not (declared is not None and "null" in _types_of(declared)):
            continue
        if key == _STRAY_INPUT and declared is None and item in ("", None):
            continue
        kept[key] = drop_not_given(item, declared) if isinstance(declared, dict) else item
    return kept


_INTEGER_TEXT = re.compile(r"-?\d{1,18}")
_NUMBER_TEXT = re.compile(r"-?\d{1,18}(\.\d{1,18})?([eE][-+]?\d{1,3})?")


def coerce_strings(value: Any, schema: Schema) -> Any:
    """`value` with strings converted where the schema wants a number, integer or boolean.

    Some clients send every argument as a string (the MCP Inspector CLI's `--tool-arg
    max_results=2`). "2" → 2 and "0.5" → 0.5 where the schema takes them, "true"/"false" →
    booleans; anything else ("2.5" for an integer, "abc") is left for validation to refuse.
    """
    if isinstance(value, dict | list) and "type" not in schema:  # an anyOf/oneOf: the branch of this kind
        kind = "object" if isinstance(value, dict) else "array"
        schema = next((b for b in (*schema.get("anyOf", ()), *schema.get("oneOf", ())) if kind in _types_of(b)), schema)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        return {
            key: coerce_strings(item, properties.get(key) or (extra if isinstance(extra, dict) else {}))
            for key, item in value.items()
        }
    if isinstance(value, list):
        items = schema.get("items")
        return [coerce_strings(item, items) for item in value] if isinstance(items, dict) else value
    if not isinstance(value, str):
        return value
    kinds = _types_of(schema)
    text = value.strip()
    if "string" in kinds:
        return value
    if kinds & {"integer", "number"} and _INTEGER_TEXT.fullmatch(text):
        return int(text)
    if "number" in kinds and _NUMBER_TEXT.fullmatch(text):
        return float(text)
    if "boolean" in kinds and text.lower() in {"true", "false"}:
        return text.lower() == "true"
    return value


def _types_of(schema: Schema) -> set[str]:
    """The JSON types a schema (or any of its anyOf/oneOf branches) accepts."""
    kind = schema.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind or ())
    for branch in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        kinds |= _types_of(branch)
    return kinds


def non_finite(arguments: Any) -> list[str]:
    """Where NaN/Infinity sit (raw JSON-RPC can carry them; schema bounds let NaN through)."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("(arguments)", arguments)]
    while stack and len(found) < 5:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(where)
        elif isinstance(value, dict | list):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend(
                (_short(key) if where == "(arguments)" else f"{where}/{_short(key)}", child) for key, child in items
            )
    return found


def _short(part: Any, limit: int = 64) -> str:
    """A field name as an error message quotes it (names can be any length)."""
    text = str(part)
    return text if len(text) <= limit else text[:limit] + "…"


def describe(error: jsonschema.ValidationError) -> str:
    """One validation error as a short line naming the field."""
    where = "/".join(_short(part) for part in error.absolute_path) or "(arguments)"
    validator = error.validator
    if validator == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        named = ", ".join(_short(name) for name in extra[:10]) + (
            f" and {len(extra) - 10} more" if len(extra) > 10 else ""
        )
        return f"{where}: unknown field(s) {named}; allowed: {', '.join(allowed) or 'none'}"
    if validator == "required":
        return f"{where}: {error.message}"
    if validator == "minLength" and error.validator_value == 1:
        return f"{where}: must not be empty"
    if validator in {"maxLength", "minLength", "maxItems", "minItems", "maximum", "minimum"}:
        return f"{where}: must satisfy {validator} {error.validator_value}"
    if validator == "enum":
        return f"{where}: must be one of {', '.join(map(str, error.validator_value))}"
    if validator == "type":
        return f"{where}: must be of type {error.validator_value}"
    # Other messages may quote the (possibly huge) value: bound them.
    text = error.message
    return f"{where}: {text[:MAX_ERROR_DETAIL]}{'…' if len(text) > MAX_ERROR_DETAIL else ''}"
