"""An entity's relation count kept in a row beside LightRAG's relations table (issue 25).

LightRAG ranks the relations of a local, hybrid or mix question by the relation counts of both
their ends (`_find_most_related_edges_from_entities`: every relation of the entities found, then
`edge_degrees_batch` over every entity at their other ends).  `PGTableGraphStorage` counts them
from the relations table at each question.  At 5,000 generated reports, where a company or a city
has about 1,500 relations, a question naming four of them reaches 2,100-3,900 relations, and the
entities at their ends have hundreds of thousands of relations between them.  Counting them for
the 5,503 entities at the ends of ten such entities' relations took 100-120 ms of the engine,
against 12 ms to read 5,503 kept counts.  The count grows with the knowledge base; the read
does not.

Here the count of each entity is a row of `TABLE`, kept by statement triggers on LightRAG's
relations table: whoever writes a relation (this worker, another user's process, LightRAG's
own migrations, a delete's cascade from an entity) changes the counts in the same transaction,
so a question reads the counts of the relations it sees.  A self-relation counts twice, as in
LightRAG's count.  The triggers and the first counts (of every knowledge base in the database)
are made in one transaction that holds writes to the relations table off meanwhile (the whole
opening took 0.39–0.46 s with it at 122,000 relations), the first time a writer opens a knowledge
base there; until then, and wherever they cannot be made (a server whose tables belong to another
role), LightRAG counts.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("rag_worker.storage.node_degrees")

TABLE = "lightrag_mcp_node_degrees"
EDGES = "lightrag_graph_edges"
#: How long the first opening waits for the writes to the relations table in flight.
INSTALL_LOCK_WAIT = "5s"

# The ends of the relations a statement added (`new_rows`) or removed (`old_rows`), one row per end.
_ENDS = "(SELECT workspace, namespace, src_id AS id FROM {rows} UNION ALL SELECT workspace, namespace, tgt_id FROM {rows})"
#: Each trigger's change of counts: rows (workspace, namespace, id, delta).  An update moves a count
#: only when it changes an end (LightRAG's upserts change a relation's properties).
_CHANGES = {
    "added": f"SELECT *, 1 AS delta FROM ({_ENDS.format(rows='new_rows')}) e",
    "removed": f"SELECT *, -1 AS delta FROM ({_ENDS.format(rows='old_rows')}) e",
    "moved": f"""SELECT *, -1 AS delta FROM ({_ENDS.format(rows='old_rows')} EXCEPT ALL {_ENDS.format(rows='new_rows')}) g
        UNION ALL SELECT *, 1 FROM ({_ENDS.format(rows='new_rows')} EXCEPT ALL {_ENDS.format(rows='old_rows')}) a""",
}
#: The transition tables each trigger names, and its event.
_ROWS = {"added": "NEW TABLE AS new_rows", "removed": "OLD TABLE AS old_rows",
         "moved": "OLD TABLE AS old_rows NEW TABLE AS new_rows"}
_EVENTS = {"added": "INSERT", "removed": "DELETE", "moved": "UPDATE"}
VERSION = 1  # in the names: a changed body is a new function and new triggers
TRIGGERS = [f"lightrag_mcp_degrees_{kind}_v{VERSION}" for kind in (*_CHANGES, "emptied")]


def _function(kind: str) -> str:
    """Each end's change added to its row, in key order (concurrent writers lock the rows they
    share in the same order: no deadlock); rows left at 0 go."""
    change = _CHANGES[kind]
    return f"""CREATE OR REPLACE FUNCTION lightrag_mcp_degrees_{kind}_v{VERSION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {TABLE} AS d (workspace, namespace, id, degree)
    SELECT workspace, namespace, id, sum(delta) FROM ({change}) c
    GROUP BY 1, 2, 3 HAVING sum(delta) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (workspace, namespace, id) DO UPDATE SET degree = d.degree + EXCLUDED.degree;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM {TABLE} d USING (SELECT DISTINCT workspace, namespace, id FROM ({change}) c) c
        WHERE d.workspace = c.workspace AND d.namespace = c.namespace AND d.id = c.id AND d.degree = 0;
    END IF;
    RETURN NULL;
END $$"""


_SETUP = [
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (workspace TEXT NOT NULL, namespace TEXT NOT NULL, id TEXT NOT NULL,
        degree INTEGER NOT NULL, PRIMARY KEY (workspace, namespace, id))""",
    *(_function(kind) for kind in _CHANGES),
    f"""CREATE OR REPLACE FUNCTION lightrag_mcp_degrees_emptied_v{VERSION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {TABLE};  -- every knowledge base's relations went
    RETURN NULL;
END $$""",
    # Counts a former version kept, or left when its triggers went: counted afresh.
    f"DELETE FROM {TABLE}",
    f"""INSERT INTO {TABLE} (workspace, namespace, id, degree)
        SELECT workspace, namespace, id, count(*) FROM ({_ENDS.format(rows=EDGES)}) e GROUP BY 1, 2, 3""",
    *(f"""CREATE TRIGGER lightrag_mcp_degrees_{kind}_v{VERSION} AFTER {_EVENTS[kind]} ON {EDGES}
          REFERENCING {_ROWS[kind]} FOR EACH STATEMENT EXECUTE FUNCTION lightrag_mcp_degrees_{kind}_v{VERSION}()"""
      for kind in _CHANGES),
    f"""CREATE TRIGGER lightrag_mcp_degrees_emptied_v{VERSION} AFTER TRUNCATE ON {EDGES}
        FOR EACH STATEMENT EXECUTE FUNCTION lightrag_mcp_degrees_emptied_v{VERSION}()""",
]
#: Triggers of a former version (their functions go with them; the counts are made afresh).
_FORMER = f"""SELECT t.tgname, p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = '{EDGES}'::regclass AND t.tgname LIKE 'lightrag\\_mcp\\_degrees\\_%' AND NOT t.tgname = ANY($1::text[])"""
_READY = f"""SELECT count(*) AS ready FROM pg_trigger
    WHERE tgrelid = to_regclass('{EDGES}') AND tgname = ANY($1::text[]) AND tgenabled <> 'D'"""
