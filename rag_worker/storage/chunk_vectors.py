"""A question's chunk similarities and chunk search on PostgreSQL: from the chunk vectors the
worker keeps, else by pgvector in the server (issue 25).

In the graph modes LightRAG ranks the passages of the entities and relations a question found by
their similarity to the question (`hot_paths.pick_in_one_pass`): at 5,000 documents 4,500-7,146
candidates for the entities' ranking.  pgvector computes those cosines in the server in about
13 ms a ranking, most of it finding the rows (half the chunk table's pages), and a question ranks
twice: in a hybrid question that was 27 of the engine's 55 ms of CPU.  Kept here as unit vectors,
the same ranking is one matrix product of the rows it needs, and the engine only answers a check
that they are still the stored ones.

**Reading a vector costs more than its cosine.**  Read into the worker, a vector costs about
8 us (the server's and the client's); its cosine in the server about 2.  So a ranking's candidates
that are not kept get their cosines from the server.  Those it had asked the server for before are
then read, in the background (`_fill_later`, one read at a time per store): a question never
waits for a read, a chunk only one question names is never read (at 5,000 documents two
questions share 30-45 % of their candidates), and those of the entities every question finds
are kept from the second question that names them.

**A store that fits is read whole, once.**  At a store's first ranking or search in a worker, when
all its vectors fit in what the worker's other stores leave of `KEPT_VECTORS`, they are read in the
background (`_read_all`: one scan of the table through a cursor).  At 5,000 documents (29,062
chunks) that took about 0.22 s of the worker's CPU (py-spy) and 0.25-0.31 s of the engine's
statement time, once; until then a ranking asked the server for its cosines and read the vectors
of each question's candidates that an earlier question had named (24 ms of the engine's time a
local question over a fresh worker's first ten; 3 ms once the store is read whole).  A larger
store keeps what the rankings need, as above.

**A store held whole is searched exactly.**  LightRAG's chunk search (naive and mix questions)
walks pgvector's HNSW index: at 5,000 documents it found 87.5 % of the ten nearest chunks, in
8-10 ms of the engine's time during questions.  While every stored vector of the store is kept
(`_Kept.whole`: as many kept as the table has rows, counted in the read's snapshot),
`search_kept_first` ranks them all in one matrix product instead (`nearest`: about 3 ms for
29,062 vectors), reads the rows found by id, and reports their cosines, so the sources' scores
read nothing more.  A check that sees documents change drops their vectors and the search goes
back to the server until `_catch_up` has read their chunks again by their status rows' chunk
lists (and those of documents still being indexed, whose chunk rows can come with another
document's commit), and counted the store's rows.  A chunk whose document has no status row is
never kept, so such a store stays searched by the server.

**When a kept vector is still the stored one.**  A chunk's id is its document's id and its place
(`doc-...-chunk-003`), so a new version of a document reuses its chunk ids with new texts.  But a
new version is indexed only once the old one is deleted (`intake.Intake.add`, `after_removal`),
and every write of a document's chunks is followed by a write of its doc-status row (LightRAG marks
it processed or failed; a delete removes the row).  So a question's first ranking reads the
workspace's doc-status version (`row_versions`: 2.5-3.3 ms of the engine's time at 5,000
documents, so once a question, `checking_once`); when it changed, it reads each row's transaction
id (`xmin`) and drops the vectors of every document whose row changed or went.  That sees another
process's writes too: the writer of a shared knowledge base, read by this one.  A chunk whose
document has no status row is never kept.  Between a document's chunk write and its status write
(or one's status write during a question) a ranking may use one of its chunks' former vectors: the
document is being indexed then, and its entities and texts are changing too.  Vectors read while
the version changed (a ranking's check ran during the read) are not kept.

At most `KEPT_VECTORS` are kept in a worker (48 MB of vectors; at 5,000 documents the worker held
about 70 MB more after 150 questions); when more would not fit, the rows of dropped vectors are
reused first (`_Kept.compact`), then all are dropped and kept again as questions need them.  Only
where LightRAG's doc status is in the same database (`PGDocStatusStorage`); otherwise the server
computes every cosine.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from rag_worker.query_cache import note_similarities
from rag_worker.storage.row_versions import version_sql

log = logging.getLogger(__name__)

#: Vectors kept in one worker, over all its knowledge bases: 48 MB of 384-dimension float32.
KEPT_VECTORS = 32_768
#: Most vectors a store may hold for all of them to be read at its first ranking (`_read_all`).
READ_ALL_AT_MOST = KEPT_VECTORS
#: Rows of that read fetched at a time: each page is unpacked and kept on the worker's event loop
#: (pages of 4,096 held it about 28 ms each at 5,000 documents; 1,024 a quarter of that).
READ_ALL_PAGE = 1_024
_FIRST_CAPACITY = 1_024
_DOC_STATUS = "LIGHTRAG_DOC_STATUS"  # LightRAG 1.5.7's table (`postgres_impl.NAMESPACE_TABLE_MAP`)
_VERSION_SQL = version_sql((_DOC_STATUS, "workspace=$1"))
#: Statuses after which a document's chunk rows change only with its status row (`DocStatus`).
_SETTLED = frozenset({"processed", "failed"})
#: The stores (their `_Kept`, by identity) a question's rankings checked already (`checking_once`).
_CHECKED: ContextVar[set[int] | None] = ContextVar("lightrag_mcp_chunk_vectors_checked", default=None)


def as_float32(vector: Any) -> np.ndarray:
    """A stored vector as float32: pgvector's codec (LightRAG registers it on every connection)
    gives a `Vector`."""
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


@dataclass
class _Kept:
    """One vector store's kept chunk vectors (unit length, a row each) and the doc-status rows
    they were checked against."""

    version: str | None = None
    doc_stamps: dict[str, str] = field(default_factory=dict)  # document id -> its status row's xmin
    rows: dict[str, int] = field(default_factory=dict)  # chunk id -> row of `matrix`
    doc_chunks: dict[str, list[str]] = field(default_factory=dict)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    used: int = 0
    #: Changes whenever the version or the rows change: vectors read across a change are not kept.
    generation: int = 0
    filling: asyncio.Task[None] | None = None
    read_all_tried: bool = False
    ids: list[str] = field(default_factory=list)  # row of `matrix` -> chunk id
    #: The generation at which every stored vector of the store is kept (`nearest` ranks them all).
    whole: int | None = None
    #: Documents whose chunks a store held whole has still to read after a check (`_catch_up`).
    behind: set[str] = field(default_factory=set)
    catching: asyncio.Task[None] | None = None
    #: The last question's unit vector (as bytes) and its similarity to every kept row (`_scores`).
    scored: tuple[bytes, np.ndarray] | None = None
    #: Chunks a ranking asked the server for once (their vectors are read the second time).
    seen: set[str] = field(default_factory=set)

    def drop(self, doc_ids: list[str]) -> None:
        for doc_id in doc_ids:
            for chunk_id in self.doc_chunks.pop(doc_id, ()):
                self.rows.pop(chunk_id, None)

    def clear(self) -> None:
        self.scored = None
        self.rows.clear()
        self.doc_chunks.clear()
        self.ids.clear()
        self.used = 0
        self.generation += 1
        self.behind.clear()

    def compact(self) -> None:
        """Close the gaps the dropped vectors left in `matrix` (one copy of the kept rows)."""
        if len(self.rows) == self.used:
            return
        positions = np.fromiter(self.rows.values(), dtype=np.intp, count=len(self.rows))
        self.matrix[: len(positions)] = self.matrix[positions]
        self.scored = None
        self.ids = list(self.rows)
        self.rows = {chunk_id: position for position, chunk_id in enumerate(self.ids)}
        self.used = len(self.ids)

    def add(self, chunk_ids: list[str], doc_ids: list[str], vectors: np.ndarray, room: int = 0) -> None:
        """Keep `vectors`; when the matrix grows, it grows to hold at least `room` in all (one move
        for a read of many)."""
        if vectors.shape[1] != self.matrix.shape[1]:  # the first vectors
            self.clear()
            self.matrix = np.zeros((0, vectors.shape[1]), dtype=np.float32)
        needed = self.used + len(chunk_ids)
        if needed > len(self.matrix):
            capacity = max(_FIRST_CAPACITY, 2 * len(self.matrix))
            while capacity < max(needed, room):
                capacity *= 2
            grown = np.empty((min(capacity, KEPT_VECTORS), vectors.shape[1]), dtype=np.float32)
            grown[: self.used] = self.matrix[: self.used]
            self.matrix = grown
        self.matrix[self.used : needed] = vectors
        self.scored = None
        del self.ids[self.used :]
        self.ids.extend(chunk_ids)
        for position, (chunk_id, doc_id) in enumerate(zip(chunk_ids, doc_ids, strict=True), start=self.used):
            self.rows[chunk_id] = position
            self.doc_chunks.setdefault(doc_id, []).append(chunk_id)
        self.used = needed


#: By the identity of LightRAG's store (its dataclass is not hashable), while it lives.
_KEPT: dict[int, tuple[weakref.ref[Any], _Kept]] = {}


def _kept_for(storage: Any) -> _Kept:
    for key in [key for key, (store, _) in _KEPT.items() if store() is None]:
        del _KEPT[key]
    entry = _KEPT.get(id(storage))
    if entry is None or entry[0]() is not storage:
        entry = _KEPT[id(storage)] = (weakref.ref(storage), _Kept())
    return entry[1]


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its norm; a zero or non-finite row becomes zeros (similarity 0.0, as
    `lightrag.utils.cosine_similarity` gives)."""
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
        unit: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    unit[~np.isfinite(unit).all(axis=-1)] = 0.0
    return unit


