"""The method catalogue of the worker pipe: names, parameter and result schemas.

Two kinds of methods:

* control methods (`ping`, `worker/status`, `worker/shutdown`) take plain params;
* tool methods take the envelope ``{"context": CallContext, "arguments": {...}}``:
  the front has already validated `arguments` against `params_schema` (which is also the
  MCP tool's `inputSchema`) and resolved the caller's workspace into `context`.

Notifications travel both ways: the worker announces `worker/ready` and reports
`$/progress` for a request; the front sends `$/cancelRequest`.
"""

from __future__ import annotations

from protocol.methods.ingest import GET_STATUS, INSERT_TEXT, UPLOAD
from protocol.methods.query import QUERY, QUERY_SIMPLE, STREAM_QUERY
from protocol.methods.system import (
    CALL_CONTEXT,
    DEBUG,
    HEALTH,
    PING,
    READY_PARAMS,
    SHUTDOWN,
    STATUS,
    VERSIONS,
)
from protocol.schema import MethodSpec

PROTOCOL_VERSION = 1

# Notifications
READY = "worker/ready"
CANCEL = "$/cancelRequest"
PROGRESS = "$/progress"

METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        PING,
        STATUS,
        SHUTDOWN,
        HEALTH,
        DEBUG,
        UPLOAD,
        INSERT_TEXT,
        GET_STATUS,
        QUERY,
        QUERY_SIMPLE,
        STREAM_QUERY,
    )
}

__all__ = [
    "CALL_CONTEXT",
    "CANCEL",
    "DEBUG",
    "GET_STATUS",
    "HEALTH",
    "INSERT_TEXT",
    "METHODS",
    "MethodSpec",
    "PING",
    "PROGRESS",
    "PROTOCOL_VERSION",
    "QUERY",
    "QUERY_SIMPLE",
    "READY",
    "READY_PARAMS",
    "SHUTDOWN",
    "STATUS",
    "STREAM_QUERY",
    "UPLOAD",
    "VERSIONS",
]
