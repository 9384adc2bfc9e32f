"""Growth curve of the embedded database engine vs the JSON files, in the same run (issue 25).

    .venv/bin/python scripts/bench_engine.py --sizes 100 1000 [--backends engine files] [--json out.json] [--keep DIR]
    .venv/bin/python scripts/bench_engine.py --remeasure DIR [--backends engine] [--rounds 1]   # on what --keep kept
    .venv/bin/python scripts/bench_engine.py --sizes 2000 5000 --keep DIR    # grows DIR's kept bases on

For each backend a fresh data directory and the real server (`python -m mcp_front` over stdio,
LIGHTRAG_MCP_WAIT_SECONDS=0): generated two-page documents (~5 KB of text each, scripts/corpus.py)
are sent with `lightrag_insert_text` in batches of 100, each batch's indexing awaited by polling
`lightrag_get_status`.  Per batch it prints: worker + engine CPU seconds per document (the
worker's own CPU and the engine's postmaster and backends, children included), documents per
minute (wall clock), texts sent to the embedding model for indexing per document (counted in
the worker by scripts/embed_count/sitecustomize.py), enqueue p50/p95 (the insert calls' round trips while the previous batch may
still index), total memory (PSS of front, worker and its helpers, engine), disk per document (the data
directory), and at each size in --sizes the `only_context` query p50 per mode and the calls that read
a whole store (a listing page, the status counts, an entity search, a graph export of 200 nodes, and
one document's cascade delete: its answer, and until the document is gone), each timed once.  Once at the
first size: spawn → initialize → first answered query, on a server started afresh on that data.

Floors printed beside: the issue's targets (CPU per document at the largest size ≤ 1.2× at the
first, enqueue p50 < 20 ms, total RSS < 1.5 GB, query p50 ≤ 2× the first size's, engine at the
first size no worse than 1.1× the files).  Wall-clock figures on a shared machine are noisy: the
script says so and prints the load average it saw.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_support import MODES, BenchClient, engine_processes, front, pss_mb  # noqa: E402
from scripts.corpus import generated_documents, generated_questions  # noqa: E402

BATCH = 100
QUESTIONS = 5  # per mode at each size (--remeasure: 5 × --rounds), never one asked twice


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def _disk_mb(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total / 2**20


class Run:
    """One backend's server, measured batch by batch."""

    def __init__(self, backend: str, home: Path) -> None:
        self.backend, self.home = backend, home
        self.data_dir = home / "data"
        self.embed_counts = home / "embed_count"
        self.embed_counts.mkdir(parents=True, exist_ok=True)
        self.env = {
            "LIGHTRAG_MCP_DEFAULT_STORAGE": backend,
            "WORKING_DIR": str(self.data_dir),
            "LIGHTRAG_MCP_WAIT_SECONDS": "0",
            "LIGHTRAG_MCP_MAX_REQUESTS": "0",  # no planned recycle: one worker's CPU counted throughout
            # This tree's code (not whichever the editable install names), and the count of
            # texts embedded for indexing (scripts/embed_count/sitecustomize.py).
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "scripts" / "embed_count")]),
            "LIGHTRAG_MCP_BENCH_EMBED_COUNT_DIR": str(self.embed_counts),
        }
        self.rows: list[dict[str, Any]] = []

    def texts_embedded(self, worker_pid: int) -> int:
        """Texts the worker has sent to the model for indexing so far."""
        try:
            return int((self.embed_counts / str(worker_pid)).read_text() or 0)
        except (OSError, ValueError):
            return 0

    def processes(self, client: BenchClient) -> dict[str, list[psutil.Process]]:
        worker = psutil.Process(client.pids["worker"])
        return {
            "front": [psutil.Process(client.pids["front"])],
            "worker": [worker, *worker.children(recursive=True)],
            "engine": engine_processes(self.data_dir),
        }

    async def batch(self, client: BenchClient, docs: list[tuple[str, str]], indexed: int) -> dict[str, Any]:
        finished = await client.counts()
        # What the knowledge base holds (a --remeasure run's deletes included), and this batch on top.
        target = finished.get("processed", 0) + finished.get("failed", 0) + len(docs)
        before = self.processes(client)
        cpu_before = _cpu_seconds(before["worker"][:1]) + _cpu_seconds(before["engine"][:1])
        embedded_before = self.texts_embedded(client.pids["worker"])
        started = time.perf_counter()
        enqueue: list[float] = []
        for name, text in docs:
            sent = time.perf_counter()
            result = await client.call("lightrag_insert_text", {"text": text, "title": name})
            enqueue.append((time.perf_counter() - sent) * 1000)
            assert not result.is_error, result.content
        while True:
            counts = await client.counts()
            if counts.get("processed", 0) + counts.get("failed", 0) >= target:
                break
            await anyio.sleep(0.5)
        wall = time.perf_counter() - started
        after = self.processes(client)
        # The postmaster's children_* count backends that exited; live backends are summed apart.
        cpu_after = _cpu_seconds(after["worker"][:1]) + _cpu_seconds(after["engine"][:1])
        live_backends = _cpu_seconds(after["engine"][1:]) - _cpu_seconds([p for p in before["engine"][1:] if p in after["engine"][1:]])
        enqueue.sort()
        return {
            "backend": self.backend,
            "documents": indexed + len(docs),
            "failed": counts.get("failed", 0),
            "cpu_s_per_doc": round((cpu_after - cpu_before + max(live_backends, 0.0)) / len(docs), 3),
            "texts_embedded_per_doc": round((self.texts_embedded(client.pids["worker"]) - embedded_before) / len(docs), 1),
            "docs_per_min": round(len(docs) / wall * 60, 1),
            "enqueue_p50_ms": round(statistics.median(enqueue), 1),
            "enqueue_p95_ms": round(enqueue[int(len(enqueue) * 0.95) - 1], 1),
            "rss_mb": {name: pss_mb(group) for name, group in after.items()},
            "rss_total_mb": round(sum(pss_mb(group) for group in after.values()), 1),
            "disk_kb_per_doc": round(_disk_mb(self.data_dir) * 1024 / target, 1),
        }