@contextmanager
def checking_once() -> Iterator[None]:
    """The rankings made inside (a question's) check a store's doc status once, at the first;
    a scope opened inside another is the same one."""
    if _CHECKED.get() is not None:
        yield
        return
    token = _CHECKED.set(set())
    try:
        yield
    finally:
        _CHECKED.reset(token)


async def _check(storage: Any, kept: _Kept) -> None:
    """Drop the vectors of documents whose status row changed or went since the last check; a
    store held whole reads the changed documents' chunks again (`_catch_up`)."""
    row = await storage.db.query(_VERSION_SQL, [storage.workspace])
    version = str(row["version"]) if row else ""
    if version == kept.version:
        return
    rows = await storage.db.query(
        f"SELECT id, xmin::text AS stamp, status FROM {_DOC_STATUS} WHERE workspace=$1", [storage.workspace],
        multirows=True,
    )
    stamps = {str(row["id"]): str(row["stamp"]) for row in rows or ()}
    following = kept.whole == kept.generation or bool(kept.behind)
    kept.drop([doc_id for doc_id, stamp in kept.doc_stamps.items() if stamps.get(doc_id) != stamp])
    if following:
        kept.behind.update(doc_id for doc_id, stamp in stamps.items() if kept.doc_stamps.get(doc_id) != stamp)
        # A document being indexed gets its chunks' rows before its next status write (with the
        # commit of any other document in flight): read again too, as long as it is not settled.
        kept.behind.update(str(row["id"]) for row in rows or () if row["status"] not in _SETTLED)
    kept.doc_stamps, kept.version = stamps, version
    kept.generation += 1
    if kept.behind and (kept.catching is None or kept.catching.done()):
        kept.catching = asyncio.get_running_loop().create_task(_catch_up(storage, kept))


