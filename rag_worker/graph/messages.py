"""The `message` of each graph tool's result: what a person (or the model reading the chat)
needs first, in a few lines.  The structured result carries everything else."""

from __future__ import annotations

from typing import Any

from rag_worker.graph.snapshot import shorten

EMPTY_GRAPH = (
    "The knowledge base has no entities yet: upload documents (upload_to_lightrag or lightrag_insert_text) and "
    "the graph fills as they are indexed."
)
FORMAT_NAMES = {"json": "JSON", "graphml": "GraphML", "gexf": "GEXF", "cypher": "Cypher", "mermaid": "Mermaid"}
MAX_MESSAGE_DIAGRAM_CHARS = 100_000
LISTED = 8


def _n(count: int, noun: str) -> str:
    """`1 relation`, `3 relations`, `1 entity`, `2 entities`."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun[:-1]}ies" if noun.endswith("y") else f"{count} {noun}s"


def _size(size_bytes: int) -> str:
    return f"{size_bytes / 1024:.1f} KB" if size_bytes < 2**20 else f"{size_bytes / 2**20:.1f} MB"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in list(counts.items())[:LISTED])


def _names(names: list[str]) -> str:
    return ", ".join(shorten(name, 80) for name in names[:LISTED]) + (" …" if len(names) > LISTED else "")


def graph_message(result: dict[str, Any], text: str, limit_bytes: int) -> str:
    scope, stats = result["scope"], result["statistics"]
    if scope.get("empty_knowledge_base"):
        return EMPTY_GRAPH
    if scope.get("mode") == "query_neighbourhood" and not stats["total_nodes"]:
        return (
            f"No entity in this knowledge base matches the query {shorten(scope.get('query', ''), 200)!r}. "
            "Try lightrag_search_entities with search_type fuzzy or semantic, or a broader query."
        )
    size = f"{_n(stats['total_nodes'], 'entity')} and {_n(stats['total_edges'], 'relation')}"
    whole = f"the knowledge base has {stats['knowledge_base_nodes']} and {stats['knowledge_base_edges']}"
    mode = scope.get("mode")
    if mode == "neighbourhood":
        head = f"Around {_names(scope['centers'])} (up to {scope['max_depth']} hops): {size} ({whole})."
    elif mode == "entity_type":
        head = f"Entities of type {scope['entity_type']!r}: {size} ({whole})."
    else:
        head = f"Knowledge graph: {size} ({whole})."
    lines = [head]
    if scope.get("query_entities"):
        lines.append(f"Entities the query points to: {_names(scope['query_entities'])}.")
    if stats["node_types"]:
        lines.append(f"Entity types: {_counts(stats['node_types'])}.")
    if stats["edge_types"]:
        lines.append(f"Relation types: {_counts(stats['edge_types'])}.")
    if stats["total_nodes"]:
        structure = (
            f"Density {stats['density']}, average degree {stats['average_degree']}, clustering "
            f"{stats['clustering_coefficient']}, {stats['connected_components']} connected component(s)"
        )
        if stats["average_path_length"] is not None:
            structure += f", average path length {stats['average_path_length']}"
        lines.append(structure + ".")
    if result["truncation_reasons"]:
        lines.append("Truncated: " + "; ".join(result["truncation_reasons"]) + ".")
    if scope.get("more_beyond_depth"):
        lines.append("More entities lie beyond max_depth.")
    lines.extend(f"Note: {note}." for note in result["notes"])
    lines.append(_export_line(result, text, limit_bytes))
    return "\n".join(line for line in lines if line)


def _export_line(result: dict[str, Any], text: str, limit_bytes: int) -> str:
    output_format = result["format"]
    label = FORMAT_NAMES[output_format]
    exported = result.get("export_file")
    if exported:
        return (
            f"The {label} export ({_size(exported['size_bytes'])}) is larger than the {limit_bytes // 1024} KB inline "
            f"limit, so it was saved on the server as {exported['name']} in this knowledge base's exports folder; "
            "export_preview shows its beginning."
        )
    if output_format == "json":
        return "The entities (nodes) and relations (edges) are listed in the result." if result["nodes"] else ""
    if output_format == "mermaid" and len(text) <= MAX_MESSAGE_DIAGRAM_CHARS:
        return f"\n```mermaid\n{text}```"
    return f"The {label} export ({_size(len(text.encode('utf-8')))}) is in `export`."


def search_message(result: dict[str, Any], *, empty_graph: bool) -> str:
    if empty_graph:
        return EMPTY_GRAPH
    meta, query, kind = result["search_metadata"], shorten(result["query"], 200), result["search_type"]
    if not result["total_matches"]:
        hint = "" if kind in ("fuzzy", "semantic") else " Try search_type fuzzy or semantic."
        partial = f" (partial: {meta['partial_reason']})" if meta.get("partial") else ""
        return f"No entity matches {query!r} ({kind} search over {meta['entities_searched']} entities){partial}.{hint}"
    page = result["pagination"]
    lines = [
        f"{_n(result['total_matches'], 'entity')} found for {query!r} ({kind} search); showing "
        f"{page['offset'] + 1}-{page['offset'] + page['returned']}:"
    ]
    for index, entity in enumerate(result["entities"], page["offset"] + 1):
        files = ", ".join(doc["filename"] for doc in entity["source_documents"][:3])
        lines.append(
            f"{index}. {entity['highlighted']} ({entity['type']}, {_n(entity['degree'], 'relation')}) score "
            f"{entity['score']:.2f}: {entity['match_reason']}" + (f" [from {files}]" if files else "")
        )
    if meta.get("partial"):
        lines.append(f"Partial result: {meta['partial_reason']}.")
    if page["has_more"]:
        lines.append(f"More matches: call again with offset {page['next_offset']}.")
    return "\n".join(lines)


def relationships_message(result: dict[str, Any]) -> str:
    entity, counts, page = result["entity"], result["relationship_counts"], result["pagination"]
    files = ", ".join(doc["filename"] for doc in entity["source_documents"][:5])
    lines = [
        f"{entity['name']} ({entity['type']}): {_n(entity['degree'], 'relation')} in the graph"
        + (f"; from {files}" if files else "")
        + "."
    ]
    if entity["description"]:
        lines.append(shorten(entity["description"].replace("\n", " "), 400))
    filters = result["filters_applied"]
    if not counts["total"]:
        lines.append(
            f"No relations match the filters (depth up to {filters['max_depth']}, direction {filters['direction']})."
        )
        return "\n".join(lines)
    lines.append(
        f"{_n(counts['total'], 'relation')} (depth up to {filters['max_depth']}, direction {filters['direction']}); showing "
        f"{page['offset'] + 1}-{page['offset'] + page['returned']}. By type: {_counts(counts['by_type'])}."
    )
    for relation in result["relationships"][:20]:
        hop = f"(hop {relation['path_length']}) " if relation["path_length"] > 1 else ""
        other = relation["connected_entity"]
        lines.append(
            f"- {hop}{relation['source']} —[{relation['type']}]→ {relation['target']} "
            f"({other['name']}: {other['type']})"
        )
    if len(result["relationships"]) > 20:
        lines.append(f"… {len(result['relationships']) - 20} more in the result.")
    if page["has_more"]:
        lines.append(f"More relations: call again with offset {page['next_offset']}.")
    return "\n".join(lines)
