"""The tool catalogue: declared once, it drives `tools/list`, argument validation, routing
to worker methods, timeouts, aliases and the README's tool table.

A tool's `inputSchema` is its worker method's `params_schema` and its `outputSchema`
the method's `result_schema` (both in `protocol.methods`), unless the front answers the
tool itself (health), so no schema is written twice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp.types as types

from mcp_front.health import HEALTH_OUTPUT_SCHEMA
from mcp_front.render import Renderer, compact_renderer, render_documents, render_json, render_query
from protocol import ErrorCode, MethodSpec, RagError
from protocol import methods as m
from protocol.schema import Schema

INGEST_TIMEOUT = 600.0
MAX_ERROR_DETAIL = 300

# Fields (at any depth) a tool's own message already states: its text does not repeat them.
SEARCH_STATED = ("query", "search_type", "total_matches", "pagination", "type", "degree", "score", "match_reason",
                 "highlighted", "filename", "search_fields", "index_used")
RELATIONSHIPS_STATED = ("pagination", "filters_applied", "by_type", "total", "name", "type", "degree", "path_length",
                        "path", "connected_entity", "source_files", "filename", "keywords")
GRAPH_STATED = ("statistics", "truncated", "truncation_reasons", "metadata", "label", "entity_id", "entity_type",
                "source_id", "truncate", "created_at", "file_path", "keywords")
DELETE_STATED = ("deleted_documents", "cascade_deletions", "chunks_deleted", "entities_deleted", "entities_rebuilt",
                 "relationships_deleted", "relationships_rebuilt", "filename")


@dataclass(frozen=True)
class Tool:
    """One MCP tool and how the front serves it."""

    name: str
    title: str
    description: str
    method: MethodSpec
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    aliases: tuple[str, ...] = ()
    alias_defaults: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()  # alias → arguments it implies
    timeout: float | None = None  # None: LIGHTRAG_MCP_CALL_TIMEOUT
    output_schema: Schema | None = None
    debug_only: bool = False
    uses_paths: bool = False  # reads the server's disk: the client's MCP roots are sent along
    in_default: bool = True  # False: callable and in named profiles; the default profile lists its twin
    field_errors: tuple[tuple[str, ErrorCode], ...] = ()  # argument → code when it fails validation
    render: Renderer = render_json

    @property
    def input_schema(self) -> Schema:
        return self.method.params_schema

    def to_mcp(self, name: str | None = None) -> types.Tool:
        return types.Tool(
            name=name or self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema or self.method.result_schema,
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
        )


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="upload_to_lightrag",
        title="Upload a document",
        description=(
            "Add a file (PDF or scan, image, Office or OpenDocument, EPUB, RTF, HTML, Markdown, text, code) as "
            "base64; returns its document id, or a track_id for lightrag_get_status if indexing runs long."
        ),
        method=m.UPLOAD,
        read_only=False,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_insert_text",
        title="Insert text",
        description="Index a text, e.g. notes or an article.",
        method=m.INSERT_TEXT,
        read_only=False,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_get_status",
        title="Indexing status",
        description="Indexing state of a track_id, batch_id or documents, with errors.",
        method=m.GET_STATUS,
        read_only=True,
        idempotent=True,
        aliases=("lightrag_get_indexing_status",),
    ),
    Tool(
        name="lightrag_query",
        title="Query the knowledge base",
        description=(
            "Answer a question from the knowledge base (with an LLM), else return the relevant passages with "
            "their sources."
        ),
        method=m.QUERY,
        read_only=True,
        idempotent=True,
        field_errors=(("mode", ErrorCode.INVALID_QUERY_MODE),),
        render=render_query,
    ),
    Tool(
        name="lightrag_stream_query",
        title="Query with streamed answer",
        description="lightrag_query with the answer streamed as progress.",
        method=m.STREAM_QUERY,
        read_only=True,
        idempotent=True,
        field_errors=(("mode", ErrorCode.INVALID_QUERY_MODE),),
        render=render_query,
    ),
    Tool(
        name="query_lightrag",
        title="Search documents",
        description="Search your documents: returns the most relevant passages, each with its source.",
        method=m.QUERY_SIMPLE,
        read_only=True,
        idempotent=True,
        aliases=("lightrag_search_code",),
        render=render_query,
        in_default=False,  # the simple form of lightrag_query: the librechat profile lists it
    ),
    Tool(
        name="lightrag_insert_file",
        title="Index files or a folder from disk",
        description="Index a file or folder on the server's disk; re-runs skip unchanged files.",
        method=m.INSERT_FILE,
        read_only=False,
        idempotent=True,
        aliases=("lightrag_index_codebase",),
        timeout=INGEST_TIMEOUT,
        uses_paths=True,
    ),
    Tool(
        name="lightrag_batch_process",
        title="Index a batch",
        description=(
            "Index many files, texts or URLs at once; long batches return a batch_id for lightrag_get_status."
        ),
        method=m.BATCH_PROCESS,
        read_only=False,
        timeout=INGEST_TIMEOUT,
        uses_paths=True,
    ),
    Tool(
        name="lightrag_list_documents",
        title="List documents",
        description="List documents (id, name, status, counts) with filters and paging.",
        method=m.LIST_DOCUMENTS,
        render=render_documents,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_delete_documents",
        title="Delete documents",
        description="Delete documents with their chunks and the entities and relations only they support.",
        method=m.DELETE_DOCUMENTS,
        render=compact_renderer(*DELETE_STATED),
        read_only=False,
        destructive=True,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_get_graph",
        title="Knowledge graph",
        description=(
            "The knowledge graph or the part around an entity, type or question, as JSON, GraphML, GEXF, Cypher "
            "or Mermaid."
        ),
        method=m.GET_GRAPH,
        render=compact_renderer(*GRAPH_STATED),
        read_only=True,
        idempotent=True,
        aliases=("lightrag_visualize_subgraph",),
        alias_defaults=(
            ("lightrag_visualize_subgraph", (("output_format", "mermaid"), ("max_nodes", 30), ("max_edges", 60))),
        ),
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_search_entities",
        title="Search entities",
        description="Find knowledge-graph entities by name (exact, fuzzy, regex) or meaning (semantic).",
        method=m.SEARCH_ENTITIES,
        render=compact_renderer(*SEARCH_STATED),
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_entity_relationships",
        title="Entity and its relationships",
        description="An entity and its relationships, up to max_depth hops.",
        method=m.ENTITY_RELATIONSHIPS,
        render=compact_renderer(*RELATIONSHIPS_STATED),
        read_only=True,
        idempotent=True,
        aliases=("lightrag_get_entity",),
        alias_defaults=(("lightrag_get_entity", (("limit", 20),)),),
    ),
    Tool(
        name="lightrag_update_entity",
        title="Edit an entity",
        description="Edit, rename, create or merge an entity and its relationships, all or nothing.",
        method=m.UPDATE_ENTITY,
        read_only=False,
        destructive=True,
    ),
    Tool(
        name="lightrag_clear_cache",
        title="Clear caches",
        description="Clear caches and report their sizes before and after.",
        method=m.CLEAR_CACHE,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_system_stats",
        title="Usage statistics",
        description="Usage statistics and the audit log of changes.",
        method=m.SYSTEM_STATS,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_health_check",
        title="Knowledge base health",
        description="Is the knowledge base up: worker, storages, embedding model, LLM.",
        method=m.HEALTH,
        read_only=True,
        idempotent=True,
        aliases=("health_check",),
        timeout=30.0,
        output_schema=HEALTH_OUTPUT_SCHEMA,
    ),
    Tool(
        name="lightrag_debug",
        title="Fault injection (tests only)",
        description="Test-only fault injection: sleep, burn CPU, print, crash or block the worker.",
        method=m.DEBUG,
        read_only=False,
        destructive=True,
        debug_only=True,
    ),
)

PROFILES: dict[str, str] = {
    "default": "one tool per job: every canonical tool except the simple query_lightrag, no aliases",
    "all": "every canonical tool and every alias",
    "librechat": "the seed-000 trio for small agents, plus status, list and delete",
}

# Named profiles that are fixed lists of tool names.
PROFILE_TOOLS: dict[str, tuple[str, ...]] = {
    "librechat": (
        "upload_to_lightrag",
        "query_lightrag",
        "health_check",
        "lightrag_get_status",
        "lightrag_list_documents",
        "lightrag_delete_documents",
    ),
}


class Catalogue:
    """Lookup, listing and validation over TOOLS for one configuration."""

    def __init__(self, tools: Iterable[Tool], *, profile: str = "default", debug: bool = False) -> None:
        self._tools = [tool for tool in tools if debug or not tool.debug_only]
        self._by_name: dict[str, Tool] = {}
        for tool in self._tools:
            for name in (tool.name, *tool.aliases):
                self._by_name[name] = tool
        self._advertised = self._advertised_names(profile)
        self._validators = {
            tool.name: jsonschema.Draft202012Validator(tool.input_schema) for tool in self._tools
        }

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

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    def lookup(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @staticmethod
    def arguments_for(tool: Tool, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments as the tool takes them, before validation: the defaults its alias
        implies (explicit arguments win), and numbers and booleans sent as strings converted."""
        implied = dict(dict(tool.alias_defaults).get(name, ()))
        return coerce_strings({**implied, **arguments} if implied else arguments, tool.input_schema)

    def list_tools(self) -> list[types.Tool]:
        return [self._by_name[name].to_mcp(name) for name in self._advertised]

    def validate(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """Raise INVALID_PARAMETER with a message the model can fix its call from."""
        errors = sorted(self._validators[tool.name].iter_errors(arguments), key=lambda e: list(e.path))
        problems = [_describe(error) for error in errors[:5]]
        problems += [f"{where}: must be a finite number" for where in _non_finite(arguments)][: 5 - len(problems)]
        if not problems:
            return
        first_field = str(errors[0].absolute_path[0]) if errors and errors[0].absolute_path else ""
        raise RagError(
            dict(tool.field_errors).get(first_field, ErrorCode.INVALID_PARAMETER),
            f"Invalid arguments for {tool.name}: " + "; ".join(problems),
            suggested_action="Fix the arguments as described and call the tool again.",
            details={"problems": problems},
        )


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


def _non_finite(arguments: Any) -> list[str]:
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


def _describe(error: jsonschema.ValidationError) -> str:
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
