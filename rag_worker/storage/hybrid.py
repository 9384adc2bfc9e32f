"""Hybrid retrieval: the lexical index (`lexical_index`) kept beside LightRAG's three vector stores
and fused with their searches by reciprocal rank fusion, in every query mode.

* **Kept in step, entry by entry.** Each vector store's writes are mirrored as they happen:
  `upsert` stages the rows' text, `delete` / `delete_entity` stage their removal,
  `delete_entity_relation` removes an entity's relations. Every path that changes the vectors
  (indexing, deletes and the rebuild of shared entities, graph edits and merges) changes the
  lexical index the same way, with no rebuild. What is staged is committed in one transaction
  when the store commits (`index_done_callback`, once per document) and before any search:
  LightRAG upserts one entity or relation at a time, and a commit each (an fsync, ~18 ms on the
  event loop) cost more loop time than the rest of indexing's loop work together (py-spy,
  scripts/bench_engine.py).  It deletes a relation's row before each merge of it too: at 5,000
  documents those deletes, committed one at a time, were 9 % of the event loop's indexing work.
  An entry removed and not yet committed may still be found by another process's search; its
  row is gone, and LightRAG leaves it out.
* **Fused where LightRAG searches.** The chunk search (naive mode and mix's vector half), the
  entity search that seeds local mode and the relation search that seeds global mode each
  return the reciprocal-rank fusion of the vector ranking and the lexical one (Elasticsearch's,
  Weaviate's and Azure AI Search's standard: Σ weight / (60 + rank)). The lexical side searches
  the user's question (not LightRAG's keywords, which may drop a code or an address); hits on
  the question's identifiers and numbers weigh twice a vector or word hit.
* **Built once for an older knowledge base.** A knowledge base indexed before this build gets
  its lexical index when it opens, in the background, from the stored chunks and the graph;
  progress is logged and reported (`lexical_status`). Queries meanwhile fuse what is indexed.

The index is a file in the workspace's directory under WORKING_DIR, whatever the storages are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_worker.storage.exact_match import chunk_rows
from rag_worker.storage.lexical_index import FILE_NAME, Entry, Fts5LexicalIndex, Hit, Kind, LexicalIndex

log = logging.getLogger("rag_worker.storage.hybrid")

RRF_K = 60
IDENTIFIER_WEIGHT = 2.0
BUILD_BATCH = 500

_QUESTION: ContextVar[str | None] = ContextVar("lightrag_mcp_question_text", default=None)


@dataclass
class LexicalState:
    """A workspace's lexical index and its one-time build."""

    index: LexicalIndex
    building: asyncio.Task[None] | None = None
    done: int = 0
    total: int = 0
    removed: set[tuple[str, str]] = field(default_factory=set)  # deletes seen while building
    staged: dict[tuple[str, str], Entry] = field(default_factory=dict)  # mirrored upserts not yet committed
    forgotten: set[tuple[Kind, str]] = field(default_factory=set)  # mirrored deletes not yet committed

    def stage(self, entries: Sequence[Entry]) -> None:
        """Index `entries` at the next `commit` (a later upsert of the same key replaces them)."""
        self.staged.update(((entry.kind, entry.key), entry) for entry in entries)

    def commit(self) -> None:
        """Write what is staged, the deletes first, in one transaction."""
        if self.staged or self.forgotten:
            entries, self.staged = list(self.staged.values()), {}
            forgotten, self.forgotten = list(self.forgotten), set()
            _guarded(self.index.add, entries, forgotten)

    def status(self) -> dict[str, Any]:
        """What status and health report: entries, and the build's progress while it runs."""
        self.commit()
        if self.building is not None and not self.building.done():
            return {"state": "building", "entries": self.index.count(), "built": self.done, "to_build": self.total}
        return {"state": "ready" if self.index.built() else "incomplete", "entries": self.index.count()}

    def forget(self, kind: Kind, keys: Sequence[str]) -> None:
        """Remove `keys` from the index at the next `commit` (and keep a build going on from
        adding them back)."""
        if self.building is not None and not self.building.done():
            self.removed.update((kind, key) for key in keys)
        for key in keys:
            self.staged.pop((kind, key), None)
            self.forgotten.add((kind, key))

    async def ready(self) -> None:
        """Wait for the one-time build (if any) to finish."""
        if self.building is not None:
            await asyncio.shield(self.building)

    async def close(self) -> None:
        if self.building is not None and not self.building.done():
            self.building.cancel()
            await asyncio.gather(self.building, return_exceptions=True)
        self.commit()
        self.index.close()


