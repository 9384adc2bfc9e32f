"""Reading rows of LightRAG's local vector store by id without scanning the store.

`nano_vectordb.NanoVectorDB.get(ids)` (0.0.4.3, under LightRAG 1.5.7's `NanoVectorDBStorage`)
compares every row of the store with every id asked for: O(rows x ids) per call. Questions call
it for each chunk whose vector they score (LightRAG's VECTOR chunk picking in local/global/mix,
the relevance scores, the lexical index's passages), so a question's cost grew with the size of
the knowledge base: ~2 ms a call at 2,000 chunks, ~20 ms at 20,000. :func:`index_row_lookups`
makes `get` look rows up by position, kept per store and checked at every use, with the same
result (the rows found, in store order).

The store keeps a row at its position when it is updated, appends new rows, and replaces its
row list on delete: a position map is valid while the list is the same object of the same length,
and each position is checked against the row's id before use, so a stale map is never believed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_ID = "__id__"


class _Positions:
    """Where each id's row is in one store's row list (rebuilt when the list changes)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] | None = None
        self.length = -1
        self.where: dict[Any, int] = {}

    def find(self, rows: list[dict[str, Any]], ids: Iterable[Any]) -> list[dict[str, Any]]:
        if rows is not self.rows or len(rows) != self.length:
            self._rebuild(rows)
        found: set[int] = set()
        for key in ids:
            at = self.where.get(key)
            if at is not None and (at >= len(rows) or rows[at].get(_ID) != key):
                self._rebuild(rows)  # changed in a way the store never does: believe the rows
                at = self.where.get(key)
            if at is not None:
                found.add(at)
        return [rows[at] for at in sorted(found)]

    def _rebuild(self, rows: list[dict[str, Any]]) -> None:
        self.rows, self.length = rows, len(rows)
        self.where = {row.get(_ID): at for at, row in enumerate(rows)}


def index_row_lookups() -> None:
    """Make `NanoVectorDB.get` find rows by position instead of scanning (idempotent)."""
    from nano_vectordb import NanoVectorDB

    if getattr(NanoVectorDB.get, "by_position", False):
        return

    def get(self: Any, ids: Iterable[Any]) -> list[dict[str, Any]]:
        positions: _Positions | None = self.__dict__.get("_lightrag_mcp_positions")
        if positions is None:
            positions = self.__dict__["_lightrag_mcp_positions"] = _Positions()
        return positions.find(self._NanoVectorDB__storage["data"], ids)

    get.by_position = True  # type: ignore[attr-defined]
    NanoVectorDB.get = get
