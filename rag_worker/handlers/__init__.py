"""Worker method handlers: each registers against its method's spec with `@handles(m.X)`
(`rag_worker.dispatch`); importing the modules here fills the registry."""

from __future__ import annotations

from collections.abc import Mapping

from rag_worker.dispatch import Handler, registered_handlers
from rag_worker.handlers import documents, editing, graph, ingest, knowledge_bases, query, system

#: Method name → handler, for every method with a handler (a unit test checks it covers METHODS).
HANDLERS: Mapping[str, Handler] = registered_handlers()

__all__ = ["HANDLERS", "documents", "editing", "graph", "ingest", "knowledge_bases", "query", "system"]