def attach_lexical_index(rag: Any, directory: Path, read_only: bool = False) -> LexicalState:
    """Keep a lexical index for `rag` in `directory` and fuse it into its searches (`rag.lexical`).

    `read_only` (a reader of a shared knowledge base another process writes): searched, never
    built or written; the writer's index is fresh at every search."""
    state = LexicalState(Fts5LexicalIndex(directory / FILE_NAME, read_only=read_only))
    _mirror(rag.chunks_vdb, "passage", state)
    _mirror(rag.entities_vdb, "entity", state)
    _mirror(rag.relationships_vdb, "relation", state)
    _fuse(rag.chunks_vdb, "passage", state, _passage_rows(rag))
    _fuse(rag.entities_vdb, "entity", state, _entity_rows)
    _fuse(rag.relationships_vdb, "relation", state, _relation_rows)
    for method in ("aquery_data", "aquery_llm"):
        setattr(rag, method, _asking(getattr(rag, method)))
    if not read_only:
        state.building = asyncio.create_task(_catch_up(rag, state))
    rag.lexical = state
    return state


@contextmanager
def asking(question: str) -> Iterator[None]:
    """The searches made inside answer `question` (the lexical side searches its words)."""
    token = _QUESTION.set(question)
    try:
        yield
    finally:
        _QUESTION.reset(token)


def _asking(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def ask(query: str, *args: Any, **kwargs: Any) -> Any:
        with asking(query):
            return await method(query, *args, **kwargs)

    return ask


# --- mirroring the vector stores' writes ------------------------------------------------------


def _entries(kind: Kind, data: dict[str, dict[str, Any]]) -> list[Entry]:
    entries = []
    for key, row in data.items():
        text = str(row.get("content") or "")
        if kind == "entity":
            entries.append(Entry(kind, key, text, name=str(row.get("entity_name") or "")))
        elif kind == "relation":
            src, tgt = str(row.get("src_id") or ""), str(row.get("tgt_id") or "")
            entries.append(Entry(kind, key, text, name=f"{src} {tgt}", src=src, tgt=tgt))
        else:
            entries.append(Entry(kind, key, text, src=str(row.get("full_doc_id") or "")))
    return entries


def _mirror(store: Any, kind: Kind, state: LexicalState) -> None:
    """Make `store`'s writes reach the lexical index after they reach the store."""
    upsert, delete, index_done = store.upsert, store.delete, store.index_done_callback

    async def upsert_both(data: dict[str, dict[str, Any]]) -> Any:
        result = await upsert(data)
        state.stage(_entries(kind, data or {}))
        return result

    async def index_done_both() -> Any:
        result = await index_done()
        state.commit()
        return result

    async def delete_both(ids: list[str]) -> Any:
        result = await delete(ids)
        state.forget(kind, list(ids))
        return result

    store.upsert, store.delete, store.index_done_callback = upsert_both, delete_both, index_done_both
    if kind == "entity":
        delete_entity = store.delete_entity

        async def delete_entity_both(entity_name: str) -> Any:
            from lightrag.utils import compute_mdhash_id  # deferred: LightRAG is imported once, off the loop

            result = await delete_entity(entity_name)
            state.forget(kind, [compute_mdhash_id(entity_name, prefix="ent-")])
            return result

        store.delete_entity = delete_entity_both
    if kind == "relation":
        delete_relations = store.delete_entity_relation

        async def delete_relations_both(entity_name: str) -> Any:
            result = await delete_relations(entity_name)
            state.commit()  # staged relations of this entity are removed with the others
            _guarded(state.index.remove_relations_of, entity_name)
            return result

        store.delete_entity_relation = delete_relations_both


def _guarded(write: Callable[..., None], *args: Any) -> None:
    # The vectors are the record; a failed lexical write (a full disk) costs exact matches, not the write.
    try:
        write(*args)
    except Exception as exc:
        log.warning("the lexical index could not be updated: %s", exc)


# --- fusing the searches ----------------------------------------------------------------------

RowsFor = Callable[[list[Hit], Any], Awaitable[list[dict[str, Any]]]]


def fused_keys(vector: Sequence[str], identifiers: Sequence[str], words: Sequence[str]) -> list[str]:
    """Keys by weighted reciprocal rank fusion (ties: vector order, then lexical order)."""
    scores: dict[str, float] = {}
    for keys, weight in ((vector, 1.0), (identifiers, IDENTIFIER_WEIGHT), (words, 1.0)):
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
    return sorted(scores, key=lambda key: -scores[key])  # stable: first seen first among ties


def _fuse(store: Any, kind: Kind, state: LexicalState, rows_for: RowsFor) -> None:
    """Make `store.query` return its vector results fused with the lexical index's (`top_k` at most)."""
    search = store.query

    async def query(query: str, top_k: int, query_embedding: Any = None, **kwargs: Any) -> Any:
        found = list(await search(query, top_k=top_k, query_embedding=query_embedding, **kwargs) or ())
        try:
            state.commit()  # a search sees every write made before it
            identifiers, words = state.index.search(kind, _QUESTION.get() or query, top_k)
            if not identifiers and not words:
                return found
            by_key = {str(row.get("id")): row for row in found}
            order = fused_keys(list(by_key), [h.key for h in identifiers], [h.key for h in words])[:max(top_k, 1)]
            hits = {h.key: h for h in identifiers + words}
            new = await rows_for([hits[key] for key in order if key not in by_key], query_embedding)
            by_key.update((str(row["id"]), row) for row in new)
            return [by_key[key] for key in order if key in by_key]
        except Exception:  # an aid to the vector search, never a reason to fail it
            log.warning("lexical search failed; vector results only", exc_info=True)
            return found

    store.query = query


def _passage_rows(rag: Any) -> RowsFor:
    async def rows(hits: list[Hit], query_embedding: Any) -> list[dict[str, Any]]:
        return await chunk_rows(rag, [hit.key for hit in hits], query_embedding) if hits else []

    return rows


async def _entity_rows(hits: list[Hit], _: Any) -> list[dict[str, Any]]:
    return [{"id": hit.key, "entity_name": hit.name, "created_at": None} for hit in hits]


async def _relation_rows(hits: list[Hit], _: Any) -> list[dict[str, Any]]:
    return [{"id": hit.key, "src_id": hit.src, "tgt_id": hit.tgt, "created_at": None} for hit in hits]


# --- the one-time build of an older knowledge base ---------------------------------------------


async def _catch_up(rag: Any, state: LexicalState) -> None:
    """Build the index again when it misses a processed document: a knowledge base indexed before
    the lexical index existed, a build that was cut short, or documents another replica indexed
    (its WORKING_DIR holds its own index file)."""
    from lightrag.base import DocStatus  # deferred: LightRAG is imported once, off the loop

    try:
        docs = await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED])
        with_chunks = {doc_id for doc_id, doc in docs.items() if getattr(doc, "chunks_list", None)}
        if state.index.built() and with_chunks <= state.index.documents():
            return
        state.index.clear()
        await _build(rag, state, docs)
    except asyncio.CancelledError:
        raise
    except Exception:  # the next opening builds it again; queries use the vectors meanwhile
        log.exception("building the lexical index failed")
    finally:
        state.removed.clear()


