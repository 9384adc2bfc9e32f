#!/usr/bin/env python3
"""Profile indexing on the embedded default, in-process, exactly as the worker builds LightRAG.

Builds the components with ``rag_worker.bindings.build_components(load_settings(), limiter)``
and a ``LightRAG`` instance with the engine's own arguments (``rag_worker.storage.lightrag_setup.lightrag_kwargs``),
inserts a corpus, and prints where the time went:

* total seconds, chunks/s, documents/min;
* entities and relations in the graph;
* texts embedded (by vector store: chunks, entities, relationships), their mean length, and
  the wall time during which at least one embedding call was running (``embedding busy``)
  against the rest (extractor, LightRAG's merge and storage work);
* LightRAG's "VDB content truncated" warnings (texts longer than the embedding window);
* optionally (``--queries``) a retrieval check in every query mode.

Corpora (each indexed into its own fresh workspace, one after the other):

* ``--pdf-chars N``: the first N characters of the real-world PDF (the z3c.RML manual,
  ``tests.fixtures.documents.real_world_pdf_path``) read by ``rag_worker.ingest.extract_pdf``,
  inserted as one document;
* ``--docs M``: M generated two-page documents with varied vocabulary (people, organisations,
  places, products, events and a wide topical vocabulary, recurring across documents), written
  to PDF with ``tests.fixtures.documents.make_pdf`` and read back with ``extract_pdf``
  (``--doc-format text`` skips the PDF round trip and keeps Markdown headings), enqueued together
  as separate documents.

Run from the project root::

    PYTHONPATH=. .venv/bin/python scripts/profile_indexing.py --pdf-chars 60000 --docs 50

The script changes into a temporary directory first (LightRAG reads ``./.env``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))


# ----------------------------------------------------------------------------- corpora
from scripts.corpus import PLANTED_ANSWER, PLANTED_QUESTION, generated_documents  # noqa: E402
from scripts.profile_instrumentation import Stats, TruncationCounter, instrument, patch_vector_store  # noqa: E402


def real_world_text(chars: int) -> str:
    from rag_worker.ingest.pdf import extract_pdf
    from tests.fixtures.documents import real_world_pdf_path

    path = real_world_pdf_path()
    if path is None:
        raise SystemExit("the real-world PDF needs the z3c.rml package (make setup installs it)")
    return extract_pdf(path.read_bytes()).text[:chars]


# ------------------------------------------------------------------------------- runs
#: --no-graph: index chunks only (the ceiling set by embedding the chunks themselves).
NO_GRAPH = False

#: Extra LightRAG keyword arguments from --set (experiments; the engine's own come first).
EXTRA_KWARGS: dict[str, Any] = {}


async def build_rag(working_dir: Path, workspace: str, components: dict[str, Any]) -> Any:
    from rag_worker.storage.lightrag_setup import new_lightrag

    # One workspace per corpus: LightRAG keeps JSON storages per workspace name.
    rag = await new_lightrag(working_dir, workspace, components, **EXTRA_KWARGS)
    return rag


async def check_queries(rag: Any, checks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    from lightrag import QueryParam

    results = []
    for question, expected in checks:
        for mode in ("naive", "local", "global", "hybrid", "mix"):
            started = time.perf_counter()
            data = await rag.aquery_data(question, QueryParam(mode=mode, enable_rerank=False))
            took = time.perf_counter() - started
            payload = data.get("data") or {}
            chunks = payload.get("chunks") or []
            found_chunk = any(expected.lower() in str(c.get("content", "")).lower() for c in chunks)
            entity_hits = [e.get("entity_name") for e in payload.get("entities") or []]
            relation_hits = payload.get("relationships") or []
            in_graph = any(expected.lower() in json.dumps(x, ensure_ascii=False).lower()
                           for x in (payload.get("entities") or []) + relation_hits)
            results.append({"question": question, "mode": mode, "status": data.get("status"),
                            "found_in_chunks": found_chunk, "found_in_graph": in_graph,
                            "chunks": len(chunks), "entities": len(entity_hits),
                            "relations": len(relation_hits), "seconds": round(took, 2),
                            "top_entities": entity_hits[:5]})
    return results


async def run_corpus(label: str, docs: list[tuple[str, str]], base_components: dict[str, Any],
                     work_root: Path, checks: list[tuple[str, str]], profile: str | None) -> dict[str, Any]:
    global CURRENT
    stats = CURRENT = Stats()
    components = instrument(base_components, stats)
    handler = TruncationCounter(stats)
    logging.getLogger("lightrag").addHandler(handler)
    working_dir = work_root / label
    rag = await build_rag(working_dir, f"bench_{label}", components)
    profiler = cProfile.Profile() if profile else None
    try:
        total_chars = sum(len(text) for _, text in docs)
        load_before = os.getloadavg()[0]
        cpu_started = time.process_time()
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        await rag.apipeline_enqueue_documents([text for _, text in docs], ids=[f"doc-{i}" for i in range(len(docs))],
                                              file_paths=[name for name, _ in docs],
                                              # "!": chunks only, no entity extraction (--no-graph)
                                              process_options="!" if NO_GRAPH else "")
        await rag.apipeline_process_enqueue_documents()
        elapsed = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        load_after = os.getloadavg()[0]
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{label}.prof")
        counts = await rag.doc_status.get_status_counts()
        rows = await rag.doc_status.get_by_ids([f"doc-{i}" for i in range(len(docs))])
        chunks = sum(int((row or {}).get("chunks_count") or 0) for row in rows)
        errors = [str(row.get("error_msg"))[:300] for row in rows if row and row.get("error_msg")]
        graph = await rag.chunk_entity_relation_graph.get_knowledge_graph("*", max_depth=100, max_nodes=10**9)
        node_lengths = [len(n.properties.get("description", "")) for n in graph.nodes]
        edge_lengths = [len(e.properties.get("description", "")) for e in graph.edges]
        query_results = await check_queries(rag, checks) if checks else []
    finally:
        logging.getLogger("lightrag").removeHandler(handler)
        await rag.finalize_storages()
    embed_busy = stats.embed_clock.busy
    return {
        "corpus": label,
        "documents": len(docs),
        "characters": total_chars,
        "doc_status": {k: v for k, v in counts.items() if v},
        "errors": errors[:5],
        "chunks": chunks,
        "seconds": round(elapsed, 2),
        "chunks_per_s": round(chunks / elapsed, 2) if elapsed else None,
        "documents_per_min": round(len(docs) * 60 / elapsed, 1) if elapsed else None,
        "entities": len(graph.nodes),
        "relations": len(graph.edges),
        "entity_desc_chars_mean": round(sum(node_lengths) / max(1, len(node_lengths))),
        "entity_desc_chars_max": max(node_lengths, default=0),
        "relation_desc_chars_mean": round(sum(edge_lengths) / max(1, len(edge_lengths))),
        "relation_desc_chars_max": max(edge_lengths, default=0),
        "cpu_s": round(cpu_seconds, 1),
        "load_average": [round(load_before, 2), round(load_after, 2)],
        "texts_embedded": stats.texts,
        "wordpieces_embedded": stats.wordpieces,
        "embedded_chars_mean": round(stats.text_chars / max(1, stats.texts)),
        "embedded_chars_max": stats.max_chars,
        "embedded_by_store": {k: {"texts": v[0], "chars_mean": round(v[1] / max(1, v[0])), "wordpieces": v[2]}
                              for k, v in sorted(stats.by_store.items())},
        "upserts_by_store": dict(stats.upserts_by_store),
        "embedding_calls": stats.embed_clock.calls,
        "embedding_busy_s": round(embed_busy, 2),
        "embedding_share": round(embed_busy / elapsed, 3) if elapsed else None,
        "rest_s": round(elapsed - embed_busy, 2),
        "texts_per_embedding_s": round(stats.texts / embed_busy, 1) if embed_busy else None,
        "llm_calls": dict(stats.llm_kinds),
        "llm_busy_s": round(stats.llm_clock.busy, 2),
        "vdb_truncations": dict(stats.truncated),
        "queries": query_results,
    }


def print_report(result: dict[str, Any]) -> None:
    print(f"\n=== {result['corpus']}: {result['documents']} document(s), {result['characters']:,} chars, "
          f"{result['chunks']} chunks ===")
    print(f"total {result['seconds']} s | {result['chunks_per_s']} chunks/s | "
          f"{result['documents_per_min']} documents/min | doc status {result['doc_status']}")
    print(f"process CPU {result['cpu_s']} s | 1-min load average {result['load_average'][0]} -> "
          f"{result['load_average'][1]} on {os.cpu_count()} cores (other processes distort wall times)")
    for error in result["errors"]:
        print(f"  error: {error}")
    print(f"graph: {result['entities']} entities (description mean {result['entity_desc_chars_mean']} / max "
          f"{result['entity_desc_chars_max']} chars), {result['relations']} relations (mean "
          f"{result['relation_desc_chars_mean']} / max {result['relation_desc_chars_max']} chars)")
    print(f"embedded {result['texts_embedded']} texts in {result['embedding_calls']} calls, mean "
          f"{result['embedded_chars_mean']} chars (max {result['embedded_chars_max']}), "
          f"{result['wordpieces_embedded']:,} model tokens; {result['texts_per_embedding_s']} texts per busy second")
    for store, info in result["embedded_by_store"].items():
        upserts = result["upserts_by_store"].get(store, 0)
        print(f"  {store:<16} {info['texts']:>6} texts embedded (mean {info['chars_mean']} chars, "
              f"{info['wordpieces']:,} model tokens), {upserts} upserts")
    print(f"time: embedding busy {result['embedding_busy_s']} s ({result['embedding_share']:.0%}), "
          f"rest {result['rest_s']} s (extractor busy {result['llm_busy_s']} s, calls {result['llm_calls']})")
    if result["vdb_truncations"]:
        print(f"LightRAG truncation warnings: {result['vdb_truncations']}")
    for q in result["queries"]:
        print(f"  query [{q['mode']:<6}] {q['status']}: answer in chunks={q['found_in_chunks']} "
              f"graph={q['found_in_graph']} ({q['chunks']} chunks, {q['entities']} entities, "
              f"{q['relations']} relations, {q['seconds']} s) top={q['top_entities']}")


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    import anyio

    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag

    import_lightrag()  # LightRAG's logs at WARNING, as in the worker
    # Its per-text truncation warnings are counted (see print_report), not printed.
    logging.getLogger("lightrag").propagate = False
    patch_vector_store()
    settings = load_settings()
    limiter = anyio.CapacityLimiter(settings.worker_threads)  # as rag_worker/server.py
    components = await build_components(settings, limiter)
    if components.get("llm_configured") or not str(components.get("embedding_model_id", "")).startswith("onnx:"):
        print("warning: not the embedded default (LLM_BINDING / EMBEDDING_BINDING are set)", file=sys.stderr)
    work_root = Path(tempfile.mkdtemp(prefix="profile-indexing-"))
    from rag_worker.storage.lightrag_setup import lightrag_kwargs

    print(f"LightRAG arguments: {json.dumps({**lightrag_kwargs(components), **EXTRA_KWARGS}, default=str)}")
    results = []
    try:
        if args.pdf_chars:
            text = real_world_text(args.pdf_chars)
            checks = [("What does the barChart tag create?", "two-dimensional bar chart")] if args.queries else []
            results.append(await run_corpus(f"pdf{args.pdf_chars}", [("rml-reference.pdf", text)],
                                            components, work_root, checks, args.cprofile))
            print_report(results[-1])
        if args.docs:
            docs = generated_documents(args.docs, seed=args.seed, fmt=args.doc_format)
            checks = [(PLANTED_QUESTION, PLANTED_ANSWER)] if args.queries and args.docs > 17 else []
            results.append(await run_corpus(f"docs{args.docs}", docs, components, work_root, checks, args.cprofile))
            print_report(results[-1])
    finally:
        if args.keep:
            print(f"\nworking directories kept in {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf-chars", type=int, default=60_000,
                        help="characters of the real-world PDF to index as one document (0: skip)")
    parser.add_argument("--docs", type=int, default=50, help="generated two-page documents (0: skip)")
    parser.add_argument("--doc-format", choices=("pdf", "text"), default="pdf",
                        help="generated documents through make_pdf/extract_pdf, or as Markdown text")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", action="store_true", help="check retrieval in every query mode afterwards")
    parser.add_argument("--cprofile", metavar="PREFIX", help="write cProfile stats of the event loop thread")
    parser.add_argument("--keep", action="store_true", help="keep the working directories")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="extra LightRAG(...) argument for an experiment (VALUE parsed as JSON if it can be)")
    parser.add_argument("--no-graph", action="store_true",
                        help="chunks only, no entity extraction: the ceiling set by embedding the chunks")
    args = parser.parse_args()
    global NO_GRAPH
    NO_GRAPH = args.no_graph
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            EXTRA_KWARGS[key] = json.loads(value)
        except json.JSONDecodeError:
            EXTRA_KWARGS[key] = value

    os.chdir(tempfile.mkdtemp(prefix="profile-indexing-cwd-"))  # LightRAG reads ./.env
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    results = asyncio.run(main_async(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if args.cprofile:
        for result in results:
            print(f"\n--- cProfile (event loop thread) {result['corpus']} ---")
            pstats.Stats(f"{args.cprofile}.{result['corpus']}.prof").sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
