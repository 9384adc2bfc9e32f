#!/usr/bin/env python3
"""Retrieval benchmark: planted-fact recall@10 in every query mode over the generated corpus.

Each of `scripts/corpus.py`'s bench documents states one fact no other document states ("The
HERON-1000 prototype was built by Alice Johnson in Oslo.") and asks for it ("Who built the
HERON-1000 prototype?"). The documents are indexed in this process exactly as the worker
indexes them (`build_components` + `new_lightrag`: built-in extractor, chunker, packaged
embedding model), and each question is asked in every mode with the query tool's own default
arguments (`protocol.methods.QUERY.with_defaults`, turned into LightRAG's `QueryParam` by the
worker's `query_param`), retrieval only, as without an LLM.

recall@10: the share of questions whose fact (the code and the builder's name) is in one of
the first 10 retrieved passages. `in context` also counts the fact found in a retrieved
entity or relation description.

The built index is kept under the temp directory, keyed by size, seed, embedding model and a
fingerprint of the code that shapes the index (extractor, chunker, corpus): a rerun only asks
the questions. `--rebuild` indexes again.

    nice -n 5 .venv/bin/python scripts/bench_retrieval.py [--sizes 100,1000] [--questions 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_support import MODES, lexical_search, machine_info  # noqa: E402
from scripts.corpus import BenchDoc, bench_documents  # noqa: E402

TOP_N = 10
SEED = 11
CACHE_ROOT = Path(tempfile.gettempdir()) / "lightrag-mcp-bench-retrieval"
#: The code that decides what the index holds (the query keyword step is not part of it).
INDEX_SOURCES = (
    "rag_worker/embedded/text_*.py",
    "rag_worker/embedded/extractor.py",
    "rag_worker/embedded/code_entities.py",
    "rag_worker/chunking.py",
    "rag_worker/storage/relation_keywords.py",
    "scripts/corpus.py",
)
INDEX_SOURCES_EXCLUDED = {"rag_worker/embedded/text_query.py"}

#: Swaps the embedding model: takes the worker's components, returns them with another
#: `embedding_func` and `embedding_model_id` (the model comparison uses it).
ComponentsHook = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Question:
    text: str
    code: str
    answer: str

    def stated_in(self, text: str) -> bool:
        flat = " ".join(text.split())
        return self.code in flat and self.answer in flat


def questions_of(docs: list[BenchDoc]) -> list[Question]:
    return [Question(doc.question, doc.question.split()[3], doc.answer) for doc in docs]


def index_fingerprint(model_id: str) -> str:
    digest = hashlib.sha256(model_id.encode())
    for pattern in INDEX_SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            if str(path.relative_to(ROOT)) not in INDEX_SOURCES_EXCLUDED:
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


async def worker_components(hook: ComponentsHook | None) -> dict[str, Any]:
    """The embedded default's components, as the worker builds them (the hook may swap the model)."""
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag

    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    return hook(components) if hook is not None else components


async def build_index(rag: Any, docs: list[BenchDoc], marker: Path) -> float:
    """Index every document (LightRAG's batch pipeline, as the worker feeds it); seconds taken."""
    from rag_worker.ingest.pdf import extract_pdf

    started = time.perf_counter()
    texts = [extract_pdf(doc.pdf).text for doc in docs]
    await rag.apipeline_enqueue_documents(texts, file_paths=[doc.name for doc in docs])
    await rag.apipeline_process_enqueue_documents()
    seconds = time.perf_counter() - started
    status = await rag.get_processing_status()
    if status.get("processed", 0) != len(docs):
        raise RuntimeError(f"indexing ended with {status}, expected {len(docs)} processed")
    marker.write_bytes(orjson.dumps({"indexing_s": seconds, "docs": len(docs)}))
    return seconds


async def ask(rag: Any, question: Question, mode: str) -> tuple[bool, bool, int, bool]:
    """(fact in the first 10 passages, fact anywhere in the context, passages retrieved, fact in
    the first 10 passages as the model reads them: fitted to the default LIGHTRAG_MCP_RESULT_CHARS)."""
    from config.settings import setting
    from protocol.methods import QUERY
    from rag_worker.operations.querying import query_param
    from rag_worker.operations.result_budget import fit_result

    args = QUERY.with_defaults({"query": question.text, "mode": mode})
    result = await rag.aquery_data(question.text, query_param(args, stream=False, with_llm=False))
    data = result.get("data") or {}
    chunks = [str(c.get("content") or "") for c in data.get("chunks") or []]
    in_top = any(question.stated_in(c) for c in chunks[:TOP_N])
    graph = [dict(x) for x in (data.get("entities") or []) + (data.get("relationships") or [])]
    described = [str(x.get("description") or "") for x in graph]
    sources = [{"content": chunk} for chunk in chunks]
    fit_result(question.text, sources, graph, [], int(setting("LIGHTRAG_MCP_RESULT_CHARS").default))
    in_read = any(question.stated_in(str(s["content"])) for s in sources[:TOP_N])
    return in_top, in_top or any(question.stated_in(d) for d in described), len(chunks), in_read