async def _build(rag: Any, state: LexicalState, docs: dict[str, Any]) -> None:
    """Index what the knowledge base holds: its processed documents' chunks, its entities and relations."""
    chunk_ids = [str(c) for doc in docs.values() for c in (getattr(doc, "chunks_list", None) or [])]
    graph = rag.chunk_entity_relation_graph
    nodes, edges = (await graph.get_all_nodes(), await graph.get_all_edges()) if docs else ([], [])
    state.total = len(chunk_ids) + len(nodes) + len(edges)
    if state.total:
        log.info("building the lexical index of %s: %d passages, %d entities, %d relations",
                 rag.workspace or "(default)", len(chunk_ids), len(nodes), len(edges))

    async def passages(batch: list[str]) -> list[Entry]:
        rows = await rag.text_chunks.get_by_ids(batch)
        return [Entry("passage", key, str(row["content"]), src=str(row.get("full_doc_id") or ""))
                for key, row in zip(batch, rows, strict=True) if row and row.get("content")]

    async def entities(batch: list[dict[str, Any]]) -> list[Entry]:
        return [_node_entry(node) for node in batch]

    async def relations(batch: list[dict[str, Any]]) -> list[Entry]:
        return [_edge_entry(edge) for edge in batch]

    await _in_batches(rag, state, chunk_ids, passages)
    await _in_batches(rag, state, nodes, entities)
    await _in_batches(rag, state, edges, relations)
    state.index.mark_built()
    if state.total:
        log.info("lexical index of %s built: %d entries", rag.workspace or "(default)", state.index.count())


async def _in_batches(rag: Any, state: LexicalState, items: list[Any],
                      entries_of: Callable[[list[Any]], Awaitable[list[Entry]]]) -> None:
    """Index `items` a batch at a time, leaving what was deleted meanwhile out, progress logged."""
    for start in range(0, len(items), BUILD_BATCH):
        batch = items[start:start + BUILD_BATCH]
        state.index.add([e for e in await entries_of(batch) if (e.kind, e.key) not in state.removed])
        state.done += len(batch)
        if state.total >= 2 * BUILD_BATCH:
            log.info("lexical index of %s: %d of %d entries built", rag.workspace or "(default)", state.done, state.total)
        await asyncio.sleep(0)  # queries and indexing run between batches


def _node_entry(node: dict[str, Any]) -> Entry:
    from lightrag.utils import compute_mdhash_id

    name = str(node.get("entity_id") or node.get("id") or "")
    return Entry("entity", compute_mdhash_id(name, prefix="ent-"), f"{name}\n{node.get('description') or ''}", name=name)


def _edge_entry(edge: dict[str, Any]) -> Entry:
    from lightrag.utils import compute_mdhash_id

    src, tgt = sorted((str(edge.get("source") or ""), str(edge.get("target") or "")))
    text = f"{edge.get('keywords') or ''}\t{src}\n{tgt}\n{edge.get('description') or ''}"
    return Entry("relation", compute_mdhash_id(src + tgt, prefix="rel-"), text, name=f"{src} {tgt}", src=src, tgt=tgt)
