"""The tool table: each MCP tool as a row over its worker method's spec.

A `Tool` adds only presentation to its `MethodSpec` (title, description, aliases, how its result
reads, MCP annotations); what both sides of the pipe need (schemas with their defaults,
read-only or not, debug-only, timeout) comes from the spec.  A tool the front answers itself
(health, statistics) names its `front_handler`.  Every tool that works in one knowledge base
also takes the optional `workspace` argument (`mcp_front.knowledge_bases`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as types

from mcp_front.front_call import FrontHandler
from mcp_front.health import HEALTH_OUTPUT_SCHEMA, health_check, render_health
from mcp_front.knowledge_bases import LIST_TOOL, with_workspace
from mcp_front.render import (
    Renderer,
    compact_renderer,
    render_document_text,
    render_documents,
    render_ingest,
    render_json,
    render_query,
    render_status,
)
from mcp_front.stats import system_stats
from protocol import ErrorCode, MethodSpec
from protocol import methods as m
from protocol.schema import Schema

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
    destructive: bool = False
    idempotent: bool = False
    aliases: tuple[str, ...] = ()
    alias_defaults: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()  # alias → arguments it implies
    output_schema: Schema | None = None  # None: the method's result schema
    uses_paths: bool = False  # reads the server's disk: the client's MCP roots are sent along
    in_default: bool = True  # False: callable and in named profiles; the default profile lists its twin
    field_errors: tuple[tuple[str, ErrorCode], ...] = ()  # argument → code when it fails validation
    render: Renderer = render_json
    front_handler: FrontHandler | None = None  # the front answers the tool itself (no worker call needed)
    rate_limited: bool = True
    scoped: bool = True  # works in one knowledge base: takes the optional `workspace` argument
    searches_shared: bool = False  # a question: without `workspace` it also searches shared knowledge bases

    @property
    def read_only(self) -> bool:
        return not self.method.mutates

    @property
    def debug_only(self) -> bool:
        return self.method.debug_only

    @property
    def timeout(self) -> float | None:
        """Seconds to wait for the worker; None: LIGHTRAG_MCP_CALL_TIMEOUT."""
        return self.method.timeout

    @property
    def params_schema(self) -> Schema:
        """The arguments the front validates: the method's, plus `workspace` for a scoped tool."""
        return with_workspace(self.method.params_schema) if self.scoped else self.method.params_schema

    @property
    def input_schema(self) -> Schema:
        """The arguments as advertised (`params_schema` without its quiet defaults)."""
        return with_workspace(self.method.input_schema) if self.scoped else self.method.input_schema

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
        description=f"Index a file ({m.upload_formats_text()}).",
        method=m.UPLOAD,
        render=render_ingest,
        idempotent=True,
    ),
    Tool(
        name="lightrag_insert_text",
        title="Insert text",
        description="Index a text.",
        method=m.INSERT_TEXT,
        render=render_ingest,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_status",
        title="Indexing status",
        description="Indexing state of a track_id, batch_id or documents.",
        method=m.GET_STATUS,
        render=render_status,
        idempotent=True,
        aliases=("lightrag_get_indexing_status",),
    ),
    Tool(
        name="lightrag_query",
        title="Query the knowledge base",
        description=(
            "Answer from the knowledge base; without an LLM, the relevant passages with their sources."
        ),
        method=m.QUERY,
        idempotent=True,
        field_errors=(("mode", ErrorCode.INVALID_QUERY_MODE),),
        render=render_query,
        searches_shared=True,
    ),
    Tool(
        name="lightrag_stream_query",
        title="Query with streamed answer",
        description="lightrag_query with the answer streamed as progress.",
        method=m.STREAM_QUERY,
        idempotent=True,
        field_errors=(("mode", ErrorCode.INVALID_QUERY_MODE),),
        render=render_query,
        searches_shared=True,
        # The model reads the same result as lightrag_query's; only a client's progress display differs.
        in_default=False,
    ),
    Tool(
        name="query_lightrag",
        title="Search documents",
        description="Search your documents: the most relevant passages, each with its source.",
        method=m.QUERY_SIMPLE,
        idempotent=True,
        aliases=("lightrag_search_code",),
        render=render_query,
        searches_shared=True,
        in_default=False,  # the simple form of lightrag_query: the librechat profile lists it
    ),
    Tool(
        name="lightrag_insert_file",
        title="Index files or a folder from disk",
        description="Index a file or folder on the server's disk; re-runs skip unchanged files.",
        method=m.INSERT_FILE,
        render=render_ingest,
        idempotent=True,
        aliases=("lightrag_index_codebase",),
        uses_paths=True,
    ),
    Tool(
        name="lightrag_batch_process",
        title="Index a batch",
        description="Index many files, texts or URLs at once.",
        method=m.BATCH_PROCESS,
        uses_paths=True,
    ),
    Tool(
        name="lightrag_list_documents",
        title="List documents",
        description="List documents (id, name, status, counts), filtered, paged.",
        method=m.LIST_DOCUMENTS,
        render=render_documents,
        idempotent=True,
    ),
    Tool(
        name="lightrag_read_document",
        title="Read a document",
        description="A document's text by name, page by page, with its outline.",
        method=m.DOCUMENT_TEXT,
        render=render_document_text,
        idempotent=True,
    ),
    Tool(
        name=LIST_TOOL,
        title="List knowledge bases",
        description="Your knowledge bases: the workspace values tools take.",
        method=m.LIST_KNOWLEDGE_BASES,
        render=compact_renderer("knowledge_bases"),
        idempotent=True,
        scoped=False,  # lists the caller's knowledge bases, whichever one a call would name
    ),
    Tool(
        name="lightrag_delete_documents",
        title="Delete documents",
        description="Delete documents and the graph items only they support.",
        method=m.DELETE_DOCUMENTS,
        render=compact_renderer(*DELETE_STATED),
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_graph",
        title="Knowledge graph",
        description="The knowledge graph, or the part around an entity, type or question.",
        method=m.GET_GRAPH,
        render=compact_renderer(*GRAPH_STATED),
        idempotent=True,
        aliases=("lightrag_visualize_subgraph",),
        alias_defaults=(
            ("lightrag_visualize_subgraph", (("output_format", "mermaid"), ("max_nodes", 30), ("max_edges", 60))),
        ),
    ),
    Tool(
        name="lightrag_search_entities",
        title="Search entities",
        description="Find graph entities by name or meaning.",
        method=m.SEARCH_ENTITIES,
        render=compact_renderer(*SEARCH_STATED),
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_entity_relationships",
        title="Entity and its relationships",
        description="An entity and its relations, up to max_depth hops.",
        method=m.ENTITY_RELATIONSHIPS,
        render=compact_renderer(*RELATIONSHIPS_STATED),
        idempotent=True,
        aliases=("lightrag_get_entity",),
        alias_defaults=(("lightrag_get_entity", (("limit", 20),)),),
    ),
    Tool(
        name="lightrag_update_entity",
        title="Edit an entity",
        description="Edit, rename, create or merge an entity and its relations, all or nothing.",
        method=m.UPDATE_ENTITY,
        destructive=True,
    ),
    Tool(
        name="lightrag_clear_cache",
        title="Clear caches",
        description="Clear caches; sizes before and after.",
        method=m.CLEAR_CACHE,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="lightrag_get_system_stats",
        title="Usage statistics",
        description="Usage statistics and the audit log.",
        method=m.SYSTEM_STATS,
        front_handler=system_stats,
        idempotent=True,
    ),
    Tool(
        name="lightrag_health_check",
        title="Knowledge base health",
        description="Is the knowledge base up: worker, storages, embedding, LLM.",
        method=m.HEALTH,
        idempotent=True,
        aliases=("health_check",),
        output_schema=HEALTH_OUTPUT_SCHEMA,
        render=render_health,
        front_handler=health_check,
        rate_limited=False,  # stays answerable when the caller is rate-limited
    ),
    Tool(
        name="lightrag_debug",
        title="Fault injection (tests only)",
        description="Test-only fault injection: sleep, burn CPU, print, crash or block the worker.",
        method=m.DEBUG,
        destructive=True,
    ),
)

PROFILES: dict[str, str] = {
    "default": "one tool per job: every canonical tool except the simple query_lightrag, no aliases",
    "all": "every canonical tool and every alias",
    "librechat": "the seed-000 trio for small agents, plus status, list, delete and reading a document",
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
        "lightrag_read_document",
    ),
}
