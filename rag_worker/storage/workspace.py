"""An open workspace: its LightRAG instance, our document catalog, its intake queue and delete
journal, its locks, and what says whether it is in use (so the registry never closes it under a call).

In use means: a task that got it from `EngineRegistry.get` is still running (a call's task, a
batch job's), an indexing run or the intake feeder of ours is going on, its ingest lock is held,
or LightRAG's pipeline is busy for it.  Documents acknowledged but not yet processed need none
of that to be safe: they stay in the intake queue's files or LightRAG's doc status and resume
when the workspace opens again.

Documents' states as callers see them (`status_row`, `status_rows`, `status_counts`) are
LightRAG's doc-status rows plus a `pending` row for each document still in the intake queue.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from config.storages import LOCAL_STORAGES, StorageSet
from rag_worker.storage.catalog import DocumentCatalog, doc_id_for, status_counts
from rag_worker.storage.catalog_stores import TABLE as CATALOG_TABLE
from rag_worker.storage.intake import IntakeQueue
from rag_worker.storage.journals import DeleteJournal
from rag_worker.storage.known_documents import KnownDocuments
from rag_worker.storage.locks import WorkspaceLocks
from rag_worker.storage.row_versions import version_sql

# Every storage of a LightRAG 1.5.7 instance (the list its `finalize_storages` walks).
_STORAGES = (
    "full_docs", "text_chunks", "full_entities", "full_relations", "entity_chunks", "relation_chunks",
    "entities_vdb", "relationships_vdb", "chunks_vdb", "chunk_entity_relation_graph", "llm_response_cache",
    "doc_status",
)  # fmt: skip
# The stored documents' version on PostgreSQL: LightRAG's status rows and our catalog records.
_DOCUMENTS_VERSION_SQL = version_sql(("lightrag_doc_status", "workspace = $1"), (CATALOG_TABLE, "workspace = $2"))


@dataclass
class Workspace:
    """An open workspace: its LightRAG instance, our document catalog, and its locks."""

    name: str
    rag: Any
    catalog: DocumentCatalog
    locks: WorkspaceLocks
    components: dict[str, Any]
    deletes: DeleteJournal
    intake: IntakeQueue
    storages: StorageSet = LOCAL_STORAGES
    on_fallback: bool = False  # created on local files while a configured server was down
    # Uncontended, taken without a turn of the event loop: each turn waits behind LightRAG's work.
    ingest_lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    opened_at: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    indexing_runs: int = 0  # our background pipeline runs going on
    handover_failures: int = 0  # hand-overs to LightRAG refused in a row (EngineRegistry._feed_again_later)
    halted_runs: int = 0  # pipeline runs in a row that halted with documents unfinished (Indexing._resume_after_halt)
    storage_retries: dict[str, int] = field(default_factory=dict)  # automatic re-indexings after an outage
    deleting: dict[str, str] = field(default_factory=dict)  # id → name: what delete calls' runs remove in the background
    listing_views: tuple[str, Any] | None = None  # (documents_version, summaries) the listing keeps
    known: KnownDocuments | None = None  # what LightRAG's doc status may hold, where a lookup is a round trip
    _users: set[asyncio.Task[Any]] = field(default_factory=set)  # tasks that got it and still run

    @property
    def llm_configured(self) -> bool:
        return bool(self.components.get("llm_configured"))

    def lease_to_current_task(self) -> None:
        """The running task uses the workspace until it finishes (then the workspace counts as used now)."""
        self.last_used = time.monotonic()
        task = asyncio.current_task()
        if task is not None and task not in self._users:
            self._users.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._users.discard(task)
        self.last_used = time.monotonic()

    def in_use(self) -> bool:
        """Calls or jobs hold it, an indexing run, the feeder or the remover of ours goes on, or its ingest lock is taken."""
        return (
            bool(self._users) or self.indexing_runs > 0 or self.intake.feeding or self.intake.removing
            or self.ingest_lock.locked()
        )

    async def busy(self) -> bool:
        """`in_use`, or LightRAG's pipeline works for it.  The last look is `in_use` (no await after
        it), so a caller that acts on False without awaiting acts on a current answer."""
        return self.in_use() or await self.pipeline_busy() or self.in_use()

    async def pipeline_busy(self) -> bool:
        """Whether LightRAG's pipeline (indexing, a delete, a cache clear) runs in this workspace."""
        from lightrag.kg.shared_storage import get_namespace_data  # deferred: LightRAG is imported once, off the loop

        try:
            status = await get_namespace_data("pipeline_status", workspace=self.name)
        except Exception:  # never initialized: nothing runs
            return False
        return bool(status.get("busy"))

    async def status_row(self, doc_id: str) -> dict[str, Any] | None:
        """A document's status row (a dict, like LightRAG's `get_by_id`), queued ones included."""
        queued = self.intake.get(doc_id)
        if queued is not None:
            return queued.status_row()
        if self.known is not None and not self.known.may_hold(doc_id):
            return None
        row = await self.rag.doc_status.get_by_id(doc_id)
        return dict(row) if row else None

    async def find_document(self, requested: str) -> tuple[str, dict[str, Any]] | None:
        """The document an id or its name names, with its status row: the one resolver of every
        tool that takes document ids (a model that lost an upload's answer knows only the name)."""
        requested = requested.strip()
        for doc_id in dict.fromkeys((requested, doc_id_for(requested))):
            row = await self.status_row(doc_id)
            if row is not None:
                return doc_id, row
        return None

    async def documents_version(self) -> str | None:
        """A value that changes whenever a stored document's status row or catalog record does
        (`row_versions`); None where no cheap one exists (storages other than PostgreSQL's)."""
        doc_status, records = self.rag.doc_status, self.catalog.table_store
        if type(doc_status).__name__ != "PGDocStatusStorage" or records is None:
            return None
        row = await doc_status.db.query(_DOCUMENTS_VERSION_SQL, [doc_status.workspace, records.workspace])
        return str(row["version"]) if row else None

    async def stored_status_rows(self) -> dict[str, Any]:
        """LightRAG's status rows (`DocProcessingStatus`), the intake queue's documents not included."""
        from lightrag.base import DocStatus  # deferred: LightRAG is imported once, off the loop

        rows: dict[str, Any] = await self.rag.doc_status.get_docs_by_statuses(list(DocStatus))
        return rows

    async def status_rows(self) -> dict[str, Any]:
        """Every document's status row (`DocProcessingStatus`, like LightRAG's `get_docs_by_statuses`)."""
        rows = await self.stored_status_rows()
        rows.update((doc.doc_id, doc.processing_status()) for doc in self.intake.documents())
        return rows

    async def status_counts(self) -> dict[str, int]:
        """Documents by state (every state present), queued ones counted as pending."""
        counts = await status_counts(self.rag.doc_status)
        queued = self.intake.documents()
        # A batch on its way may be in LightRAG's rows already: count those documents once.
        on_the_way = [doc.doc_id for doc in queued if not self.intake.waiting(doc.doc_id)]
        landed = await self.rag.doc_status.get_by_ids(on_the_way) if on_the_way else []
        counts["pending"] += len(queued) - sum(1 for row in landed if row)
        return counts

    async def commit(self) -> None:
        """Write what LightRAG still buffers (a no-op for a storage with nothing pending).

        Before an idle workspace closes.  Not at shutdown or after a lost lock: what an
        interrupted indexing run buffered belongs to documents that are processed again."""
        for name in _STORAGES:
            storage = getattr(self.rag, name, None)
            if storage is not None:
                await storage.index_done_callback()

    async def close(self) -> None:
        """Finalize its storages, stop its call queues and forget its process-wide data.

        The locks are released by the registry afterwards, so nobody else opens it half-written."""
        try:
            await self.catalog.finalize()
            await self.rag.finalize_storages()
        finally:
            lexical = getattr(self.rag, "lexical", None)
            if lexical is not None:
                await lexical.close()
            await stop_call_queues(self.rag)
            forget_process_wide_data(self.name)


