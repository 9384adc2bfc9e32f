"""Query figures for scripts/bench.py with the embedded default (the context path): every mode
through the server beside LightRAG's `aquery_data` in this process, same questions, same
QueryParam (the worker's own, from the method's defaults), interleaved (issue 16).

Both sides answer from the same index: the documents are indexed once through the server
(or the `indexing` figure's index of that size is reused); the floor opens LightRAG on a copy
of that workspace's directory, taken with the server closed.  Also: accuracy (the planted
answer in what comes back), the bytes of each result as the client receives it, and 50
concurrent mix queries.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import orjson

from scripts.bench_report import Results, Target, number, record
from scripts.bench_support import MODES, DirectLightRAG, ServerIndex, corpus, index_through_server
from scripts.corpus import BenchDoc

QUERY_TARGET = Target("p50 ≤ 1.1× LightRAG in-process", ratio_at_most=1.1)


def spread(docs: list[BenchDoc], count: int) -> list[BenchDoc]:
    """`count` documents taken evenly across the corpus (its questions sample all of it)."""
    count = max(1, min(count, len(docs)))
    step = len(docs) / count
    return [docs[int(i * step)] for i in range(count)]


def result_bytes(result: Any) -> dict[str, int]:
    """Sizes of a tools/call result as the client receives it: its text content (UTF-8 bytes),
    its structuredContent (JSON bytes) and the whole result's JSON."""
    text = "".join(getattr(part, "text", "") for part in result.content)
    return {
        "text": len(text.encode()),
        "structured": len(orjson.dumps(result.structured_content)) if result.structured_content else 0,
        "json": len(result.model_dump_json(by_alias=True, exclude_none=True).encode()),
    }


async def prepared_index(home: Path, size: int, indexes: dict[int, ServerIndex], env: dict[str, str]) -> ServerIndex:
    """The server index of `size` documents: the indexing figure's, or a new one."""
    if size not in indexes:
        indexes[size] = await index_through_server(home / f"query{size}", corpus(size), env)
    return indexes[size]


async def bench_query(results: Results, home: Path, sizes: list[int], questions: int, indexes: dict[int, ServerIndex]) -> None:
    for size in sizes:
        index = await prepared_index(home, size, indexes, {})
        async with index.both_sides(home / f"floor{size}") as (client, direct):
            sample = spread(index.docs, questions)
            for mode in MODES:
                await _one_mode(results, client, direct, sample, mode, size)
            await bench_concurrency(results, client, sample, size)


async def _one_mode(results: Results, client: Any, direct: DirectLightRAG, sample: list[BenchDoc], mode: str, size: int) -> None:
    ours, floor, hits, floor_hits = [], [], 0, 0
    sizes: dict[str, list[int]] = {"text": [], "structured": [], "json": [], "floor": []}
    for turn, doc in enumerate(sample):
        for side in ("ours", "floor") if turn % 2 == 0 else ("floor", "ours"):  # neither side always goes first
            started = time.perf_counter()
            if side == "ours":
                result = await client.call("lightrag_query", {"query": doc.question, "mode": mode})
                ours.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content
                for key, value in result_bytes(result).items():
                    sizes[key].append(value)
                hits += doc.answer in "".join(getattr(part, "text", "") for part in result.content)
            else:
                raw = await direct.query(doc.question, mode)
                floor.append((time.perf_counter() - started) * 1000)
                data = orjson.dumps(raw)
                sizes["floor"].append(len(data))
                floor_hits += doc.answer.encode() in data
    mean = {key: sum(values) / len(values) for key, values in sizes.items()}
    notes = (
        f"accuracy {hits / len(sample):.2f} (floor {floor_hits / len(sample):.2f}); result "
        f"{number(mean['json'] / 1000)} kB JSON: text {number(mean['text'] / 1000)} kB + structured "
        f"{number(mean['structured'] / 1000)} kB (LightRAG's data {number(mean['floor'] / 1000)} kB)"
    )
    entry = record(results, f"query {mode}, context, @ {size} docs", "ms", ours, QUERY_TARGET, floor, notes)
    entry["accuracy"] = round(hits / len(sample), 3)
    entry["bytes"] = {key: round(value) for key, value in mean.items()}


async def bench_concurrency(results: Results, client: Any, sample: list[BenchDoc], size: int) -> None:
    before = (await client.health())["components"]["worker"]
    errors = 0
    latencies: list[float] = []

    async def one(question: str) -> None:
        nonlocal errors
        started = time.perf_counter()
        result = await client.call("lightrag_query", {"query": question, "mode": "mix"})
        latencies.append((time.perf_counter() - started) * 1000)
        errors += bool(result.is_error)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index in range(50):
            tg.start_soon(one, sample[index % len(sample)].question)
    wall = time.perf_counter() - started
    after = (await client.health())["components"]["worker"]
    missed = after["pings_missed"] - before["pings_missed"]
    entry = record(
        results, f"50 concurrent mix queries @ {size} docs", "ms", latencies, "all succeed; no ping missed",
        notes=f"{50 / wall:.1f} queries/s, {errors} errors, {missed} pings missed",
    )
    entry["met"] = not errors and not missed
    entry.update({"throughput_qps": round(50 / wall, 2), "errors": errors, "pings_missed": missed,
                  "restarts": after["restarts"] - before["restarts"], "ping_rtt_max_ms": after["ping_rtt_max_ms"]})