async def query_p50(client: BenchClient, rounds: int = 1, *, seed: int = 0) -> dict[str, float]:
    """Each mode's p50 over QUESTIONS × rounds questions, no two alike (a question asked again
    finds its keywords and vector remembered); `seed` picks the set (one per call on a server)."""
    figures = {}
    asked = iter(generated_questions(len(MODES) * QUESTIONS * rounds, seed=seed))
    for mode in MODES:
        samples = []
        for _ in range(QUESTIONS * rounds):
            sent = time.perf_counter()
            result = await client.call("lightrag_query", {"query": next(asked), "mode": mode, "only_context": True})
            samples.append((time.perf_counter() - sent) * 1000)
            assert not result.is_error, result.content
        figures[mode] = round(statistics.median(samples), 1)
    return figures


#: The calls that read (or, for delete, cascade through) a whole store, as an agent makes them.
WHOLE_STORE_CALLS = (
    ("list_page", "lightrag_list_documents", {"limit": 50}),
    ("next_list_page", "lightrag_list_documents", {"limit": 50, "offset": 50}),  # the kept summaries, on the engine
    ("status_counts", "lightrag_get_status", {}),
    ("search_entities", "lightrag_search_entities", {"query": "Nimbus Scheduler"}),
    ("graph_export_200", "lightrag_get_graph", {"max_nodes": 200}),
)


async def whole_store_ms(client: BenchClient) -> dict[str, float]:
    """Each call once (ms); then the first listed document deleted, cascade included."""
    figures = {}
    for label, tool, arguments in WHOLE_STORE_CALLS:
        sent = time.perf_counter()
        result = await client.call(tool, arguments)
        figures[label] = round((time.perf_counter() - sent) * 1000, 1)
        assert not result.is_error, result.content
    listed = await client.call("lightrag_list_documents", {"limit": 1, "sort_order": "asc"})
    victim = (listed.structured_content or {})["documents"][0]["id"]
    sent = time.perf_counter()
    result = await client.call("lightrag_delete_documents", {"document_ids": [victim]})
    figures["cascade_delete_answer"] = round((time.perf_counter() - sent) * 1000, 1)
    assert not result.is_error, result.content
    # The call answers after LIGHTRAG_MCP_WAIT_SECONDS (0 here); the delete goes on until the document is gone.
    while not (await client.call("lightrag_delete_documents", {"document_ids": [victim]})).is_error:  # DOCUMENT_NOT_FOUND
        await anyio.sleep(0.5)
    figures["cascade_delete"] = round((time.perf_counter() - sent) * 1000, 1)
    figures.update(await replacement_ms(client))
    return figures


async def replacement_ms(client: BenchClient) -> dict[str, float]:
    """New text under the first listed document's name: until the call answers, and until the new
    version is indexed (the old one's cascade delete runs first, in the background)."""
    listed = await client.call("lightrag_list_documents", {"limit": 1, "sort_order": "asc"})
    name = (listed.structured_content or {})["documents"][0]["filename"]
    text = f"Revised {name}: the Nimbus Scheduler now runs on the Orion cluster, maintained by Dana Whitfield."
    sent = time.perf_counter()
    result = await client.call("lightrag_insert_text", {"text": text, "title": name})
    answered = round((time.perf_counter() - sent) * 1000, 1)
    assert not result.is_error and (result.structured_content or {}).get("action") == "replaced", result.content
    track_id = (result.structured_content or {})["track_id"]
    while True:
        status = await client.call("lightrag_get_status", {"track_id": track_id})
        documents = (status.structured_content or {}).get("documents") or [{}]
        if documents[0].get("status") in {"processed", "failed"}:
            break
        await anyio.sleep(0.5)
    return {"replace_answer": answered, "replace_indexed": round((time.perf_counter() - sent) * 1000, 1)}