async def _in_engine(storage: Any, ids: list[str], question: np.ndarray) -> dict[str, float]:
    """pgvector's cosine of `question` to each committed row of `ids` in the server: an id and a
    number per row cross the socket.  A zero or non-finite vector gives 0.0."""
    # Two arrays in one row, not a row per id: 7,146 ids took 12.5 ms of the client's CPU as
    # rows, 4.6 ms as arrays.  In full precision (`::vector`): a half-precision column's question
    # would be rounded to half, and the scores would differ from the kept vectors' by about 1e-4.
    sql = (
        f"SELECT array_agg(id) AS ids, array_agg(1 - (content_vector::vector <=> $3::vector)) AS similarities "
        f"FROM {storage.table_name} WHERE workspace=$1 AND id = ANY($2) AND content_vector IS NOT NULL"
    )
    row = await storage.db.query(sql, [storage.workspace, ids, np.asarray(question, dtype=np.float32)])
    if not row or row.get("ids") is None:  # no row matched: array_agg of nothing is NULL
        return {}
    return dict(zip(row["ids"], map(_finite, row["similarities"]), strict=True))


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


#: The columns `_unpacked` reads.  pgvector's binary form (`vector_send`: a 2-byte dimension, 2
#: unused bytes, big-endian float32s) as bytes, joined into one array: 4,000 vectors in 9 ms instead
#: of 28 through the codec's object per row.  A half-precision column is sent in full (`::vector`).
_VECTOR_COLUMNS = "id, full_doc_id, vector_send(content_vector::vector) AS vector"


