"""An open workspace: its LightRAG instance, our document catalog, its delete journal and locks."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from config.storages import LOCAL_STORAGES, StorageSet
from rag_worker.storage.catalog import DocumentCatalog
from rag_worker.storage.journals import DeleteJournal


@dataclass
class Workspace:
    """An open workspace: its LightRAG instance, our document catalog, and its locks."""

    name: str
    rag: Any
    catalog: DocumentCatalog
    lock_fd: int
    components: dict[str, Any]
    deletes: DeleteJournal
    storages: StorageSet = LOCAL_STORAGES
    on_fallback: bool = False  # created on local files while a configured server was down
    ingest_lock: anyio.Lock = field(default_factory=anyio.Lock)
    opened_at: float = field(default_factory=time.monotonic)

    @property
    def llm_configured(self) -> bool:
        return bool(self.components.get("llm_configured"))
