"""Small builders for the JSON Schemas of the method catalogue.

Every string, array and number gets a bound (SPEC §4), and every object is closed
(`additionalProperties: false`) unless it says otherwise, so a schema cannot forget them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

Schema = dict[str, Any]

#: Where a schema keeps a default it does not advertise (false, 0, "", a count's default, a
#: twin tool's): the validator and the worker fill it like any other, `advertised` drops it.
QUIET_DEFAULT = "x-default"


@dataclass(frozen=True)
class MethodSpec:
    """One worker method, declared once: what the front and the worker both read.

    For a tool method `params_schema` (advertised as the MCP tool's `inputSchema`) carries every
    argument's real default, and `result_schema` is its `outputSchema`.  Result schemas stay
    open (no `required`, extra members allowed): clients validate error results against them too.
    `mutates`: the call changes the knowledge base (not read-only; the worker audits it).
    `timeout`: seconds the front waits for an answer; None is LIGHTRAG_MCP_CALL_TIMEOUT.
    """

    name: str
    params_schema: Schema
    result_schema: Schema
    tool_method: bool = True
    debug_only: bool = False
    mutates: bool = False
    timeout: float | None = None

    @cached_property
    def input_schema(self) -> Schema:
        """`params_schema` as `tools/list` shows it: without the defaults it keeps quiet."""
        return advertised(self.params_schema)

    def with_defaults(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated `arguments` with every absent argument's default filled in."""
        return fill_defaults(arguments, self.params_schema)


def _described(schema: Schema, description: str | None, default: Any = None, *, quiet: bool = False) -> Schema:
    if description:
        schema["description"] = description
    if default is not None:
        # false, 0 and "" go without saying for an optional argument: only other defaults are advertised.
        schema[QUIET_DEFAULT if quiet or default in (False, 0, "") else "default"] = default
    return schema


def default_of(schema: Schema) -> Any:
    """The schema's default, advertised or not (None: it has none)."""
    return schema.get("default", schema.get(QUIET_DEFAULT))


def fill_defaults(arguments: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """A copy of `arguments` with the defaults of `schema` filled in, at every depth.

    An absent optional object whose members have defaults (`graph_options`) is filled in too, so
    a handler reads `args["graph_options"]["min_degree"]` whatever the caller sent."""
    filled = dict(arguments)
    for name, child in (schema.get("properties") or {}).items():
        if name in filled:
            filled[name] = _filled_value(filled[name], child)
        elif default_of(child) is not None:
            filled[name] = copy.deepcopy(default_of(child))
        elif _has_defaults(child):
            filled[name] = fill_defaults({}, child)
    return filled


def _filled_value(value: Any, schema: Schema) -> Any:
    if isinstance(value, dict) and "properties" in schema:
        return fill_defaults(value, schema)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict) and _has_defaults(items):
        return [_filled_value(item, items) for item in value]
    return value


def _has_defaults(schema: Schema) -> bool:
    return any(
        default_of(child) is not None or _has_defaults(child) for child in (schema.get("properties") or {}).values()
    )


def advertised(schema: Schema) -> Schema:
    """The schema without its quiet defaults, at every depth (what a client is shown)."""
    shown: Schema = {}
    for key, value in schema.items():
        if key == QUIET_DEFAULT:
            continue
        if isinstance(value, dict):
            shown[key] = advertised(value)
        elif isinstance(value, list):
            shown[key] = [advertised(item) if isinstance(item, dict) else item for item in value]
        else:
            shown[key] = value
    return shown


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
    """An integer; its `default` is filled in but not advertised (a count's default is rarely
    what an agent decides on, and every tool list pays for it)."""
    return _described({"type": "integer", "minimum": minimum, "maximum": maximum}, description, default, quiet=True)


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
    """The schema without descriptions and with its defaults kept quiet, for a tool whose twin
    already explains the same arguments (the same text twice in a tool list costs every turn)."""
    stripped: Schema = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key == "default":
            stripped[QUIET_DEFAULT] = value
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


def open_list(description: str, *, max_items: int) -> Schema:
    """A result's list of objects whose members `description` names (results only): clients
    check its bound, not each item — the Python MCP client validates a result item by item, which
    cost more than the rest of a query's transport for hundreds of entities and relations."""
    return _described({"type": "array", "maxItems": max_items}, description)