async def _read(storage: Any, ids: list[str]) -> tuple[list[str], list[str], np.ndarray]:
    """The committed vectors of `ids` (those stored) as unit rows, with their chunk and document ids."""
    rows = await storage.db.query(
        f"SELECT {_VECTOR_COLUMNS} FROM {storage.table_name} "
        f"WHERE workspace=$1 AND id = ANY($2) AND content_vector IS NOT NULL",
        [storage.workspace, ids],
        multirows=True,
    )
    return _unpacked(rows)


def _unpacked(rows: Sequence[Any] | None) -> tuple[list[str], list[str], np.ndarray]:
    """Rows of `id`, `full_doc_id` and `vector` (`vector_send`) as chunk ids, document ids and unit rows."""
    if not rows:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    dimension = int.from_bytes(rows[0]["vector"][:2], "big")
    stored = np.frombuffer(b"".join([row["vector"] for row in rows]), dtype=">f4").reshape(len(rows), dimension + 1)
    vectors = _unit_rows(stored[:, 1:].astype(np.float32))
    return [str(row["id"]) for row in rows], [str(row["full_doc_id"]) for row in rows], vectors


def _keep(kept: _Kept, chunk_ids: list[str], doc_ids: list[str], vectors: np.ndarray, room: int = 0) -> None:
    """Keep the read vectors not kept yet whose document's status row was checked (`room`: `_Kept.add`)."""
    new = [k for k, (chunk_id, doc_id) in enumerate(zip(chunk_ids, doc_ids, strict=True))
           if doc_id in kept.doc_stamps and chunk_id not in kept.rows]
    if not new or len(new) > KEPT_VECTORS:
        return
    if sum(other.used for _, other in _KEPT.values()) + len(new) > KEPT_VECTORS:
        for _, other in _KEPT.values():
            other.compact()
    if sum(other.used for _, other in _KEPT.values()) + len(new) > KEPT_VECTORS:
        for _, other in _KEPT.values():
            other.clear()
    kept.add([chunk_ids[k] for k in new], [doc_ids[k] for k in new], vectors[new], room)


async def _fill(storage: Any, kept: _Kept, ids: list[str]) -> None:
    # Read after the last check: kept unless another check runs during the read.
    generation = kept.generation
    try:
        chunk_ids, doc_ids, vectors = await _read(storage, ids)
    except Exception as error:  # noqa: BLE001 - the next ranking asks the server again
        log.warning("%s: chunk vectors not read (%s: %s)", storage.namespace, type(error).__name__, error)
        return
    if chunk_ids and kept.generation == generation:
        _keep(kept, chunk_ids, doc_ids, vectors)


@asynccontextmanager
async def _snapshot(storage: Any) -> AsyncIterator[tuple[Any, int]]:
    """A read-only connection whose reads all see one snapshot, and the store's rows in it, with
    or without a vector (counted from the index: 10-17 ms at 5,000 documents, 86 by the vectors)."""
    async with storage.db.pool.acquire() as connection, \
            connection.transaction(readonly=True, isolation="repeatable_read"):
        count = f"SELECT count(*) FROM {storage.table_name} WHERE workspace=$1"
        yield connection, int(await connection.fetchval(count, storage.workspace) or 0)


async def _read_all(storage: Any, kept: _Kept) -> None:
    """Read and keep every stored chunk vector of the store's workspace, when they fit in what the
    worker's other stores leave of `KEPT_VECTORS`: one scan of the table (3.8 us a row in the
    server at 5,000 documents, against 6 by id), `READ_ALL_PAGE` rows at a time through a cursor.
    When all were kept, the store is held whole (`_Kept.whole`)."""
    try:
        async with _snapshot(storage) as (connection, stored):
            others = sum(other.used for _, other in _KEPT.values() if other is not kept)
            if not stored or stored + others > min(READ_ALL_AT_MOST, KEPT_VECTORS):
                return
            generation = kept.generation  # a check during the read: what is read is not kept
            cursor = await connection.cursor(
                f"SELECT {_VECTOR_COLUMNS} FROM {storage.table_name} WHERE workspace=$1 AND content_vector IS NOT NULL",
                storage.workspace)
            while rows := await cursor.fetch(READ_ALL_PAGE):
                chunk_ids, doc_ids, vectors = _unpacked(rows)
                if kept.generation != generation:
                    kept.read_all_tried = False  # read again from a later ranking
                    return
                _keep(kept, chunk_ids, doc_ids, vectors, room=stored)
                generation = kept.generation  # (the first vectors kept set the matrix's width)
            if kept.generation != generation:
                kept.read_all_tried = False
                return
            _held_whole(kept, stored)
    except Exception as error:  # noqa: BLE001 - the rankings keep what they need, as they go
        log.warning("%s: chunk vectors not read (%s: %s)", storage.namespace, type(error).__name__, error)