async def stop_call_queues(rag: Any) -> None:
    """Stop the worker tasks of `rag`'s LLM, embedding and rerank queues.

    LightRAG 1.5.7 gives every instance its own priority queues, each with up to `max_async`
    worker tasks that poll once a second for ever; `finalize_storages` leaves them running
    (about 150 tasks per closed workspace were measured).  Queued calls are cancelled: a
    workspace is closed idle, or at shutdown."""
    states = getattr(rag, "_role_llm_states", {}) or {}
    queued = [getattr(rag.embedding_func, "func", None), rag.rerank_model_func]
    queued += [state.wrapped for state in states.values()]
    for func in queued:
        shutdown = getattr(func, "shutdown", None)
        if callable(shutdown):
            await shutdown(graceful=False)


def forget_process_wide_data(workspace: str) -> None:
    """Drop what LightRAG 1.5.7 keeps for `workspace` in its process-wide shared storage.

    Its JSON KV and doc-status storages hold their data in module-level dicts keyed
    `<workspace>:<namespace>`, which `finalize_storages` leaves behind: a closed workspace would
    keep its memory, and when it opened again LightRAG would skip reading its files and use the
    old copy, missing (and later overwriting) what another process wrote meanwhile.  Call it after
    the storages were committed and finalized.  The pipeline status stays (small, and LightRAG's
    reservation bookkeeping refers to it)."""
    from lightrag.kg import shared_storage  # deferred: LightRAG is imported once, off the loop

    prefix = f"{workspace}:"
    keep = f"{prefix}pipeline_status"
    for table in (
        shared_storage._shared_dicts,
        shared_storage._init_flags,
        shared_storage._update_flags,
        shared_storage._namespace_data_cache,
    ):
        if table is not None:
            for key in [key for key in table if key.startswith(prefix) and key != keep]:
                del table[key]


def indexing_share(embedding_func: Any, slots: int) -> Any:
    """A workspace's own way into the shared local embedding model (`EmbeddingLanes`).

    The model's indexing lane is one first-come-first-served queue for every workspace, and
    LightRAG submits all of a document's batches at once: a 2-page upload waited behind every
    batch of another user's 200-page one (51 s, until that one was nearly done; 9 s with this).
    Letting each workspace have at most `slots` batches waiting at the model makes the
    workspaces that index take turns.  A question's embedding (`context="query"`) has a lane
    of its own and passes straight through."""
    limiter = anyio.CapacityLimiter(slots)
    inner = embedding_func.func

    @functools.wraps(inner)
    async def embed(texts: list[str], **kwargs: Any) -> Any:
        if kwargs.get("context") == "query":
            return await inner(texts, **kwargs)
        async with limiter:
            return await inner(texts, **kwargs)

    # A plain closure, like the function it wraps: LightRAG deep-copies its config, functions stay shared.
    return replace(embedding_func, func=embed)
