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
from mcp_front.render import Renderer, render_json, render_query
from protocol import ErrorCode, MethodSpec, RagError
from protocol import methods as m
from protocol.schema import Schema

INGEST_TIMEOUT = 600.0
MAX_ERROR_DETAIL = 300


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
            "Add a document to your knowledge base: PDF, Markdown, plain text, HTML, Word (DOCX), PowerPoint "
            "(PPTX), Excel (XLSX), CSV, JSON or source code, sent as base64 with its filename (e.g. report.pdf) "
            "and MIME type. Identical content is not indexed twice; a new version "
            "under the same filename replaces the old one. Returns the document id, pages, words, chunks, "
            "entities and relations; if indexing takes longer than about 45 s it returns a track_id to poll "
            "with lightrag_get_status."
        ),
        method=m.UPLOAD,
        read_only=False,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_insert_text",
        title="Insert text",
        description=(
            "Index a piece of text (notes, a pasted article, a transcript) under an optional title; new text "
            "under the same title replaces the old. Use upload_to_lightrag for files."
        ),
        method=m.INSERT_TEXT,
        read_only=False,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_get_status",
        title="Indexing status",
        description=(
            "Follow indexing: the state (pending, processing, processed, failed) of the documents of a "
            "track_id or of document ids, with chunks, entities, relations and errors, plus the knowledge "
            "base's counts and the pipeline's progress."
        ),
        method=m.GET_STATUS,
        read_only=True,
        idempotent=True,
        aliases=("lightrag_get_indexing_status",),
    ),
    Tool(
        name="lightrag_query",
        title="Query the knowledge base",
        description=(
            "Ask the knowledge base a question. Modes: mix (default, graph + vectors), naive, local, global, "
            "hybrid, bypass. Returns an answer when an LLM is configured, otherwise the most relevant passages "
            "to answer from; always with sources (filename, document id, chunk, relevance)."
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
        description=(
            "Like lightrag_query, but the answer is streamed as progress notifications while it is written; "
            "the final result holds the whole answer and its sources."
        ),
        method=m.STREAM_QUERY,
        read_only=True,
        idempotent=True,
        field_errors=(("mode", ErrorCode.INVALID_QUERY_MODE),),
        render=render_query,
    ),
    Tool(
        name="query_lightrag",
        title="Search documents",
        description=(
            "Search your uploaded documents and get the most relevant passages with their sources. The "
            "simple form of lightrag_query: a question and how many passages to return."
        ),
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
        description=(
            "Index a file or a whole folder (recursively) from the server's disk, e.g. a code repository or a "
            "documents folder. Only paths inside the allowed roots can be read (LIGHTRAG_MCP_ALLOWED_DIRS and "
            "the client's workspace folders). Re-running it is incremental: unchanged files are skipped, "
            "changed ones replaced, and with remove_missing, deleted files are removed from the knowledge base."
        ),
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
            "Index many items in one call: files on the server's disk, texts, or web pages by URL. Returns "
            "per-item results, or a batch_id to follow with lightrag_get_status when the batch takes longer "
            "than about 45 s; a batch survives server restarts and can be cancelled."
        ),
        method=m.BATCH_PROCESS,
        read_only=False,
        timeout=INGEST_TIMEOUT,
        uses_paths=True,
    ),
    Tool(
        name="lightrag_list_documents",
        title="List documents",
        description=(
            "List the documents in your knowledge base with their id, status, file type, size, chunk/entity/relation "
            "counts, errors and metadata. Filter by status, by text in the file name, title or metadata (e.g. a tag) "
            "and by upload date; sort and page through them (limit up to 200, then offset). Also returns counts by "
            "status and file type for the whole knowledge base. The ids are what lightrag_delete_documents takes."
        ),
        method=m.LIST_DOCUMENTS,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_delete_documents",
        title="Delete documents",
        description=(
            "Delete documents with their chunks and the entities and relations only they supported; shared ones are "
            "rebuilt from the remaining documents. Ids come from lightrag_list_documents or an upload result (a file "
            "name works too); cascade_delete=false instead refuses a document whose deletion would remove any entity "
            "or relation. "
            "create_backup writes a JSON backup first. Running indexing is waited for up to 30 s; a document still "
            "indexing after that fails with DELETION_FORBIDDEN (retryable). Reports deleted ids, each failed id with "
            "its reason, and cascade counts; the call itself fails only when every id failed for the same reason "
            "(e.g. DOCUMENT_NOT_FOUND)."
        ),
        method=m.DELETE_DOCUMENTS,
        read_only=False,
        destructive=True,
        idempotent=True,
        timeout=INGEST_TIMEOUT,
    ),
    Tool(
        name="lightrag_get_graph",
        title="Knowledge graph",
        description=(
            "Get the knowledge graph, or the part around an entity (entity / label_filter), an entity type, or "
            "the entities a question is about (query), as JSON or exported as GraphML, GEXF, Cypher or a Mermaid "
            "diagram, with statistics (node/edge types, density, clustering). Large exports are saved as a file "
            "on the server and summarised. lightrag_visualize_subgraph gives a chat-sized Mermaid diagram around "
            "an entity or a query's entities."
        ),
        method=m.GET_GRAPH,
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
        description=(
            "Find entities (people, organisations, concepts, code symbols, ...) in the knowledge graph by name: "
            "exact, fuzzy (typo-tolerant), semantic (by meaning) or regex; filter by entity type. Returns "
            "ranked matches with scores and why they matched."
        ),
        method=m.SEARCH_ENTITIES,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_entity_relationships",
        title="Entity and its relationships",
        description=(
            "Show an entity's details (type, description, source documents) and its relationships: direction, "
            "relationship and target-type filters, multi-hop up to max_depth, with counts by type and direction. "
            "Use the entity name from lightrag_search_entities. lightrag_get_entity shows one entity with its "
            "first relations."
        ),
        method=m.ENTITY_RELATIONSHIPS,
        read_only=True,
        idempotent=True,
        aliases=("lightrag_get_entity",),
        alias_defaults=(("lightrag_get_entity", (("limit", 20),)),),
    ),
    Tool(
        name="lightrag_update_entity",
        title="Edit an entity",
        description=(
            "Correct the knowledge graph: change an entity's description (replace or append) or type, set "
            "properties and labels, rename it, add or remove its relationships, create it if missing, or merge "
            "duplicate entities into it. Everything is checked first (unknown entity: ENTITY_NOT_FOUND; unknown "
            "relationship target: RELATIONSHIP_TARGET_NOT_FOUND; rename onto an existing name: UPDATE_CONFLICT "
            "unless allow_merge), then applied all-or-nothing; the result lists each field before and after. "
            "Queries see the change at once."
        ),
        method=m.UPDATE_ENTITY,
        read_only=False,
        destructive=True,
    ),
    Tool(
        name="lightrag_clear_cache",
        title="Clear caches",
        description=(
            "Clear the knowledge base's caches (llm, embedding, query, document, graph or all) and report their "
            "sizes before and after. Rarely needed: use it after changing the LLM, or to free space. The "
            "entity-extraction cache is always kept, because deleting documents rebuilds shared entities from it."
        ),
        method=m.CLEAR_CACHE,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_system_stats",
        title="Usage statistics",
        description=(
            "Usage statistics of your knowledge base over a time range (last_hour, last_day, last_week, "
            "last_month, all, or {start, end}): queries by mode, latency percentiles, cache hit rate, documents "
            "processed and failed, processing times, memory, storage usage, worker restarts, and the audit log "
            "of changes, newest first (stat_categories: [\"audit\"])."
        ),
        method=m.SYSTEM_STATS,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_health_check",
        title="Knowledge base health",
        description=(
            "Check whether the LightRAG knowledge base is up: overall status (healthy / degraded / "
            "unhealthy), the worker process (state, pid, uptime, restarts, memory, ping latency); "
            "include_detailed adds configuration, memory and your knowledge base's counts; "
            "check_dependencies times each storage, the embedding model and the LLM endpoint. Call it when "
            "another tool fails with SERVICE_UNAVAILABLE or WORKER_RESTARTED, or before a long ingestion."
        ),
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
        if profile == "default":
            return [tool.name for tool in self._tools if tool.in_default]
        if profile == "all":
            return [name for tool in self._tools for name in (tool.name, *tool.aliases)]
        names = list(PROFILE_TOOLS.get(profile, ())) or [part.strip() for part in profile.split(",") if part.strip()]
        unknown = [name for name in names if name not in self._by_name]
        if unknown:
            raise ValueError(
                f"LIGHTRAG_MCP_TOOLS names unknown tools: {', '.join(unknown)} "
                f"(profiles: {', '.join(PROFILES)}, or a comma list of tool names)"
            )
        return names

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    def lookup(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @staticmethod
    def arguments_for(tool: Tool, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments with the defaults its alias implies (explicit arguments win)."""
        implied = dict(dict(tool.alias_defaults).get(name, ()))
        return {**implied, **arguments} if implied else arguments

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
