"""Knowledge-graph read methods: export, search, browse relationships."""

from __future__ import annotations

from protocol.methods.ingest import INGEST_TIMEOUT
from protocol.schema import MethodSpec, array, boolean, integer, nullable, number, obj, open_object, string

OUTPUT_FORMATS = ["json", "graphml", "gexf", "cypher", "mermaid"]
SEARCH_TYPES = ["fuzzy", "exact", "semantic", "regex"]
DIRECTIONS = ["both", "outgoing", "incoming"]
MAX_NODES = 1000
MAX_EDGES = 2000
MAX_REGEX_CHARS = 300

ENTITY_NAME = string("entity name", max_length=500, min_length=1)
TYPE_LIST = array(string(max_length=100), max_items=50)
COUNTS = obj({}, closed=False)  # name → count

SOURCE_DOCUMENT = obj(
    {"document_id": nullable(string(max_length=128)), "filename": string(max_length=1024)},
    closed=False,
)
SOURCE_DOCUMENTS = array(SOURCE_DOCUMENT, max_items=1000)

# -------------------------------------------------------------------------------------- graph/get
GRAPH_OPTIONS = obj(
    {
        "min_degree": integer(maximum=100_000, default=0),
        "entity_types": TYPE_LIST,
        "relationship_types": array(string(max_length=100), "keywords", max_items=50),
        "min_weight": number(maximum=1e9, default=0.0),
        "max_seed_entities": integer("with query", minimum=1, maximum=20, default=5),
        "mermaid_direction": string(enum=["LR", "TD"], default="LR"),
    }
)

GET_GRAPH_PARAMS = obj(
    {
        "label_filter": string("entity name or type; * for all", max_length=500),
        "entity": string(max_length=500),
        "query": string("center on this text's entities", max_length=2000),
        "max_depth": integer(minimum=1, maximum=5, default=2),
        "max_nodes": integer(minimum=1, maximum=MAX_NODES, default=200),
        "max_edges": integer(minimum=1, maximum=MAX_EDGES, default=500),
        "include_properties": boolean(default=True),
        "graph_options": GRAPH_OPTIONS,
        "output_format": string(enum=OUTPUT_FORMATS, default="json"),
    }
)

GRAPH_NODE = obj(
    {
        "id": string(max_length=1000),
        "label": string(max_length=1000),
        "type": string(max_length=200),
        "degree": integer(maximum=10**9),
        "properties": open_object(),
    },
    closed=False,
)
GRAPH_EDGE = obj(
    {
        "id": string(max_length=2100),
        "source": string(max_length=1000),
        "target": string(max_length=1000),
        "type": string(max_length=200),
        "keywords": array(string(max_length=1000), max_items=1000),
        "weight": nullable(number(minimum=-1e12, maximum=1e12)),
        "properties": open_object(),
    },
    closed=False,
)
GRAPH_STATISTICS = obj(
    {
        "knowledge_base_nodes": integer(maximum=10**12),
        "knowledge_base_edges": integer(maximum=10**12),
        "total_nodes": integer(maximum=10**12),
        "total_edges": integer(maximum=10**12),
        "node_types": COUNTS,
        "edge_types": COUNTS,
        "density": number(maximum=1e6),
        "average_degree": number(maximum=1e9),
        "clustering_coefficient": number(maximum=1.0),
        "connected_components": integer(maximum=10**12),
        "largest_component_nodes": integer(maximum=10**12),
        "average_path_length": nullable(number(maximum=1e9)),
        "average_path_length_note": nullable(string(max_length=500)),
    },
    closed=False,
)
EXPORT_FILE = obj(
    {
        "name": string("File name inside the knowledge base's exports folder on the server.", max_length=255),
        "size_bytes": integer(maximum=10**12),
        "format": string(enum=OUTPUT_FORMATS),
    },
    closed=False,
)

GET_GRAPH_RESULT = obj(
    {
        "message": string(max_length=1_000_000),
        "format": string(enum=OUTPUT_FORMATS),
        "scope": open_object(
            "What was selected: whole graph, an entity's neighbourhood, a type, or a query's entities."
        ),
        "nodes": array(GRAPH_NODE, max_items=MAX_NODES),
        "edges": array(GRAPH_EDGE, max_items=MAX_EDGES),
        "statistics": GRAPH_STATISTICS,
        "truncated": boolean(),
        "truncation_reasons": array(string(max_length=500), max_items=10),
        "export": nullable(string(max_length=100_000_000)),
        "export_file": nullable(EXPORT_FILE),
        "export_preview": nullable(string(max_length=100_000)),
        "notes": array(string(max_length=1000), max_items=10),
        "metadata": open_object("extraction_time, processing_time_s, filters_applied, format"),
    },
    closed=False,
)

