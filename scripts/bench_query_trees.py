#!/usr/bin/env python3
"""Query p50 per mode of two source trees on one knowledge base, in alternating rounds.

Issue 28's before/after query time at 1,000 documents: the same knowledge base (built once by
`scripts/bench_exact.py --keep DIR`), the same questions, each tree's own code (its `rag_worker`,
`config`, `protocol`) opening it in a process of its own, the trees taking turns round after
round so a shared machine's load weighs on both alike. Wall and CPU (the process's, all
threads) p50 are printed per tree and mode, and each tree's ratio to the first.

    scripts/bench_exact.py --docs 1000 --parts exact --keep /tmp/kb1000
    git archive a7505a1 | (mkdir /tmp/before && tar -x -C /tmp/before)
    scripts/bench_query_trees.py /tmp/kb1000 --docs 1000 --trees /tmp/before . [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
MODES = ["naive", "local", "global", "hybrid", "mix"]


def questions(docs: int, count: int = 100) -> list[str]:
    """bench_exact's questions (this tree's corpus, loaded by path: the other tree may lack it)."""
    spec = importlib.util.spec_from_file_location("bench_corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    corpus = importlib.util.module_from_spec(spec)
    sys.modules["bench_corpus"] = corpus
    spec.loader.exec_module(corpus)
    reports, kinds = corpus.maintenance_reports(docs), list(corpus.MAINTENANCE_QUESTIONS)
    return [corpus.MAINTENANCE_QUESTIONS[kinds[i % len(kinds)]].format(reports[i * docs // count].values[kinds[i % len(kinds)]])
            for i in range(count)]


async def measure(kb: Path, docs: int) -> dict[str, list[float]]:
    """In a process whose packages come from one tree: [wall, cpu] p50 ms per mode (after a warm-up pass)."""
    import anyio

    from config.settings import load_settings
    from protocol.methods import QUERY
    from rag_worker.bindings import build_components
    from rag_worker.operations.querying import query_param
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    import_lightrag()
    rag = await new_lightrag(kb, "exact", await build_components(load_settings({}), anyio.CapacityLimiter(2)))
    if getattr(rag, "lexical", None) is not None:
        await rag.lexical.ready()
    asked = questions(docs)
    p50: dict[str, list[float]] = {}
    try:
        for mode in MODES:
            async def one(question: str, mode: str = mode) -> tuple[float, float]:
                param = query_param(QUERY.with_defaults({"query": question, "mode": mode}), stream=False, with_llm=False)
                wall, cpu = time.perf_counter(), time.process_time()
                await rag.aquery_data(question, param)
                return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)

            for question in asked:
                await one(question)
            times = [await one(question) for question in asked]
            p50[mode] = [round(statistics.median(t[i] for t in times), 1) for i in (0, 1)]
    finally:
        await rag.finalize_storages()
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path, help="the directory bench_exact.py --keep built")
    parser.add_argument("--docs", type=int, required=True, help="the --docs it was built with")
    parser.add_argument("--trees", type=Path, nargs="+", default=[HERE.parent])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # one tree's run, in its own process
    options = parser.parse_args()
    kb = options.kb / "exact"
    if options.measure:
        sys.path.insert(0, str(options.measure.resolve()))
        import anyio

        sys.stdout.write(orjson.dumps(anyio.run(measure, kb, options.docs)).decode() + "\n")
        return
    runs: dict[Path, list[dict[str, list[float]]]] = {tree: [] for tree in options.trees}
    for _ in range(options.rounds):
        for tree in options.trees:
            out = subprocess.run([sys.executable, __file__, str(options.kb), "--docs", str(options.docs), "--measure", str(tree)],
                                 check=True, capture_output=True, text=True).stdout
            runs[tree].append(orjson.loads(out.strip().splitlines()[-1]))
    first: dict[str, Any] = {}
    for tree, results in runs.items():
        row = {mode: [statistics.median(r[mode][i] for r in results) for i in (0, 1)] for mode in MODES}
        first = first or row
        sys.stdout.write(f"{tree}: p50 wall / cpu ms (median of {len(results)} rounds), ratio to {options.trees[0]}\n")
        for mode in MODES:
            (wall, cpu), (wall0, cpu0) = row[mode], first[mode]
            sys.stdout.write(f"  {mode:<7} {wall:7.1f} / {cpu:6.1f}   x{wall / wall0:.2f} / x{cpu / cpu0:.2f}\n")


if __name__ == "__main__":
    main()
