#!/usr/bin/env python3
"""Profile indexing on the embedded default, in-process, exactly as the worker builds LightRAG.

Builds the components with ``rag_worker.bindings.build_components(load_settings(), limiter)``
and a ``LightRAG`` instance with the engine's own arguments (``rag_worker.storage.lightrag_setup.lightrag_kwargs``),
inserts a corpus, and prints where the time went:

* total seconds, chunks/s, documents/min, process CPU seconds and peak RSS;
* entities and relations in the graph;
* texts embedded per document by kind (chunks, entities, relations: one vector store each),
  their model tokens, the batch sizes LightRAG sent, the wall time each kind kept the model
  busy, and how many rows waiting for a vector at a commit carried the very content the
  store already held under that id (an unchanged entity or relation, embedded again);
* the model's own batches (``--model-stats``): texts, real and padded tokens, inference seconds;
* the wall time during which at least one embedding call was running (``embedding busy``)
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
  as separate documents;
* ``--bench-docs M``: the benchmark's M two-page PDFs (``scripts.corpus.bench_documents``, each
  with one fact only it states), read with ``extract_pdf`` inside the timed span as the
  benchmark's direct floor does; ``--queries`` then asks each document's question
  (``--questions``) in every mode and counts the answers found in the retrieved context.

Run from the project root::

    PYTHONPATH=. .venv/bin/python scripts/profile_indexing.py --pdf-chars 60000 --docs 50
    PYTHONPATH=. .venv/bin/python scripts/profile_indexing.py --pdf-chars 0 --docs 0 --bench-docs 20 --queries

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
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))


# ----------------------------------------------------------------------------- corpora
from scripts.corpus import PLANTED_ANSWER, PLANTED_QUESTION, bench_documents, generated_documents  # noqa: E402
from scripts.profile_instrumentation import (  # noqa: E402
    ModelStats,
    Stats,
    TruncationCounter,
    count_wordpieces,
    instrument,
    watch_model,
    watch_vector_stores,
)

#: A document to index: (file name, text, or a callable giving the text inside the timed span).
Doc = tuple[str, "str | Callable[[], str]"]
MODES = ("naive", "local", "global", "hybrid", "mix")


def real_world_text(chars: int) -> str:
    from rag_worker.ingest.pdf import extract_pdf
    from tests.fixtures.documents import real_world_pdf_path

    path = real_world_pdf_path()
    if path is None:
        raise SystemExit("the real-world PDF needs the z3c.rml package (make setup installs it)")
    return extract_pdf(path.read_bytes()).text[:chars]


def bench_corpus(count: int) -> tuple[list[Doc], list[tuple[str, str]]]:
    """The benchmark's two-page PDFs (text read inside the timed span) and their questions."""
    from rag_worker.ingest.pdf import extract_pdf

    docs = bench_documents(count)
    return ([(doc.name, lambda pdf=doc.pdf: extract_pdf(pdf).text) for doc in docs],
            [(doc.question, doc.answer) for doc in docs])


# ------------------------------------------------------------------------------- runs
#: --no-graph: index chunks only (the ceiling set by embedding the chunks themselves).
NO_GRAPH = False

#: Extra LightRAG keyword arguments from --set (experiments; the engine's own come first).
EXTRA_KWARGS: dict[str, Any] = {}

#: The model's batches (--model-stats), reset per corpus.
MODEL = ModelStats()

#: --dump-texts: where to write the texts each store embedded, call by call.
DUMP_TEXTS: Path | None = None


async def build_rag(working_dir: Path, workspace: str, components: dict[str, Any]) -> Any:
    from rag_worker.storage.lightrag_setup import new_lightrag

    # One workspace per corpus: LightRAG keeps JSON storages per workspace name.
    rag = await new_lightrag(working_dir, workspace, components, **EXTRA_KWARGS)
    return rag