_READ = f"SELECT id, degree FROM {TABLE} WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])"


async def keep_node_degrees(rag: Any, *, read_only: bool = False) -> None:
    """Serve `rag.chunk_entity_relation_graph`'s relation counts from `TABLE` where it is LightRAG's
    `PGTableGraphStorage`: the triggers made by the first writer, read wherever they stand."""
    graph: Any = getattr(rag, "chunk_entity_relation_graph", None)
    if type(graph).__name__ != "PGTableGraphStorage" or getattr(graph, "_db", None) is None:
        return
    if not await _ready(graph._db) and (read_only or not await _install(graph._db)):
        return
    degrees = NodeDegrees(graph)
    graph.node_degrees_batch = degrees.node_degrees_batch
    graph.node_degree = degrees.node_degree


async def _ready(db: Any) -> bool:
    row = await db.query(_READY, [TRIGGERS])
    return int((row or {}).get("ready") or 0) == len(TRIGGERS)


async def _install(db: Any) -> bool:
    """The table, its first counts and the triggers, in one transaction that holds writes to the
    relations table off; False (LightRAG counts) when that cannot be done now."""

    async def install(connection: Any) -> bool:
        async with connection.transaction():
            await connection.execute(f"SET LOCAL lock_timeout = '{INSTALL_LOCK_WAIT}'")
            await connection.execute(f"LOCK TABLE {EDGES} IN SHARE ROW EXCLUSIVE MODE")
            if await connection.fetchval(_READY, TRIGGERS) == len(TRIGGERS):
                return False  # another process made them meanwhile
            for row in await connection.fetch(_FORMER, TRIGGERS):
                await connection.execute(f'DROP TRIGGER IF EXISTS "{row["tgname"]}" ON {EDGES}')
                await connection.execute(f'DROP FUNCTION IF EXISTS "{row["proname"]}"()')
            for statement in _SETUP:
                await connection.execute(statement)
            return True

    started = time.monotonic()
    try:
        if await db._run_with_retry(install):
            log.info("relation counts kept in %s from now on (made in %.2fs)", TABLE, time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001 - a speed-up, never a reason to fail the opening
        log.warning("relation counts not kept (LightRAG counts them at each question): %s", exc)
        return False
    return True


class NodeDegrees:
    """`PGTableGraphStorage.node_degrees_batch` and `node_degree`, read from `TABLE`."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    async def node_degrees_batch(self, node_ids: list[str]) -> dict[str, int]:
        if not node_ids:
            return {}
        rows = await self.graph._fetch(_READ, self.graph.workspace, self.graph.namespace, list(node_ids))
        degrees = dict.fromkeys(node_ids, 0)
        degrees.update((row["id"], int(row["degree"])) for row in rows)
        return degrees

    async def node_degree(self, node_id: str) -> int:
        return (await self.node_degrees_batch([node_id]))[node_id]
