"""Which document ids and texts LightRAG's doc status may hold, kept in memory (issue 25).

Before an upload is queued it needs two answers: whether its document id has a status row (a
new version replaces it), and whether another document has its text (LightRAG refuses a second
copy).  On PostgreSQL each is a round trip to the database, and while LightRAG indexes both
waited 10–30 ms at 10,000 documents: most of an upload's time in the worker.

The process holding a workspace is its only writer (`rag_worker.storage.locks`).  So the rows
read when it opens, plus every row written through its doc-status storage since (recorded just
before the write: LightRAG's enqueue, its status changes, ours), are a superset of what it holds:
- an id or a text not in it is not in LightRAG: the upload reads nothing;
- one in it may be (a deleted document stays in it): the row is read as before.

Only where the rows live in a database (a class in `LOADERS`).  Elsewhere LightRAG keeps its
doc status in memory, and a lookup is no round trip.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any


class KnownDocuments:
    """Ids and content hashes LightRAG may hold (a superset: absence is certain, presence is not)."""

    def __init__(self, rows: Iterable[tuple[str, str | None]]) -> None:
        self._ids: set[str] = set()
        self._hashes: set[str] = set()
        self.add(rows)

    def add(self, rows: Iterable[tuple[str, str | None]]) -> None:
        """Record (document id, content hash) pairs LightRAG is about to hold."""
        for doc_id, content_hash in rows:
            self._ids.add(doc_id)
            if content_hash:
                self._hashes.add(content_hash)

    def may_hold(self, doc_id: str) -> bool:
        return doc_id in self._ids

    def may_hold_text(self, content_hash: str) -> bool:
        return content_hash in self._hashes

    def watch(self, doc_status: Any) -> None:
        """Record every row `doc_status` is given from now on, before it is written."""
        upsert = doc_status.upsert

        async def recording_upsert(data: dict[str, dict[str, Any]]) -> None:
            self.add((doc_id, row.get("content_hash")) for doc_id, row in data.items())
            await upsert(data)

        doc_status.upsert = recording_upsert


async def _pg_rows(doc_status: Any) -> list[tuple[str, str | None]]:
    rows = await doc_status.db.query(
        "SELECT id, content_hash FROM LIGHTRAG_DOC_STATUS WHERE workspace = $1", [doc_status.workspace], multirows=True
    )
    return [(row["id"], row["content_hash"]) for row in rows or []]


LOADERS: dict[str, Callable[[Any], Awaitable[list[tuple[str, str | None]]]]] = {"PGDocStatusStorage": _pg_rows}


async def load_known_documents(doc_status: Any) -> KnownDocuments | None:
    """What `doc_status` holds now, kept up to date with its writes; None where its rows are
    read without a round trip."""
    loader = LOADERS.get(type(doc_status).__name__)
    if loader is None:
        return None
    known = KnownDocuments(await loader(doc_status))
    known.watch(doc_status)
    return known
