"""Deletes that started and were not seen through, so a killed worker's delete is finished.

LightRAG's delete touches several stores and saves them together at the end; a worker killed
in the middle of that save can leave a document listed as processed whose passages are gone.
So the id is written down (durably) before LightRAG starts and crossed out when it reports
the document gone; a workspace that opens with ids still written down deletes them, in the
background before indexing resumes (`rag_worker.storage.removal.finish_interrupted_deletes`).
The caller asked for the delete, so finishing it is the consistent outcome; LightRAG's own delete
journal makes the retry safe.
"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson

from rag_worker.storage.durable import write_atomic

log = logging.getLogger("rag_worker.operations.deletion")

JOURNAL_FILE = "deletes-in-progress.json"


class DeleteJournal:
    """One workspace's started deletes (a small JSON file beside its data).  Each change reads and
    writes the file with no await between: one writer at a time on the worker's event loop."""

    def __init__(self, workspace_dir: Path) -> None:
        self.path = workspace_dir / JOURNAL_FILE

    def pending(self) -> list[str]:
        try:
            ids = orjson.loads(self.path.read_bytes()).get("document_ids")
        except FileNotFoundError:
            return []
        except (OSError, ValueError, AttributeError) as exc:
            log.error("the delete journal %s is unreadable (%s); interrupted deletes are not resumed", self.path.name, exc)
            return []
        return [str(doc_id) for doc_id in ids or []]

    def begin(self, doc_id: str) -> None:
        pending = self.pending()
        if doc_id not in pending:
            self._save([*pending, doc_id])

    def end(self, doc_id: str) -> None:
        pending = self.pending()
        if doc_id in pending:
            self._save([other for other in pending if other != doc_id])

    def _save(self, ids: list[str]) -> None:
        if ids:
            write_atomic(self.path, orjson.dumps({"document_ids": ids}))
        else:
            self.path.unlink(missing_ok=True)
