"""The method catalogue of the worker pipe: names, parameter and result schemas.

Two kinds of methods:

* control methods (`ping`, `worker/status`, `worker/shutdown`) take plain params;
* tool methods take the envelope ``{"context": CallContext, "arguments": {...}}``:
  the front has already validated `arguments` against `params_schema` (which is also the
  MCP tool's `inputSchema`) and resolved the caller's workspace into `context`.

Notifications travel both ways: the worker announces `worker/ready`, reports `$/progress`
for a request, `worker/blocking` before a known blocking section and `documents/changed`
when a workspace's document set changed; the front sends `$/cancelRequest`.
"""

from __future__ import annotations

from protocol.methods import documents, editing, graph, ingest, knowledge_bases, query, system
from protocol.methods.documents import *  # noqa: F403  (each area's __all__: its specs and shared names)
from protocol.methods.editing import *  # noqa: F403
from protocol.methods.graph import *  # noqa: F403
from protocol.methods.ingest import *  # noqa: F403
from protocol.methods.knowledge_bases import *  # noqa: F403
from protocol.methods.query import *  # noqa: F403
from protocol.methods.system import *  # noqa: F403
from protocol.schema import MethodSpec

PROTOCOL_VERSION = 1

# Notifications
READY = "worker/ready"
CANCEL = "$/cancelRequest"
PROGRESS = "$/progress"
# The worker is about to block its loop for up to `seconds` (a storage client's synchronous
# set-up, e.g. Milvus): missed pings inside that lease are not a hang. `seconds: 0` ends it.
BLOCKING = "worker/blocking"
MAX_BLOCKING_LEASE_S = 120.0
# The set of documents of `workspace` changed (indexing finished or failed, documents deleted):
# the front tells that workspace's MCP sessions `notifications/resources/list_changed`.
DOCUMENTS_CHANGED = "documents/changed"

# Why a worker exited at start-up, by exit code (the front puts it in health and logs).
EXIT_CONFIGURATION = 2
EXIT_DATA_DIR = 3
EXIT_REASONS = {
    EXIT_CONFIGURATION: "the worker refused its configuration (see the server log)",
    EXIT_DATA_DIR: "the worker cannot write its data directory (disk full or no permission)",
}

# Every method of every area, by name: an area declares a method by listing it in its SPECS.
METHODS: dict[str, MethodSpec] = {
    spec.name: spec for area in (system, ingest, query, documents, graph, editing, knowledge_bases) for spec in area.SPECS
}

__all__ = [
    "BLOCKING",
    "CANCEL",
    "DOCUMENTS_CHANGED",
    "EXIT_CONFIGURATION",
    "EXIT_DATA_DIR",
    "EXIT_REASONS",
    "MAX_BLOCKING_LEASE_S",
    "METHODS",
    "MethodSpec",
    "PROGRESS",
    "PROTOCOL_VERSION",
    "READY",
]
__all__ += system.__all__
__all__ += ingest.__all__
__all__ += query.__all__
__all__ += documents.__all__
__all__ += graph.__all__
__all__ += editing.__all__
__all__ += knowledge_bases.__all__