GET_GRAPH = MethodSpec("graph/get", GET_GRAPH_PARAMS, GET_GRAPH_RESULT, timeout=INGEST_TIMEOUT)  # large exports

# ---------------------------------------------------------------------------- graph/search_entities
SEARCH_OPTIONS = obj(
    {
        "search_type": string(enum=SEARCH_TYPES, default="fuzzy"),
        "search_fields": array(string(enum=["name", "description"]), max_items=2),
        "entity_types": TYPE_LIST,
        "case_sensitive": boolean(default=False),
        "min_score": number(maximum=1.0),
    }
)

SEARCH_ENTITIES_PARAMS = obj(
    {
        "query": string(f"name, meaning, or regex (≤{MAX_REGEX_CHARS} chars)", max_length=1000, min_length=1),
        "search_options": SEARCH_OPTIONS,
        "limit": integer(minimum=1, maximum=100, default=20),
        "offset": integer(maximum=100_000, default=0),
    },
    required=["query"],
)

ENTITY_MATCH = obj(
    {
        "name": string(max_length=1000),
        "type": string(max_length=200),
        "description": string(max_length=2000),
        "degree": integer(maximum=10**9),
        "score": number(maximum=1.0),
        "match_reason": string(max_length=500),
        "highlighted": string(max_length=2100),
        "source_documents": SOURCE_DOCUMENTS,
    },
    closed=False,
)

SEARCH_ENTITIES_RESULT = obj(
    {
        "message": string(max_length=100_000),
        "query": string(max_length=1000),
        "search_type": string(enum=SEARCH_TYPES),
        "entities": array(ENTITY_MATCH, max_items=100),
        "total_matches": integer(maximum=10**12),
        "pagination": open_object("offset, limit, returned, has_more, next_offset"),
        "search_metadata": open_object("query, search_type, processing_time_s, index_used, entities_searched"),
    },
    closed=False,
)

SEARCH_ENTITIES = MethodSpec("graph/search_entities", SEARCH_ENTITIES_PARAMS, SEARCH_ENTITIES_RESULT)

# ------------------------------------------------------------------------ graph/entity_relationships
RELATIONSHIP_FILTERS = obj(
    {
        "relationship_types": array(string(max_length=100), "keywords", max_items=50),
        "direction": string(enum=DIRECTIONS, default="both"),
        "target_entity_types": TYPE_LIST,
        "min_weight": number(maximum=1e9, default=0.0),
    }
)

ENTITY_RELATIONSHIPS_PARAMS = obj(
    {
        "entity_id": ENTITY_NAME,
        "relationship_filters": RELATIONSHIP_FILTERS,
        "max_depth": integer(minimum=1, maximum=3, default=1),
        "limit": integer(minimum=1, maximum=500, default=50),
        "offset": integer(maximum=100_000, default=0),
    },
    required=["entity_id"],
)

ENTITY_DETAILS = obj(
    {
        "name": string(max_length=1000),
        "type": string(max_length=200),
        "description": string(max_length=20_000),
        "degree": integer(maximum=10**9),
        "source_documents": SOURCE_DOCUMENTS,
        "source_chunks": integer(maximum=10**9),
        "created_at": nullable(string(max_length=64)),
        "properties": open_object(),
    },
    closed=False,
)
RELATIONSHIP_DETAIL = obj(
    {
        "source": string(max_length=1000),
        "target": string(max_length=1000),
        "direction": string(enum=["outgoing", "incoming"]),
        "type": string(max_length=200),
        "keywords": array(string(max_length=1000), max_items=1000),
        "description": string(max_length=2000),
        "weight": nullable(number(minimum=-1e12, maximum=1e12)),
        "path_length": integer(minimum=1, maximum=3),
        "path": array(string(max_length=1000), max_items=4),
        "connected_entity": open_object("name, type, description, degree"),
    },
    closed=False,
)

ENTITY_RELATIONSHIPS_RESULT = obj(
    {
        "message": string(max_length=100_000),
        "entity": ENTITY_DETAILS,
        "relationships": array(RELATIONSHIP_DETAIL, max_items=500),
        "relationship_counts": open_object("total, by_type, by_direction, by_target_type, by_depth"),
        "pagination": open_object("offset, limit, returned, total, has_more, next_offset"),
        "filters_applied": open_object(),
    },
    closed=False,
)

ENTITY_RELATIONSHIPS = MethodSpec(
    "graph/entity_relationships", ENTITY_RELATIONSHIPS_PARAMS, ENTITY_RELATIONSHIPS_RESULT
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (GET_GRAPH, SEARCH_ENTITIES, ENTITY_RELATIONSHIPS)
__all__ = ["GET_GRAPH", "SEARCH_ENTITIES", "ENTITY_RELATIONSHIPS"]
