"""Building LightRAG the one way this project builds it: the import (offline, contained) and
an initialized instance with our chunker, guards around its saves and the embedded model's sizes.

The worker's engine, the benchmarks' direct floor and the profiling script all use it.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rag_worker.chunking import chunking_func
from rag_worker.embedded.models import MAX_TOKEN_SIZE
from rag_worker.query_cache import report_chunk_scores
from rag_worker.storage.chunk_lists import keep_chunk_lists_in_rows
from rag_worker.storage.chunk_vectors import search_kept_first
from rag_worker.storage.exact_match import add_named_chunks, exact_term_rerank
from rag_worker.storage.hot_paths import use_cheaper_hot_paths
from rag_worker.storage.hybrid import attach_lexical_index
from rag_worker.storage.nano_lookup import index_row_lookups
from rag_worker.storage.node_degrees import keep_node_degrees
from rag_worker.storage.pg_client import repair_reconnect, uses_postgres_client
from rag_worker.storage.relation_keywords import bound_derived_keywords, keep_relation_keywords_bounded
from rag_worker.storage.vector_flush import embed_outside_locks

log = logging.getLogger("rag_worker.storage.lightrag_setup")


def import_lightrag() -> str:
    """Import LightRAG and its local storages (proving they load offline); returns its version.

    Blocking (about a second): run it in a thread."""
    _contain_import_side_effects()
    import lightrag
    import lightrag.kg.json_doc_status_impl  # noqa: F401
    import lightrag.kg.json_kv_impl  # noqa: F401
    import lightrag.kg.nano_vector_db_impl  # noqa: F401
    import lightrag.kg.networkx_impl  # noqa: F401
    from lightrag import LightRAG  # noqa: F401

    _route_lightrag_logs()
    _graph_saves_through_memory()
    index_row_lookups()
    use_cheaper_hot_paths()
    bound_derived_keywords()
    return str(lightrag.__version__)


def _graph_saves_through_memory() -> None:
    """LightRAG saves the NetworkX graph with `networkx.write_graphml`, which streams lxml's
    writer straight into the file.  When that file write fails (a full disk), lxml is left
    with a broken writer that segfaults the worker when the garbage collector frees it
    later (seen under the disk-full fault test).  Serialize into memory instead and write
    the bytes ourselves: a failed write is then a plain OSError, which LightRAG reports."""
    import networkx
    from networkx.readwrite import graphml

    if getattr(networkx.write_graphml, "through_memory", False):
        return

    def write_graphml(graph: Any, path: Any, **options: Any) -> None:
        buffer = io.BytesIO()
        graphml.write_graphml_lxml(graph, buffer, **options)
        if isinstance(path, str | os.PathLike):
            with open(path, "wb") as handle:
                handle.write(buffer.getbuffer())
        else:
            path.write(buffer.getbuffer())

    write_graphml.through_memory = True  # type: ignore[attr-defined]
    networkx.write_graphml = write_graphml


def _route_lightrag_logs() -> None:
    """LightRAG logs through its own stderr handler without our correlation ids and chats at
    INFO on every query: send its records through ours, warnings and up unless DEBUG."""
    lightrag_log = logging.getLogger("lightrag")
    for handler in list(lightrag_log.handlers):
        lightrag_log.removeHandler(handler)
    lightrag_log.propagate = True
    root_level = logging.getLogger().level
    lightrag_log.setLevel(logging.DEBUG if root_level <= logging.DEBUG else logging.WARNING)


def _contain_import_side_effects() -> None:
    # LightRAG raises SystemExit at construction when this deprecated variable is set.
    if os.environ.pop("ENTITY_TYPES", None) is not None:
        log.warning("ignoring ENTITY_TYPES: LightRAG 1.5.7 no longer supports it")


EMBEDDED_CHUNK_OVERLAP = 40


def lightrag_kwargs(components: dict[str, Any]) -> dict[str, Any]:
    """Construction options that depend on the configured models."""
    kwargs: dict[str, Any] = dict(components.get("lightrag_kwargs") or {})
    # LightRAG's own chunker decodes token-id slices and cuts multi-byte characters (U+FFFD).
    kwargs.setdefault("chunking_func", chunking_func)
    # Passages that contain the question's names verbatim first (exact_match); its scores lie in
    # (0, 1], so no passage falls under the minimum.
    kwargs.setdefault("rerank_model_func", exact_term_rerank)
    kwargs.setdefault("min_rerank_score", 0.0)
    if str(components.get("embedding_model_id", "")).startswith("onnx:"):
        # The packaged model reads 256 word pieces: LightRAG would split longer chunks
        # before embedding anyway, so chunk at that size from the start.
        kwargs.setdefault("chunk_token_size", MAX_TOKEN_SIZE)
        kwargs.setdefault("chunk_overlap_token_size", EMBEDDED_CHUNK_OVERLAP)
        # Larger batches measured 8-12 % faster with the local model (remote APIs may cap them).
        kwargs.setdefault("embedding_batch_num", 64)
        # Our lanes (EmbeddingLanes) are the model's real queue. LightRAG's own queue must not
        # hold a question back once indexing fills its slots (8 by default), and its timeout
        # must not count the wait in our indexing lane: a local model does not hang (the
        # front's ping catches a stuck worker), and an expired wait failed whole documents
        # with a misleading "LLM did not answer" under CPU load.
        kwargs.setdefault("embedding_func_max_async", 64)
        kwargs.setdefault("default_embedding_timeout", 900)
        # Each document's commit embeds again every entity and relation it merged into; merges
        # that land between two commits are embedded once. 8 documents in flight instead of
        # LightRAG's 3: entity texts 48.8 -> 36.5 per two-page document, ~10 % less indexing
        # CPU (scripts/profile_indexing.py, 20 documents). MAX_PARALLEL_INSERT still wins.
        if "MAX_PARALLEL_INSERT" not in os.environ:
            kwargs.setdefault("max_parallel_insert", 8)
    return kwargs


async def new_lightrag(
    working_dir: Path | str, workspace: str, components: dict[str, Any], *, read_only: bool = False, **overrides: Any
) -> Any:
    """An initialized LightRAG instance built the one way this project builds them
    (the worker, the benchmarks' direct floor and the profiling script all use it).

    `read_only`: a reader of a shared knowledge base another process writes; its lexical index
    is opened for reading only (never built, never written)."""
    from lightrag import LightRAG  # deferred: importing LightRAG takes about a second (import_lightrag)

    if uses_postgres_client(overrides):
        repair_reconnect()  # before the first storage builds LightRAG's client (pg_client)
    rag = LightRAG(
        working_dir=str(working_dir),
        workspace=workspace,
        embedding_func=components["embedding_func"],
        llm_model_func=components["llm_model_func"],
        tokenizer=components["tokenizer"],
        enable_llm_cache=False,  # the answer cache ignores new documents (reference)
        enable_llm_cache_for_entity_extract=True,  # delete/rebuild relies on it
        **{**lightrag_kwargs(components), **overrides},
    )
    if adapt := components.get("adapt_lightrag"):
        adapt(rag)  # the built-in extractor's summaries (extractor.adapt_lightrag)
    await rag.initialize_storages()
    await keep_chunk_lists_in_rows(rag, read_only=read_only)  # an entity's chunk ids appended to, not rewritten
    await keep_node_degrees(rag, read_only=read_only)  # relation counts kept by triggers, not counted per question
    embed_outside_locks(rag)  # a question must not wait for indexing's embeddings (vector_flush)
    search_kept_first(rag.chunks_vdb)  # a store the worker holds whole is searched exactly (chunk_vectors)
    add_named_chunks(rag)  # the passages of the entities a question names verbatim (exact_match)
    # A full-text index beside the vectors, fused with every vector search (hybrid).
    attach_lexical_index(rag, Path(working_dir) / workspace if workspace else Path(working_dir), read_only)
    keep_relation_keywords_bounded(rag)  # a relation's derived keywords: a bounded sample (after the mirror)
    report_chunk_scores(rag.chunks_vdb)  # a question's sources reuse LightRAG's chunk scores (query_cache)
    rag._query_done = _query_done_best_effort(rag)
    return rag


def _query_done_best_effort(rag: Any) -> Callable[[], Awaitable[None]]:
    """LightRAG ends every query by saving its LLM cache, which holds only extraction results
    here (the answer cache is off): when that save fails (a full disk) the query's answer
    still goes back, and the cache stays in memory for the next save that succeeds."""

    async def query_done() -> None:
        try:
            await rag.llm_response_cache.index_done_callback()
        except Exception as exc:
            log.warning("the LLM cache could not be saved after a query, which still answers: %s", exc)

    return query_done