async def check_queries(rag: Any, checks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Ask each question in every mode; an answer counts when it is in the retrieved context."""
    from lightrag import QueryParam

    results = []
    for question, expected in checks:
        for mode in MODES:
            started = time.perf_counter()
            data = await rag.aquery_data(question, QueryParam(mode=mode, enable_rerank=False))
            took = time.perf_counter() - started
            payload = data.get("data") or {}
            chunks = payload.get("chunks") or []
            entities = payload.get("entities") or []
            relations = payload.get("relationships") or []
            found_chunk = any(expected.lower() in str(c.get("content", "")).lower() for c in chunks)
            in_graph = any(expected.lower() in json.dumps(x, ensure_ascii=False).lower() for x in entities + relations)
            results.append({"question": question, "mode": mode, "status": data.get("status"),
                            "found_in_chunks": found_chunk, "found_in_graph": in_graph,
                            "chunks": len(chunks), "entities": len(entities), "relations": len(relations),
                            "seconds": round(took, 3), "top_entities": [e.get("entity_name") for e in entities[:5]]})
    return results


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def accuracy(query_results: list[dict[str, Any]]) -> dict[str, float]:
    """Share of questions whose answer was in the retrieved context, per mode."""
    by_mode: dict[str, list[bool]] = {}
    for q in query_results:
        by_mode.setdefault(q["mode"], []).append(q["found_in_chunks"] or q["found_in_graph"])
    return {mode: round(sum(hits) / len(hits), 3) for mode, hits in by_mode.items()}


async def run_corpus(label: str, docs: list[Doc], base_components: dict[str, Any],
                     work_root: Path, checks: list[tuple[str, str]], profile: str | None) -> dict[str, Any]:
    stats = Stats()
    MODEL.reset()  # the model's counters restart with each corpus
    components = instrument(base_components, stats)
    handler = TruncationCounter(stats)
    logging.getLogger("lightrag").addHandler(handler)
    working_dir = work_root / label
    rag = await build_rag(working_dir, f"bench_{label}", components)
    watch_vector_stores(rag, stats)
    profiler = cProfile.Profile() if profile else None
    try:
        load_before = os.getloadavg()[0]
        cpu_started = time.process_time()
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        texts = [text() if callable(text) else text for _, text in docs]
        await rag.apipeline_enqueue_documents(texts, ids=[f"doc-{i}" for i in range(len(docs))],
                                              file_paths=[name for name, _ in docs],
                                              # "!": chunks only, no entity extraction (--no-graph)
                                              process_options="!" if NO_GRAPH else "")
        await rag.apipeline_process_enqueue_documents()
        elapsed = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rest_rss_mb = _current_rss_mb()
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
    count_wordpieces(stats)
    if DUMP_TEXTS:
        DUMP_TEXTS.with_suffix(f".{label}.json").write_text(
            json.dumps({kind: store.batches for kind, store in stats.stores.items()}))
    return summarize(label, docs, texts, stats, {
        "doc_status": {k: v for k, v in counts.items() if v}, "errors": errors[:5], "chunks": chunks,
        "seconds": elapsed, "cpu_seconds": cpu_seconds, "load_average": [load_before, load_after],
        "peak_rss_mb": peak_rss_mb, "rest_rss_mb": rest_rss_mb,
        "entities": len(graph.nodes), "relations": len(graph.edges),
        "node_lengths": node_lengths, "edge_lengths": edge_lengths, "queries": query_results})


def summarize(label: str, docs: list[Doc], texts: list[str], stats: Stats, run: dict[str, Any]) -> dict[str, Any]:
    elapsed = run["seconds"]
    embed_busy = stats.embed_clock.busy
    n_docs = max(1, len(docs))
    stores = {}
    for kind, store in stats.stores.items():
        batches = sum(store.batch_sizes.values())
        stores[kind] = {
            "texts": store.texts, "texts_per_doc": round(store.texts / n_docs, 1),
            "upserts": store.upserts, "commits_with_work": store.flushes,
            "chars_mean": round(store.chars / max(1, store.texts)),
            "wordpieces_per_text": round(store.wordpieces / max(1, store.texts), 1),
            "batches": batches, "batch_size_mean": round(store.texts / max(1, batches), 1),
            "busy_s": round(store.clock.busy, 2),
            "waiting_rows": {"new": store.new_rows, "same_content": store.same_content,
                             "changed_content": store.changed_content},
            "changed_examples": store.changed_examples,
        }
    return {
        "corpus": label,
        "documents": len(docs),
        "characters": sum(len(t) for t in texts),
        "doc_status": run["doc_status"],
        "errors": run["errors"],
        "chunks": run["chunks"],
        "seconds": round(elapsed, 2),
        "chunks_per_s": round(run["chunks"] / elapsed, 2) if elapsed else None,
        "documents_per_min": round(len(docs) * 60 / elapsed, 1) if elapsed else None,
        "cpu_s": round(run["cpu_seconds"], 1),
        "cpu_documents_per_min": round(len(docs) * 60 / run["cpu_seconds"], 1) if run["cpu_seconds"] else None,
        "peak_rss_mb": round(run["peak_rss_mb"], 1),
        "rss_after_indexing_mb": round(run["rest_rss_mb"], 1),
        "load_average": [round(x, 2) for x in run["load_average"]],
        "entities": run["entities"],
        "relations": run["relations"],
        "entity_desc_chars_mean": round(sum(run["node_lengths"]) / max(1, len(run["node_lengths"]))),
        "entity_desc_chars_max": max(run["node_lengths"], default=0),
        "relation_desc_chars_mean": round(sum(run["edge_lengths"]) / max(1, len(run["edge_lengths"]))),
        "relation_desc_chars_max": max(run["edge_lengths"], default=0),
        "texts_embedded": stats.texts,
        "texts_embedded_per_doc": round(stats.texts / n_docs, 1),
        "wordpieces_embedded": stats.wordpieces,
        "embedded_chars_mean": round(stats.text_chars / max(1, stats.texts)),
        "embedded_chars_max": stats.max_chars,
        "by_kind": stores,
        "model": {"batches": MODEL.batches, "texts": MODEL.texts, "tokens": MODEL.tokens,
                  "padded_tokens": MODEL.padded_tokens,
                  "padding_share": round(1 - MODEL.tokens / MODEL.padded_tokens, 3) if MODEL.padded_tokens else None,
                  "inference_s": round(MODEL.seconds, 2),
                  "wall_s_by_parallel_inferences": {k: round(v, 2) for k, v in sorted(MODEL.parallel.items())}},
        "embedding_calls": stats.embed_clock.calls,
        "embedding_busy_s": round(embed_busy, 2),
        "embedding_share": round(embed_busy / elapsed, 3) if elapsed else None,
        "rest_s": round(elapsed - embed_busy, 2),
        "texts_per_embedding_s": round(stats.texts / embed_busy, 1) if embed_busy else None,
        "llm_calls": dict(stats.llm_kinds),
        "llm_busy_s": round(stats.llm_clock.busy, 2),
        "vdb_truncations": dict(stats.truncated),
        "accuracy": accuracy(run["queries"]),
        "queries": run["queries"],
    }


def print_report(result: dict[str, Any], verbose_queries: bool) -> None:
    print(f"\n=== {result['corpus']}: {result['documents']} document(s), {result['characters']:,} chars, "
          f"{result['chunks']} chunks ===")
    print(f"total {result['seconds']} s | {result['chunks_per_s']} chunks/s | "
          f"{result['documents_per_min']} documents/min | doc status {result['doc_status']}")
    print(f"process CPU {result['cpu_s']} s ({result['cpu_documents_per_min']} documents per CPU minute) | "
          f"RSS peak {result['peak_rss_mb']} MB, after indexing {result['rss_after_indexing_mb']} MB | 1-min load average {result['load_average'][0]} -> "
          f"{result['load_average'][1]} on {os.cpu_count()} cores (other processes distort wall times)")
    for error in result["errors"]:
        print(f"  error: {error}")
    print(f"graph: {result['entities']} entities (description mean {result['entity_desc_chars_mean']} / max "
          f"{result['entity_desc_chars_max']} chars), {result['relations']} relations (mean "
          f"{result['relation_desc_chars_mean']} / max {result['relation_desc_chars_max']} chars)")
    print(f"embedded {result['texts_embedded']} texts ({result['texts_embedded_per_doc']} per document) in "
          f"{result['embedding_calls']} calls, mean {result['embedded_chars_mean']} chars (max "
          f"{result['embedded_chars_max']}), {result['wordpieces_embedded']:,} model tokens; "
          f"{result['texts_per_embedding_s']} texts per busy second")
    for kind, info in result["by_kind"].items():
        rows = info["waiting_rows"]
        print(f"  {kind:<10} {info['texts']:>6} texts ({info['texts_per_doc']}/doc, {info['wordpieces_per_text']} "
              f"tokens/text, {info['batches']} batches of {info['batch_size_mean']}), busy {info['busy_s']} s; "
              f"{info['upserts']} upserts; waiting at {info['commits_with_work']} commits: {rows['new']} new, "
              f"{rows['same_content']} unchanged, {rows['changed_content']} changed")
    model = result["model"]
    if model["batches"]:
        print(f"model: {model['batches']} batches, {model['texts']} texts, {model['tokens']:,} tokens "
              f"+ padding {model['padding_share']:.1%}, {model['inference_s']} s in session.run (all threads); "
              f"wall seconds by inferences running at once {model['wall_s_by_parallel_inferences']}")
    print(f"time: embedding busy {result['embedding_busy_s']} s ({result['embedding_share']:.0%}), "
          f"rest {result['rest_s']} s (extractor busy {result['llm_busy_s']} s, calls {result['llm_calls']})")
    if result["vdb_truncations"]:
        print(f"LightRAG truncation warnings: {result['vdb_truncations']}")
    if result["accuracy"]:
        questions = len(result["queries"]) // len(MODES)
        print(f"answers found in the retrieved context ({questions} questions): {result['accuracy']}")
    if verbose_queries:
        for q in result["queries"]:
            print(f"  query [{q['mode']:<6}] {q['status']}: answer in chunks={q['found_in_chunks']} "
                  f"graph={q['found_in_graph']} ({q['chunks']} chunks, {q['entities']} entities, "
                  f"{q['relations']} relations, {q['seconds']} s) top={q['top_entities']}")


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    import anyio

    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, lightrag_kwargs

    import_lightrag()  # LightRAG's logs at WARNING, as in the worker
    # Its per-text truncation warnings are counted (see print_report), not printed.
    logging.getLogger("lightrag").propagate = False
    if args.model_stats:
        watch_model(MODEL)
    settings = load_settings()
    limiter = anyio.CapacityLimiter(settings.worker_threads)  # as rag_worker/server.py
    components = await build_components(settings, limiter)
    if components.get("llm_configured") or not str(components.get("embedding_model_id", "")).startswith("onnx:"):
        print("warning: not the embedded default (LLM_BINDING / EMBEDDING_BINDING are set)", file=sys.stderr)
    work_root = Path(tempfile.mkdtemp(prefix="profile-indexing-"))
    print(f"LightRAG arguments: {json.dumps({**lightrag_kwargs(components), **EXTRA_KWARGS}, default=str)}")
    corpora: list[tuple[str, list[Doc], list[tuple[str, str]]]] = []
    if args.pdf_chars:
        checks = [("What does the barChart tag create?", "two-dimensional bar chart")] if args.queries else []
        corpora.append((f"pdf{args.pdf_chars}", [("rml-reference.pdf", real_world_text(args.pdf_chars))], checks))
    if args.docs:
        generated: list[Doc] = list(generated_documents(args.docs, seed=args.seed, fmt=args.doc_format))
        checks = [(PLANTED_QUESTION, PLANTED_ANSWER)] if args.queries and args.docs > 17 else []
        corpora.append((f"docs{args.docs}", generated, checks))
    if args.bench_docs:
        docs, questions = bench_corpus(args.bench_docs)
        corpora.append((f"bench{args.bench_docs}", docs, questions[: args.questions] if args.queries else []))
    results = []
    try:
        for label, docs, checks in corpora:
            results.append(await run_corpus(label, docs, components, work_root, checks, args.cprofile))
            print_report(results[-1], args.verbose_queries)
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
    parser.add_argument("--bench-docs", type=int, default=0, help="the benchmark's two-page PDFs (0: skip)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", action="store_true", help="check retrieval in every query mode afterwards")
    parser.add_argument("--questions", type=int, default=20, help="--bench-docs questions asked by --queries")
    parser.add_argument("--verbose-queries", action="store_true", help="print every query's result")
    parser.add_argument("--model-stats", action="store_true", help="count the model's batches, tokens and padding")
    parser.add_argument("--dump-texts", metavar="FILE",
                        help="write the texts each vector store sent to the model, call by call, as JSON")
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

    json_path = Path(args.json).resolve() if args.json else None
    global DUMP_TEXTS
    DUMP_TEXTS = Path(args.dump_texts).resolve() if args.dump_texts else None
    os.chdir(tempfile.mkdtemp(prefix="profile-indexing-cwd-"))  # LightRAG reads ./.env
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    results = asyncio.run(main_async(args))
    if json_path:
        json_path.write_text(json.dumps(results, indent=2))
    if args.cprofile:
        for result in results:
            print(f"\n--- cProfile (event loop thread) {result['corpus']} ---")
            pstats.Stats(f"{args.cprofile}.{result['corpus']}.prof").sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
