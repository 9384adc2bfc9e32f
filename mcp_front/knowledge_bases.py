"""Named knowledge bases (SPEC §3): the optional `workspace` argument every tool takes.

Declared once here: the catalogue adds `WORKSPACE_PROPERTY` to each tool's advertised schema
and validator, and the front takes the argument out of the call (`take_knowledge_base`) before
anything else reads it; the worker never sees it.  The name resolves inside the caller's own
namespace (`in_knowledge_base`, through `identity.workspace_for`), so no name reaches another
caller's data.  Names are case-insensitive; the spelling a call uses travels in its context
so the worker can show it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_front.identity import Identity, workspace_for
from protocol import ErrorCode, RagError
from protocol.context import DEFAULT_KNOWLEDGE_BASE, MAX_KNOWLEDGE_BASE_NAME, name_problem
from protocol.schema import Schema, string

if TYPE_CHECKING:
    from mcp_front.tools import Tool

WORKSPACE_ARGUMENT = "workspace"
LIST_TOOL = "lightrag_list_knowledge_bases"

# The rules (`name_problem`) are not advertised as a `pattern`: in every tool of a profile that
# costs more than the tool-definition budget allows, and a refused name gets a message naming them.
WORKSPACE_PROPERTY: Schema = string("knowledge base", max_length=MAX_KNOWLEDGE_BASE_NAME)


def with_workspace(schema: Schema) -> Schema:
    """A tool's argument schema with the `workspace` property added."""
    return {**schema, "properties": {**schema.get("properties", {}), WORKSPACE_ARGUMENT: WORKSPACE_PROPERTY}}


def take_knowledge_base(tool: Tool, arguments: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(the knowledge base the call names or None for the default, the arguments without it).

    INVALID_PARAMETER, saying which rule the name breaks and what is allowed, for a bad name."""
    rest = dict(arguments)
    if not tool.scoped or WORKSPACE_ARGUMENT not in rest:
        return None, rest
    return knowledge_base_name(tool.name, rest.pop(WORKSPACE_ARGUMENT)), rest


def knowledge_base_name(tool_name: str, value: Any) -> str | None:
    """The knowledge base a `workspace` value names; None for the default (omitted, empty, "default")."""
    if value is None or value == "":
        return None
    problem = name_problem(value)
    if problem is not None:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"Invalid arguments for {tool_name}: workspace {problem}.",
            suggested_action=(
                "Use a name like project-a (letters, digits, _ and -), or omit workspace for your default "
                f"knowledge base; {LIST_TOOL} lists yours."
            ),
            details={"problems": [f"workspace {problem}"]},
        )
    return None if value.lower() == DEFAULT_KNOWLEDGE_BASE else value


def in_knowledge_base(identity: Identity, knowledge_base: str | None, default_workspace: str) -> Identity:
    """The caller's identity with its workspace moved into the named knowledge base (its own)."""
    if knowledge_base is None:
        return identity
    nested = workspace_for(identity.user_id, default_workspace, knowledge_base.lower())
    return dataclasses.replace(identity, workspace=nested)
