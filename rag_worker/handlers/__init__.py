"""Worker method handlers, keyed by the method names of `protocol.methods`."""

from __future__ import annotations

from protocol import methods as m
from rag_worker.handlers import ingest, query, system

HANDLERS = {
    m.STATUS.name: system.status,
    m.SHUTDOWN.name: system.shutdown,
    m.HEALTH.name: system.health,
    m.DEBUG.name: system.debug,
    m.UPLOAD.name: ingest.upload,
    m.INSERT_TEXT.name: ingest.insert_text,
    m.GET_STATUS.name: ingest.get_status,
    m.QUERY.name: query.query,
    m.STREAM_QUERY.name: query.stream_query,
    m.QUERY_SIMPLE.name: query.simple_query,
}
