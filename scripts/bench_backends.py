#!/usr/bin/env python3
"""Query latency per mode on PostgreSQL (+ pgvector) vs the embedded default, same corpus.

    .venv/bin/python scripts/bench_backends.py                       # 20 documents, 20 queries per mode
    .venv/bin/python scripts/bench_backends.py --docs 50 --queries 30 --backends embedded,postgres,redis_milvus
    .venv/bin/python scripts/bench_backends.py --json bench-backends.json

Each configuration gets a fresh server process over stdio (production supervision settings)
and, for the server-backed ones, its own storage server started by tests/backends/servers.py
(installed first if missing; PostgreSQL runs with fsync on).  The same generated PDFs are
uploaded (4 at a time), then every mode answers the same questions; each question's planted
answer must be in the result (accuracy).  Latency is the client's round trip of
`lightrag_query` (context only, no LLM), in milliseconds: median and p95.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_support import MODES, front  # noqa: E402
from scripts.corpus import BenchDoc, bench_documents  # noqa: E402
from tests.backends.servers import MilvusServer, PostgresServer, RedisServer, redis_milvus_env  # noqa: E402

BACKENDS = ["embedded", "postgres", "redis_milvus"]


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"n": len(ordered), "median": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


@contextlib.contextmanager
def storage(name: str) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """The server environment of configuration `name`, and how long its servers took to start."""
    started = time.perf_counter()
    if name == "embedded":
        yield {}, {}
    elif name == "postgres":
        pg = PostgresServer(durable=True)
        try:
            env = pg.env(pg.new_database())
            yield env, {"server_start_s": round(time.perf_counter() - started, 2), **pg.start_seconds}
        finally:
            pg.close()
    elif name == "redis_milvus":
        redis, milvus = RedisServer(), MilvusServer()
        try:
            yield (
                redis_milvus_env(redis, milvus),
                {"redis_start_s": redis.start_seconds, "milvus_start_s": milvus.start_seconds},
            )
        finally:
            redis.close()
            milvus.close()
    else:
        raise SystemExit(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")


async def bench_one(name: str, docs: list[BenchDoc], queries: int, extra_env: dict[str, str]) -> dict[str, Any]:
    with storage(name) as (env, servers), tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        home = Path(tmp)
        result: dict[str, Any] = {"servers": servers}
        async with front(home, WORKING_DIR=str(home / "data"), **env, **extra_env) as client:
            await client.wait_ready()
            await client.health(check_dependencies=True)  # open the workspace and load the model first
            seconds = await client.index(docs, concurrency=4)
            result["indexing"] = {
                "documents": len(docs),
                "seconds": round(seconds, 1),
                "docs_per_min": round(60 * len(docs) / seconds, 1),
            }
            questions = [docs[i % len(docs)] for i in range(queries)]
            for mode in MODES:  # warm-up: first-use costs (prepared statements, caches) are not latency
                await client.call("lightrag_query", {"query": questions[0].question, "mode": mode})
            result["modes"] = {}
            for mode in MODES:
                latencies, hits, errors = [], 0, 0
                for doc in questions:
                    started = time.perf_counter()
                    answer = await client.call("lightrag_query", {"query": doc.question, "mode": mode})
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += bool(answer.is_error)
                    hits += doc.answer in answer.content[0].text  # type: ignore[union-attr]
                result["modes"][mode] = {
                    **summary(latencies),
                    "accuracy": round(hits / len(questions), 3),
                    "errors": errors,
                }
            worker = (await client.health())["components"]["worker"]
            result["worker"] = {key: worker.get(key) for key in ("restarts", "pings_missed", "ping_rtt_max_ms")}
        return result


def table(results: dict[str, dict[str, Any]], baseline: str) -> str:
    names = list(results)
    header = "| mode | " + " | ".join(f"{name} median / p95 ms (acc.)" for name in names)
    if baseline in results and len(names) > 1:
        header += " | " + " | ".join(f"{name} / {baseline} (median)" for name in names if name != baseline)
    lines = [header + " |", "|" + "---|" * (header.count("|"))]
    for mode in MODES:
        cells = []
        for name in names:
            entry = results[name]["modes"][mode]
            cells.append(f"{entry['median']} / {entry['p95']} ({entry['accuracy']:.0%})")
        if baseline in results and len(names) > 1:
            base = results[baseline]["modes"][mode]["median"]
            cells += [f"{results[name]['modes'][mode]['median'] / base:.2f}×" for name in names if name != baseline]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines.append("")
    for name in names:
        r = results[name]
        lines.append(
            f"{name}: indexed {r['indexing']['documents']} docs in {r['indexing']['seconds']} s "
            f"({r['indexing']['docs_per_min']} docs/min); worker {r['worker']}; servers {r['servers']}"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    docs = bench_documents(args.docs)
    results: dict[str, Any] = {}
    for name in args.backends.split(","):
        sys.stderr.write(f"{name}: indexing {len(docs)} documents, then {args.queries} queries per mode…\n")
        results[name] = await bench_one(name.strip(), docs, args.queries, {})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=20, help="generated two-page PDFs to index (default 20)")
    parser.add_argument("--queries", type=int, default=20, help="queries per mode (default 20)")
    parser.add_argument("--backends", default="embedded,postgres", help=f"comma-separated, from {', '.join(BACKENDS)}")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    results = anyio.run(main_async, args)
    print(table(results, "embedded"))
    if args.json:
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
