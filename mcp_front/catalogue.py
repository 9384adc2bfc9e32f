"""The tool catalogue: declared once (`mcp_front.tools.TOOLS`, over the method specs of
`protocol.methods`), it drives `tools/list`, argument validation and defaults, routing to
worker methods, timeouts, aliases and the README's tool table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import mcp.types as types

from mcp_front.arguments import coerce_strings, describe, drop_not_given, non_finite
from mcp_front.tools import PROFILE_TOOLS, PROFILES, TOOLS, Tool
from protocol import ErrorCode, RagError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["PROFILES", "PROFILE_TOOLS", "TOOLS", "Catalogue", "Tool", "coerce_strings", "tools_markdown"]


class Catalogue:
    """Lookup, listing and validation over TOOLS for one configuration."""

    def __init__(self, tools: Iterable[Tool], *, profile: str = "default", debug: bool = False) -> None:
        self._tools = [tool for tool in tools if debug or not tool.debug_only]
        self._by_name: dict[str, Tool] = {}
        for tool in self._tools:
            for name in (tool.name, *tool.aliases):
                self._by_name[name] = tool
        self._advertised = self._advertised_names(profile)
        self._validators: dict[str, Validator] = {}

    def _advertised_names(self, profile: str) -> list[str]:
        """A profile's tools; a comma list may mix profiles and tool names (`librechat,lightrag_insert_file`)."""
        names: list[str] = []
        for part in (part.strip() for part in profile.split(",")):
            expanded = self._profile(part) if part in PROFILES else [part] if part else []
            names.extend(name for name in expanded if name not in names)
        unknown = [name for name in names if name not in self._by_name]
        if unknown:
            raise ValueError(
                f"LIGHTRAG_MCP_TOOLS names unknown tools: {', '.join(unknown)} "
                f"(profiles: {', '.join(PROFILES)}, or a comma list of profiles and tool names)"
            )
        return names

    def _profile(self, profile: str) -> list[str]:
        if profile == "default":
            return [tool.name for tool in self._tools if tool.in_default]
        if profile == "all":
            return [name for tool in self._tools for name in (tool.name, *tool.aliases)]
        return list(PROFILE_TOOLS[profile])

    def advertised_tools(self) -> set[str]:
        """The canonical names of the tools `tools/list` advertises (under their own name or an alias)."""
        return {self._by_name[name].name for name in self._advertised}

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    def lookup(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @staticmethod
    def arguments_for(tool: Tool, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments as the tool takes them, before validation: "not given" spelled as
        null or a stray empty `input` dropped, the defaults its alias implies (explicit arguments
        win), and numbers and booleans sent as strings converted."""
        given = drop_not_given(arguments, tool.params_schema)
        implied = dict(dict(tool.alias_defaults).get(name, ()))
        coerced: dict[str, Any] = coerce_strings({**implied, **given} if implied else given, tool.method.params_schema)
        return coerced

    def list_tools(self) -> list[types.Tool]:
        return [self._by_name[name].to_mcp(name) for name in self._advertised]

    def _validator(self, tool: Tool) -> Validator:
        """The tool's argument validator, built at its first call: importing jsonschema costs
        ~50 ms and ~5 MB that `initialize` and `tools/list` never need."""
        validator = self._validators.get(tool.name)
        if validator is None:
            import jsonschema  # deferred for start-up time and memory (above)

            validator = self._validators[tool.name] = jsonschema.Draft202012Validator(tool.params_schema)
        return validator

    def validate(self, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments with the method's defaults filled in; INVALID_PARAMETER, with a message
        the model can fix its call from, when they break the schema."""
        errors = sorted(self._validator(tool).iter_errors(arguments), key=lambda e: list(e.path))
        problems = [describe(error) for error in errors[:5]]
        problems += [f"{where}: must be a finite number" for where in non_finite(arguments)][: 5 - len(problems)]
        if not problems:
            return tool.method.with_defaults(arguments)
        first_field = str(errors[0].absolute_path[0]) if errors and errors[0].absolute_path else ""
        raise RagError(
            dict(tool.field_errors).get(first_field, ErrorCode.INVALID_PARAMETER),
            f"Invalid arguments for {tool.name}: " + "; ".join(problems),
            suggested_action="Fix the arguments as described and call the tool again.",
            details={"problems": problems},
        )


def tools_markdown(tools: Iterable[Tool]) -> str:
    """The README's tool table, generated from the catalogue."""
    rows = ["| tool | aliases | what it does | read-only |", "|---|---|---|---|"]
    for tool in tools:
        if tool.debug_only:
            continue
        aliases = ", ".join(f"`{alias}`" for alias in tool.aliases) or "—"
        summary = re.split(r"(?<=[a-z)])\. (?=[A-Z])", tool.description)[0].rstrip(".") + "."
        rows.append(f"| `{tool.name}` | {aliases} | {summary} | {'yes' if tool.read_only else 'no'} |")
    return "\n".join(rows)
