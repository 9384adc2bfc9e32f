"""Which documents an entity or relation came from.

LightRAG records the chunks behind each entity in `source_id` (chunk ids are
`<document id>-chunk-NNN`) and the documents' paths in `file_path` (our ingestion passes the
document's name), both joined with <SEP>.  The document catalog gives each id its filename.
"""

from __future__ import annotations

from typing import Any

from rag_worker.graph.snapshot import split_multi
from rag_worker.storage.catalog import name_from_file_path

MAX_DOCUMENTS_PER_ENTITY = 20
CHUNK_MARKER = "-chunk-"
# LightRAG's stand-ins when a list was cut or a source is unknown.
PLACEHOLDER_PREFIXES = ("...", "unknown_source")


def document_ids(attrs: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for chunk_id in split_multi(attrs.get("source_id")):
        doc_id = chunk_id.rsplit(CHUNK_MARKER, 1)[0] if CHUNK_MARKER in chunk_id else ""
        if doc_id and doc_id not in ids:
            ids.append(doc_id)
    return ids


def file_names(attrs: dict[str, Any]) -> list[str]:
    paths = split_multi(attrs.get("file_path"))
    return [name_from_file_path(path) for path in paths if not path.startswith(PLACEHOLDER_PREFIXES)]


async def source_documents(catalog: Any, attrs_by_name: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """For each entity: [{document_id, filename}], documents known to the catalog first."""
    wanted = {name: document_ids(attrs)[:MAX_DOCUMENTS_PER_ENTITY] for name, attrs in attrs_by_name.items()}
    all_ids = sorted({doc_id for ids in wanted.values() for doc_id in ids})
    records = await catalog.get_many(all_ids) if all_ids else {}
    result: dict[str, list[dict[str, Any]]] = {}
    for name, ids in wanted.items():
        documents: list[dict[str, Any]] = []
        named: set[str] = set()
        for doc_id in ids:
            record = records.get(doc_id)
            if record is None:
                continue
            filename = str(record.get("filename") or doc_id)
            named.add(filename)
            documents.append({"document_id": doc_id, "filename": filename})
        for filename in file_names(attrs_by_name[name]):
            if len(documents) >= MAX_DOCUMENTS_PER_ENTITY:
                break
            if filename not in named:
                named.add(filename)
                documents.append({"document_id": None, "filename": filename})
        result[name] = documents
    return result
