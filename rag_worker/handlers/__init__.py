"""Worker method handlers, keyed by the method names of `protocol.methods`."""

from __future__ import annotations

from protocol import methods as m
from rag_worker.handlers import documents, editing, graph, ingest, query, system

HANDLERS = {
    m.STATUS.name: system.status,
    m.SHUTDOWN.name: system.shutdown,
    m.HEALTH.name: system.health,
    m.DEBUG.name: system.debug,
    m.CLEAR_CACHE.name: system.clear_cache,
    m.SYSTEM_STATS.name: system.system_stats,
    m.UPLOAD.name: ingest.upload,
    m.INSERT_TEXT.name: ingest.insert_text,
    m.INSERT_FILE.name: ingest.insert_file,
    m.BATCH_PROCESS.name: ingest.batch_process,
    m.GET_STATUS.name: ingest.get_status,
    m.LIST_DOCUMENTS.name: documents.list_documents,
    m.DELETE_DOCUMENTS.name: documents.delete_documents,
    m.QUERY.name: query.query,
    m.STREAM_QUERY.name: query.stream_query,
    m.QUERY_SIMPLE.name: query.simple_query,
    m.GET_GRAPH.name: graph.get_graph,
    m.SEARCH_ENTITIES.name: graph.search_entities,
    m.ENTITY_RELATIONSHIPS.name: graph.entity_relationships,
    m.UPDATE_ENTITY.name: editing.update_entity,
}