async def measure(size: int, *, questions: int | None = None, modes: Iterable[str] = MODES,
                  hook: ComponentsHook | None = None, label: str = "packaged",
                  rebuild: bool = False, cache_root: Path = CACHE_ROOT, vectors_only: bool = False) -> dict[str, Any]:
    """Recall@10 per mode over `size` documents (`questions` of them asked, evenly spread);
    `vectors_only`: with the lexical side of the searches switched off (the path before it)."""
    from rag_worker.storage.lightrag_setup import new_lightrag

    docs = bench_documents(size, seed=SEED)
    components = await worker_components(hook)
    key = f"{size}-{label}-seed{SEED}-{index_fingerprint(str(components['embedding_model_id']))}"
    working_dir = cache_root / key
    marker = working_dir / "complete.json"
    if rebuild or not marker.exists():
        _remove(working_dir)  # a half-built or stale index
    working_dir.mkdir(parents=True, exist_ok=True)
    # LightRAG keeps JSON data in memory by workspace name: one name per index in a process.
    workspace = "".join(c if c.isalnum() else "_" for c in f"r{size}_{label}")
    rag = await new_lightrag(working_dir, workspace, components)
    lexical = getattr(rag, "lexical", None)
    if lexical is not None:  # a cached index indexed before the lexical index gets one first (hybrid)
        await lexical.ready()
    try:
        lexical_search(rag, not vectors_only)
        if marker.exists():
            indexing_s, cached = float(orjson.loads(marker.read_bytes())["indexing_s"]), True
        else:
            indexing_s, cached = await build_index(rag, docs, marker), False
        asked = questions_of(docs)
        if questions and questions < len(asked):
            step = len(asked) / questions
            asked = [asked[int(i * step)] for i in range(questions)]
        per_mode: dict[str, Any] = {}
        for mode in modes:
            started = time.perf_counter()
            hits = context_hits = passages = read_hits = 0
            missed: list[str] = []
            for question in asked:
                in_top, in_context, count, in_read = await ask(rag, question, mode)
                hits += in_top
                read_hits += in_read
                context_hits += in_context
                passages += count
                if not in_top and len(missed) < 5:
                    missed.append(question.text)
            per_mode[mode] = {
                "recall_at_10": round(hits / len(asked), 3),
                "recall_at_10_read": round(read_hits / len(asked), 3),
                "in_context": round(context_hits / len(asked), 3),
                "mean_passages": round(passages / len(asked), 1),
                "query_ms": round(1000 * (time.perf_counter() - started) / len(asked), 1),
                "missed_examples": missed,
            }
        return {"size": size, "questions": len(asked), "model": label + (" vectors" if vectors_only else ""), "indexing_s": round(indexing_s, 1),
                "docs_per_min": round(60 * size / indexing_s, 1), "index_cached": cached, "modes": per_mode}
    finally:
        await rag.finalize_storages()


def _remove(path: Path) -> None:
    if not path.exists():
        return
    if path.is_dir():
        for child in path.iterdir():
            _remove(child)
        path.rmdir()
    else:
        path.unlink()


def table(results: list[dict[str, Any]]) -> str:
    modes = list(results[0]["modes"]) if results else []
    lines = [f"{'docs':>6} {'model':<14} {'index':>9}  " + "  ".join(f"{m:>18}" for m in modes)]
    for r in results:
        cells = [f"{r['modes'][m]['recall_at_10']:.2f} {r['modes'][m]['recall_at_10_read']:.2f} "
                 f"({r['modes'][m]['in_context']:.2f})" for m in modes]
        index = f"{r['indexing_s']:.0f} s" + ("*" if r["index_cached"] else "")
        lines.append(f"{r['size']:>6} {r['model']:<14} {index:>9}  " + "  ".join(f"{c:>18}" for c in cells))
    lines.append("recall@10, recall@10 in the passages as the model reads them (LIGHTRAG_MCP_RESULT_CHARS), "
                 "(in context); * indexing time of the cached index")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000", help="corpus sizes, comma-separated")
    parser.add_argument("--questions", type=int, default=200, help="questions asked per size (evenly spread)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rebuild", action="store_true", help="index again even if a cached index exists")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--vectors-only", action="store_true",
                        help="also ask with the lexical side of the searches switched off (vectors alone, as before it)")
    options = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    async def run() -> list[dict[str, Any]]:
        runs = [False, True] if options.vectors_only else [False]
        return [await measure(int(size), questions=options.questions, modes=options.modes.split(","),
                              rebuild=options.rebuild and not vectors_only, vectors_only=vectors_only)
                for size in options.sizes.split(",") for vectors_only in runs]

    results = anyio.run(run)
    sys.stdout.write(table(results) + "\n")
    if options.json:
        options.json.write_bytes(orjson.dumps({"machine": machine_info(), "results": results}, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
