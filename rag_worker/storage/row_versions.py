"""A value that changes whenever some PostgreSQL rows do, in one aggregate query.

Per selection of rows: their count and the sum of their transaction ids (`xmin`), which any
insert, update or delete changes.  What reads a whole store on every call (the graph tools'
snapshot, the document listing) keeps what it built while this value stays the same; a write
between the version and the read only costs one more read later, never a stale answer.
"""

from __future__ import annotations


def version_sql(*selections: tuple[str, str]) -> str:
    """`SELECT ... AS version` over (table, WHERE condition) pairs."""
    parts = [
        f"(SELECT count(*)::text || ':' || coalesce(sum(xmin::text::bigint), 0)::text FROM {table} WHERE {where})"
        for table, where in selections
    ]
    return "SELECT " + " || '/' || ".join(parts) + " AS version"
