"""LightRAG instances, one per workspace: created lazily, cached (bounded), finalized cleanly.

A workspace's local files are owned by one process at a time through an OS file lock
(SPEC §3): a second server process that needs the same workspace waits briefly, then
gets WORKSPACE_BUSY.  LightRAG keeps JSON KV data in a process-wide dict keyed by
workspace name, so this registry is the only place that constructs instances.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from protocol import ErrorCode, RagError
from protocol.settings import Settings

log = logging.getLogger("rag_worker.engine")

LOCK_WAIT_SECONDS = 5.0
MAX_OPEN_WORKSPACES = 8


def import_lightrag() -> str:
    """Import LightRAG and its local storages (proving they load offline); returns its version.

    Blocking (about a second): run it in a thread."""
    _contain_import_side_effects()
    import lightrag
    import lightrag.kg.json_doc_status_impl  # noqa: F401
    import lightrag.kg.json_kv_impl  # noqa: F401
    import lightrag.kg.nano_vector_db_impl  # noqa: F401
    import lightrag.kg.networkx_impl  # noqa: F401
    from lightrag import LightRAG  # noqa: F401

    return str(lightrag.__version__)


def _contain_import_side_effects() -> None:
    # LightRAG raises SystemExit at construction when this deprecated variable is set.
    if os.environ.pop("ENTITY_TYPES", None) is not None:
        log.warning("ignoring ENTITY_TYPES: LightRAG 1.5.7 no longer supports it")


@dataclass
class OpenWorkspace:
    name: str
    rag: Any
    lock_fd: int
    opened_at: float = field(default_factory=time.monotonic)


class EngineRegistry:
    """Owns every LightRAG instance in this worker."""

    def __init__(self, settings: Settings, limiter: anyio.CapacityLimiter) -> None:
        self._settings = settings
        self._limiter = limiter
        self._root = Path(settings.data_dir)
        self._open: OrderedDict[str, OpenWorkspace] = OrderedDict()
        self._opening = anyio.Lock()
        self._components: Any = None

    def check_data_dir(self) -> None:
        """Fail start-up (not a later call) when the data directory is not writable."""
        self._root.mkdir(parents=True, exist_ok=True)
        probe = self._root / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()

    def open_workspaces(self) -> list[str]:
        return list(self._open)

    def workspace_dir(self, workspace: str) -> Path:
        return self._root / workspace

    async def get(self, workspace: str) -> Any:
        """The initialized LightRAG instance for `workspace`, opening it if needed."""
        entry = self._open.get(workspace)
        if entry is not None:
            self._open.move_to_end(workspace)
            return entry.rag
        async with self._opening:
            entry = self._open.get(workspace)
            if entry is None:
                entry = await self._open_workspace(workspace)
                self._open[workspace] = entry
                await self._evict_beyond(MAX_OPEN_WORKSPACES)
            return entry.rag

    async def _open_workspace(self, workspace: str) -> OpenWorkspace:
        lock_fd = await self._lock_workspace(workspace)
        try:
            components = await self._shared_components()
            from lightrag import LightRAG

            rag = LightRAG(
                working_dir=str(self._root),
                workspace=workspace,
                embedding_func=components["embedding_func"],
                llm_model_func=components["llm_model_func"],
                tokenizer=components["tokenizer"],
                enable_llm_cache=False,  # the answer cache ignores new documents (reference)
                enable_llm_cache_for_entity_extract=True,
            )
            await rag.initialize_storages()
        except BaseException:
            os.close(lock_fd)
            raise
        log.info("opened workspace %s", workspace)
        return OpenWorkspace(workspace, rag, lock_fd)

    async def _lock_workspace(self, workspace: str) -> int:
        directory = self.workspace_dir(workspace)
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise RagError(ErrorCode.WORKSPACE_BUSY) from None
                await anyio.sleep(0.2)

    async def _shared_components(self) -> dict[str, Any]:
        """Embedding model, tokenizer and LLM function: built once, shared by all workspaces."""
        if self._components is None:
            from rag_worker.bindings import build_components

            self._components = await build_components(self._settings, self._limiter)
        return dict(self._components)

    async def _evict_beyond(self, limit: int) -> None:
        while len(self._open) > limit:
            _, entry = self._open.popitem(last=False)
            await self._finalize(entry)

    async def _finalize(self, entry: OpenWorkspace) -> None:
        try:
            with anyio.move_on_after(10, shield=True):
                await entry.rag.finalize_storages()
        except Exception:
            log.exception("finalizing workspace %s failed", entry.name)
        finally:
            with contextlib.suppress(OSError):
                os.close(entry.lock_fd)

    async def close_all(self) -> None:
        while self._open:
            _, entry = self._open.popitem(last=False)
            await self._finalize(entry)