def _scores(kept: _Kept, unit: np.ndarray) -> np.ndarray:
    """`unit`'s similarity to every kept row, in one product (about 3 ms for 29,062 rows), kept for
    the same question's next ranking or search: a question's two rankings of a store held whole
    gathered 4,500-7,146 rows each at 5,000 documents, 7.7 ms of the worker's CPU together."""
    question = unit.tobytes()
    if kept.scored is None or kept.scored[0] != question:
        kept.scored = (question, kept.matrix[: kept.used] @ unit)
    return kept.scored[1]


def _held_whole(kept: _Kept, stored: int) -> None:
    """The store is held whole when as many vectors are kept as it stored rows (in the read's
    snapshot): a row without a vector or whose document has no status row keeps it from being."""
    kept.compact()  # `nearest` ranks the whole matrix: no row of a dropped vector left in it
    kept.whole = kept.generation if len(kept.rows) == stored else None
    if kept.whole is None:
        log.info("chunk vectors: %d of %d rows kept; the server searches this store", len(kept.rows), stored)


async def _catch_up(storage: Any, kept: _Kept) -> None:
    """Read the chunks of the documents a store held whole saw change (`_Kept.behind`), by the
    chunk lists of their status rows, until none is left; then count the store's rows again."""
    lists = (f"SELECT jsonb_array_elements_text(chunks_list) FROM {_DOC_STATUS} "
             f"WHERE workspace=$1 AND id = ANY($2) AND jsonb_typeof(chunks_list) = 'array'")
    try:
        while kept.behind:
            docs, generation = sorted(kept.behind), kept.generation
            async with _snapshot(storage) as (connection, stored):
                rows = await connection.fetch(
                    f"SELECT {_VECTOR_COLUMNS} FROM {storage.table_name} WHERE workspace=$1 "
                    f"AND id = ANY(ARRAY({lists})) AND content_vector IS NOT NULL", storage.workspace, docs)
            if kept.generation != generation:
                continue  # a check ran during the read: its documents are behind too
            kept.behind.clear()
            if rows:
                _keep(kept, *_unpacked(rows))
            _held_whole(kept, stored)
            kept.read_all_tried = kept.whole is not None  # not whole: read all again at a later ranking
    except Exception as error:  # noqa: BLE001 - the server searches the store meanwhile
        kept.behind.clear()
        log.warning("%s: chunk vectors not read (%s: %s)", storage.namespace, type(error).__name__, error)


def _fill_later(storage: Any, kept: _Kept, ids: list[str]) -> None:
    """Read and keep the vectors of `ids` in the background, unless a read is under way."""
    if kept.filling is None or kept.filling.done():
        kept.filling = asyncio.get_running_loop().create_task(_fill(storage, kept, ids))


async def filled(storage: Any) -> None:
    """Return once the background read for `storage` (if any) is done."""
    task = _kept_for(storage).filling
    if task is not None:
        await asyncio.shield(task)


def keeps_vectors(storage: Any) -> bool:
    """Whether `storage`'s questions rank kept vectors: its doc status is in its database."""
    return bool(getattr(storage, "global_config", {}).get("doc_status_storage") == "PGDocStatusStorage")


async def _ready(storage: Any) -> _Kept:
    """The store's kept vectors, checked (once a question) against the doc status; at the store's
    first ranking or search, its vectors start being read whole in the background."""
    kept = _kept_for(storage)
    checked = _CHECKED.get()
    if checked is None or id(kept) not in checked:
        await _check(storage, kept)
        if checked is not None:
            checked.add(id(kept))
    if not kept.read_all_tried and (kept.filling is None or kept.filling.done()):
        kept.read_all_tried = True
        kept.filling = asyncio.get_running_loop().create_task(_read_all(storage, kept))
    return kept