async def start_to_first_query(run: Run) -> dict[str, float]:
    spawned = time.perf_counter()
    async with front(run.home, **run.env) as client:
        initialized = time.perf_counter() - spawned
        await client.wait_ready()
        result = await client.call("lightrag_query", {"query": "What does report 3 say?", "mode": "mix", "only_context": True})
        assert not result.is_error, result.content
        return {"initialize_s": round(initialized, 2), "first_query_s": round(time.perf_counter() - spawned, 2)}


async def grow(backend: str, sizes: list[int], root: Path, report: dict[str, Any], out: Path | None) -> None:
    run = Run(backend, root / backend)
    docs = generated_documents(max(sizes), seed=25, fmt="text")
    # A kept knowledge base grows on from where an earlier run (or a stopped one) left it.
    progress = run.home / "bench_progress.json"
    sent = 0
    if progress.exists():
        done = orjson.loads(progress.read_bytes())
        sent = done["sent"]
        print(f"{backend}: growing the kept knowledge base on from {sent} documents sent", flush=True)
    async with front(run.home, **run.env) as client:
        await client.wait_ready()
        for start in range(sent, max(sizes), BATCH):
            row = await run.batch(client, docs[start : start + BATCH], start)
            if row["documents"] in sizes:
                row["query_p50_ms"] = await query_p50(client, seed=sizes.index(row["documents"]))
                row["whole_store_ms"] = await whole_store_ms(client)
            row["load_avg"] = round(os.getloadavg()[0], 1)
            report["rows"].append(row)
            print(orjson.dumps(row).decode(), flush=True)
            progress.write_bytes(orjson.dumps({"sent": row["documents"]}))
            if out is not None:
                out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    report["start_up"][backend] = await start_to_first_query(run)
    print(orjson.dumps({"backend": backend, "start_up_at": sizes[-1], **report["start_up"][backend]}).decode(), flush=True)


async def remeasure(backend: str, root: Path, rounds: int) -> None:
    """--remeasure: the query p50 per mode and the whole-store calls, twice each, on a knowledge
    base an earlier `--keep` run grew (when the machine is quieter than it was during the run)."""
    run = Run(backend, root / backend)
    async with front(run.home, **run.env) as client:
        await client.wait_ready()
        counts = await client.counts()
        for attempt in (1, 2):
            row = {"backend": backend, "documents": counts.get("processed", 0) - (attempt - 1), "attempt": attempt}
            row.update(query_p50_ms=await query_p50(client, rounds, seed=attempt), whole_store_ms=await whole_store_ms(client))
            row["rss_mb"] = {name: pss_mb(group) for name, group in run.processes(client).items()}
            row["load_avg"] = round(os.getloadavg()[0], 1)
            print(orjson.dumps(row).decode(), flush=True)


def floors(report: dict[str, Any], sizes: list[int]) -> list[str]:
    """The issue's targets next to what was measured."""
    lines = []
    engine = [row for row in report["rows"] if row["backend"] == "engine"]
    files = [row for row in report["rows"] if row["backend"] == "files"]
    if engine:
        first, last = engine[0], engine[-1]
        lines.append(f"engine CPU/doc {first['cpu_s_per_doc']} s at {first['documents']} → {last['cpu_s_per_doc']} s at {last['documents']} (target ≤ 1.2×: {last['cpu_s_per_doc'] <= 1.2 * first['cpu_s_per_doc']})")
        lines.append(f"engine enqueue p50 at {last['documents']}: {last['enqueue_p50_ms']} ms (target < 20 ms)")
        lines.append(f"engine total RSS at {last['documents']}: {last['rss_total_mb']} MB (target < 1536 MB)")
    if engine and files:
        lines.append(f"at {engine[0]['documents']}: engine CPU/doc {engine[0]['cpu_s_per_doc']} vs files {files[0]['cpu_s_per_doc']} (target ≤ 1.1×)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--backends", nargs="+", default=["engine", "files"], choices=["engine", "files"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", type=Path, help="build the knowledge bases in DIR/<backend> and keep them (for profiling)")
    parser.add_argument("--remeasure", type=Path, help="only time queries and whole-store calls on DIR/<backend>, kept by --keep")
    parser.add_argument("--rounds", type=int, default=1, help="--remeasure asks 5 × this many questions per mode (a worker that keeps answering)")
    args = parser.parse_args()
    if args.remeasure is not None:
        for backend in args.backends:
            anyio.run(remeasure, backend, args.remeasure, args.rounds)
        return 0
    sizes = sorted(args.sizes)
    report: dict[str, Any] = {"sizes": sizes, "rows": [], "start_up": {}, "cpus": psutil.cpu_count(), "note": "shared machine: wall-clock figures are noisy"}
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-engine-")))
        for backend in args.backends:
            anyio.run(grow, backend, sizes, root, report, args.json)
    report["floors"] = floors(report, sizes)
    for line in report["floors"]:
        print(line)
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
