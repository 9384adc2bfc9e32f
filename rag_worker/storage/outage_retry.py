"""Documents that failed because their storage went away mid-indexing are indexed again, by themselves.

An acknowledged document is never to be lost (SPEC §2).  A killed worker leaves its documents
"processing", and the next opening resumes them; a database that dies under a running worker
(the embedded engine SIGKILLed, a PostgreSQL server restarted) makes LightRAG mark the documents it
was indexing FAILED ("connection was closed in the middle of operation", "another operation is in
progress" on a connection the crash wedged), and LightRAG retries FAILED documents only on an
explicit request.  After each pipeline run the registry calls `requeue_storage_failures`: such
documents go back to PENDING — LightRAG's own reset (`_build_pending_reset_update`, what its manual
retry writes) — and the next run indexes them again.  Bounded: a document is retried
MAX_AUTOMATIC_RETRIES times by one worker; a storage that stays broken leaves it failed, with the
storage reason for the client.
"""

from __future__ import annotations

import logging
from typing import Any

from rag_worker.storage.catalog import is_storage_failure

log = logging.getLogger("rag_worker.storage.outage_retry")

MAX_AUTOMATIC_RETRIES = 2


async def requeue_storage_failures(rag: Any, retries: dict[str, int]) -> int:
    """Put this knowledge base's documents that failed on a storage outage back to PENDING
    (each at most MAX_AUTOMATIC_RETRIES times, counted in `retries`); returns how many."""
    from lightrag.base import DocStatus  # deferred: LightRAG is imported once, off the loop

    failed = await rag.doc_status.get_docs_by_statuses([DocStatus.FAILED])
    candidates = {
        doc_id: row
        for doc_id, row in failed.items()
        if is_storage_failure(getattr(row, "error_msg", None)) and retries.get(doc_id, 0) < MAX_AUTOMATIC_RETRIES
    }
    updates: dict[str, dict[str, Any]] = {}
    for doc_id, row in candidates.items():
        content = await rag.full_docs.get_by_id(doc_id)
        if not content:
            continue  # nothing to index again (LightRAG keeps such a row failed for review)
        updates[doc_id], _, _ = rag._build_pending_reset_update(row, content)
        retries[doc_id] = retries.get(doc_id, 0) + 1
    if updates:
        await rag.doc_status.upsert(updates)
        log.warning("%d document(s) failed while the storage was unreachable; indexing them again", len(updates))
    return len(updates)