async def similarities(storage: Any, ids: list[str], question: np.ndarray) -> dict[str, float]:
    """The cosine similarity of `question` to each committed row of `ids` of LightRAG's
    `PGVectorStorage` (rows without a vector left out): from kept vectors where they are, the
    rest by the server (their vectors then read to be kept)."""
    if not ids:
        return {}
    if not keeps_vectors(storage):
        return await _in_engine(storage, ids, question)
    kept = await _ready(storage)
    unit = _unit_rows(np.asarray(question, dtype=np.float32).reshape(1, -1))[0]
    # What is kept is ranked now, before any other await can change it.
    positions = np.fromiter(map(kept.rows.get, ids, repeat(-1)), dtype=np.intp, count=len(ids))
    found = positions >= 0
    named = ids if found.all() else [ids[k] for k in np.flatnonzero(found).tolist()]
    if not named:
        similarity = {}
    elif kept.whole == kept.generation:  # one product for all the question's rankings and its search
        similarity = dict(zip(named, _scores(kept, unit)[positions[found]].tolist(), strict=True))
    else:
        similarity = dict(zip(named, (kept.matrix[positions[found]] @ unit).tolist(), strict=True))
    if len(named) < len(ids):
        missing = [ids[k] for k in np.flatnonzero(~found).tolist()]
        in_engine = await _in_engine(storage, missing, question)
        similarity.update(in_engine)
        again = [chunk_id for chunk_id in in_engine if chunk_id in kept.seen]
        if len(kept.seen) + len(in_engine) > KEPT_VECTORS:
            kept.seen.clear()
        kept.seen.update(in_engine)
        if again:
            _fill_later(storage, kept, again)
    return similarity


async def nearest(storage: Any, question: np.ndarray, top_k: int) -> list[tuple[str, float]] | None:
    """The `top_k` chunks most similar to `question` above the store's cosine threshold, best
    first, with their similarities: exact, from the kept vectors, when the store is held whole
    (pgvector's HNSW search found 87.5 % of the ten nearest at 5,000 documents).  None: the
    store is not held whole now; the server searches it."""
    if not keeps_vectors(storage) or top_k <= 0:
        return None
    kept = await _ready(storage)
    if kept.whole != kept.generation:
        return None
    scores = _scores(kept, _unit_rows(np.asarray(question, dtype=np.float32).reshape(1, -1))[0])
    above = np.flatnonzero(scores > float(storage.cosine_better_than_threshold))
    if len(above) > top_k:
        above = above[np.argpartition(-scores[above], top_k - 1)[:top_k]]
    best = above[np.argsort(-scores[above], kind="stable")]
    return [(kept.ids[position], float(scores[position])) for position in best.tolist()]


#: The columns of LightRAG 1.5.7's chunk search (`postgres_impl.SQL_TEMPLATES["chunks"]`).
_SEARCH_COLUMNS = "id, content, file_path, EXTRACT(EPOCH FROM create_time)::BIGINT AS created_at"


async def searched_rows(storage: Any, found: list[tuple[str, float]]) -> list[dict[str, Any]]:
    """The rows LightRAG's chunk search returns, for the chunks `nearest` found, in its order
    (a chunk deleted since is left out)."""
    if not found:
        return []
    rows = await storage.db.query(
        f"SELECT {_SEARCH_COLUMNS} FROM {storage.table_name} WHERE workspace=$1 AND id = ANY($2)",
        [storage.workspace, [chunk_id for chunk_id, _ in found]], multirows=True)
    by_id = {str(row["id"]): dict(row) for row in rows or ()}
    return [by_id[chunk_id] for chunk_id, _ in found if chunk_id in by_id]


def search_kept_first(chunks_vdb: Any) -> None:
    """Make the chunk store's vector search (naive and mix questions) rank the kept vectors
    exactly while it is held whole (`nearest`), and report their similarities to the question
    (`query_cache.note_similarities`: the sources' scores need no second read); else LightRAG's."""
    if not keeps_vectors(chunks_vdb):
        return
    search = chunks_vdb.query

    async def query(query: str, top_k: int, query_embedding: Any = None, **kwargs: Any) -> Any:
        if query_embedding is None:  # as LightRAG's search embeds it (remembered: `query_cache`)
            from lightrag.constants import DEFAULT_QUERY_PRIORITY

            query_embedding = (await chunks_vdb.embedding_func(
                [query], context="query", _priority=DEFAULT_QUERY_PRIORITY))[0]
        found = await nearest(chunks_vdb, np.asarray(query_embedding, dtype=np.float32), top_k)
        if found is None:
            return await search(query, top_k=top_k, query_embedding=query_embedding, **kwargs)
        note_similarities(dict(found))
        return await searched_rows(chunks_vdb, found)

    chunks_vdb.query = query
