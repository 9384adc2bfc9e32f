"""Small builders for the JSON Schemas of the method catalogue.

Every string, array and number gets a bound (SPEC §4), and every object is closed
(`additionalProperties: false`) unless it says otherwise, so a schema cannot forget them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]


@dataclass(frozen=True)
class MethodSpec:
    """One worker method: its name and the schemas of its arguments and result.

    For a tool method `params_schema` is also the MCP tool's `inputSchema` and
    `result_schema` its `outputSchema`.  Result schemas stay open (no `required`, extra
    members allowed): clients validate error results against them too.
    """

    name: str
    params_schema: Schema
    result_schema: Schema
    tool_method: bool = True
    debug_only: bool = False


def _described(schema: Schema, description: str | None, default: Any = None) -> Schema:
    if description:
        schema["description"] = description
    # false, 0 and "" go without saying for an optional argument: only other defaults are advertised.
    if default is not None and default not in (False, 0, ""):
        schema["default"] = default
    return schema


def _plain(value: float) -> float:
    """1000.0 as 1000: the same bound, fewer characters in every tool list."""
    return int(value) if float(value).is_integer() else value


def string(
    description: str | None = None,
    *,
    max_length: int = 1000,
    min_length: int = 0,
    enum: Iterable[str] | None = None,
    pattern: str | None = None,
    default: str | None = None,
) -> Schema:
    # An enum bounds the string by itself: a maxLength beside it is only weight in every tool list.
    schema: Schema = {"type": "string"} if enum is not None else {"type": "string", "maxLength": max_length}
    if min_length:
        schema["minLength"] = min_length
    if enum is not None:
        schema["enum"] = list(enum)
    if pattern is not None:
        schema["pattern"] = pattern
    return _described(schema, description, default)


def integer(
    description: str | None = None, *, minimum: int = 0, maximum: int, default: int | None = None
) -> Schema:
    """An integer; its `default` documents the handler's default in code only (not advertised:
    a count's default is rarely what an agent decides on, and every tool list pays for it)."""
    del default
    return _described({"type": "integer", "minimum": minimum, "maximum": maximum}, description)


def number(
    description: str | None = None,
    *,
    minimum: float = 0.0,
    maximum: float,
    default: float | None = None,
) -> Schema:
    return _described({"type": "number", "minimum": _plain(minimum), "maximum": _plain(maximum)}, description, default)


def boolean(description: str | None = None, *, default: bool | None = None) -> Schema:
    return _described({"type": "boolean"}, description, default)


def array(items: Schema, description: str | None = None, *, max_items: int, min_items: int = 0) -> Schema:
    schema: Schema = {"type": "array", "items": items, "maxItems": max_items}
    if min_items:
        schema["minItems"] = min_items
    return _described(schema, description)


def obj(
    properties: Mapping[str, Schema],
    description: str | None = None,
    *,
    required: Iterable[str] = (),
    closed: bool = True,
    max_properties: int | None = None,
) -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties)}
    required = list(required)
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    if max_properties is not None:
        schema["maxProperties"] = max_properties
    return _described(schema, description)


def without_descriptions(schema: Schema) -> Schema:
    """The schema without descriptions and defaults, for a tool whose twin already explains the
    same arguments (the same text twice in a tool list costs every turn)."""
    stripped: Schema = {}
    for key, value in schema.items():
        if key in {"description", "default"}:
            continue
        if key == "properties" and isinstance(value, dict):
            stripped[key] = {name: without_descriptions(child) for name, child in value.items()}
        elif isinstance(value, dict):
            stripped[key] = without_descriptions(value)
        else:
            stripped[key] = value
    return stripped


def nullable(schema: Schema) -> Schema:
    """Allow null as well (for result fields that may be unknown)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def open_object(description: str | None = None) -> Schema:
    """An object whose members are not fixed (for results only, never for inputs)."""
    return _described({"type": "object"}, description)
