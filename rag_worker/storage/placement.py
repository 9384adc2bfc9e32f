"""Which storages each knowledge base lives in — and never two at once (SPEC §7).

The configured storages (`config.storages`) hold every new knowledge base.  A
marker in the workspace's local directory (`storage.json`) records where it was created,
so later configuration changes cannot silently split or hide it:

* with no LIGHTRAG_*_STORAGE set, LIGHTRAG_MCP_DEFAULT_STORAGE only chooses where NEW
  knowledge bases go (the embedded engine or the local files): one already on the local files
  or in the engine keeps opening there (`python -m rag_worker.storage.migration WORKSPACE` moves one);
* explicitly configured storages that differ from the recorded ones → CONFIGURATION_ERROR
  naming both (the data is still where it was; nothing is mixed);
* with LIGHTRAG_MCP_STORAGE_FALLBACK on and a storage server unreachable at worker
  start-up, NEW knowledge bases are created on local files (loud warning, health
  degraded) and stay there, marked as fallback; knowledge bases already on the server keep
  using it and answer STORAGE_ERROR until it is back.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from config.settings import Settings
from config.storages import (
    LOCAL_STORAGES,
    ServerAddress,
    StorageSet,
    probe_servers,
    resolve_storages,
    server_addresses,
    storages_explicit,
)
from protocol import ErrorCode, RagError

log = logging.getLogger("rag_worker.storage")

MARKER = "storage.json"
# A workspace directory with these files was written by the local JSON storages.
LOCAL_EVIDENCE = ("kv_store_doc_status.json", "kv_store_full_docs.json")


class StoragePlacement:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.configured = resolve_storages(settings)
        # No LIGHTRAG_*_STORAGE: the default chooses for new knowledge bases only.
        self.by_default = not storages_explicit(settings)
        self.fallback_active = False
        self.unreachable: list[str] = []
        self.addresses = server_addresses(self.configured, settings)

    def check_servers(self) -> None:
        """At worker start-up: are the configured servers there?  Decide on fallback once."""
        self.unreachable = probe_servers(self.addresses)
        if self.unreachable and self._settings.storage_fallback:
            self.fallback_active = True
            for problem in self.unreachable:
                log.warning("STORAGE FALLBACK: %s; new knowledge bases use local files until restart", problem)
        elif self.unreachable:
            for problem in self.unreachable:
                log.error("%s; calls answer STORAGE_ERROR until it is back", problem)

    def for_workspace(self, directory: Path) -> tuple[StorageSet, bool]:
        """(storages, is_fallback) for the workspace in `directory`; refuses a split."""
        marker = directory / MARKER
        if marker.exists():
            recorded = json.loads(marker.read_text())
            storages = StorageSet(**recorded["storages"], embedded=bool(recorded.get("embedded")))
            if storages == self.configured:
                return storages, False
            if recorded.get("fallback"):
                return storages, True  # created while the server was down: it stays local
            if self.by_default and storages.needs_no_server:
                return storages, False  # the default changed: it stays where it was made
            raise _split(storages, self.configured)
        if any((directory / name).exists() for name in LOCAL_EVIDENCE) and not self.configured.is_local:
            if self.by_default:
                return LOCAL_STORAGES, False  # made before markers existed, on local files: it stays
            raise _split(LOCAL_STORAGES, self.configured)
        if self.fallback_active and not self.configured.is_local:
            return LOCAL_STORAGES, True
        return self.configured, False

    def watched_addresses(self, workspace: str, engines: Any) -> list[ServerAddress]:
        """The servers a call in `workspace` depends on (none for a knowledge base on local files)."""
        opened = engines.opened(workspace) if engines is not None else None
        if opened is not None and opened.storages.needs_no_server:
            return []  # the embedded engine is restarted by the next call that finds it down
        if opened is None and self.fallback_active:
            return []
        return self.addresses

    @staticmethod
    def record(directory: Path, storages: StorageSet, fallback: bool, replace: bool = False) -> None:
        """Write the marker (once; `replace` is the migration's switch, an atomic rename)."""
        marker = directory / MARKER
        if marker.exists() and not replace:
            return
        fields: dict[str, Any] = {"storages": storages.as_dict(), "fallback": fallback}
        if storages.embedded:
            fields["embedded"] = True
        written = marker.with_suffix(".json.new")
        written.write_text(json.dumps(fields))
        os.replace(written, marker)


def _split(recorded: StorageSet, configured: StorageSet) -> RagError:
    return RagError(
        ErrorCode.CONFIGURATION_ERROR,
        f"This knowledge base is stored in {recorded.describe()}, but the server is now configured for "
        f"{configured.describe()}; it is not opened on other storage, so nothing is split or hidden.",
        suggested_action=(
            "Ask the administrator to restore the previous storage settings, or to migrate the knowledge base "
            "(or use a new WORKING_DIR for the new storage)."
        ),
    )
