"""Enqueue and indexing figures for scripts/bench.py, each beside LightRAG's own cost in the
same run (issue 16).

* `enqueue`: one 2-page document through `lightrag_insert_text` and `upload_to_lightrag` with
  LIGHTRAG_MCP_WAIT_SECONDS=0 (the call returns once the document is queued), with the
  workspace idle and while `background` documents index in it.  The floor is LightRAG's own
  `apipeline_enqueue_documents` of the same text in this process (for the upload: text
  extraction plus that enqueue), idle and while its own batch pipeline runs.
* `indexing`: seconds until N documents are processed — ours: all uploaded with no wait, four
  calls in flight as a client sends them, then lightrag_get_status polled; the floor: the same
  PDFs extracted, enqueued in one `apipeline_enqueue_documents` and processed by
  `apipeline_process_enqueue_documents` (LightRAG's batch pipeline), same configuration.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psutil

from rag_worker.embedded.embedding_lanes import RELEASE_AFTER_IDLE_S
from scripts.bench_report import Results, Target, record
from scripts.bench_support import (
    BenchClient,
    DirectLightRAG,
    RssSampler,
    ServerIndex,
    corpus,
    front,
)
from scripts.corpus import BenchDoc

ENQUEUE_TARGET = Target("p50 < 20 ms", at_most=20.0)
CONCURRENT_UPLOADS = 4  # as a client would send them
SAMPLE_GAP_S = 0.3  # between timed calls while the workspace indexes


async def timed_ms(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def unfinished(counts: dict[str, int]) -> int:
    """Documents not yet processed or failed (pending, parsing, analyzing, processing, ...)."""
    return sum(count for state, count in counts.items() if state not in ("processed", "failed"))


def texts_of(docs: list[BenchDoc]) -> list[str]:
    from rag_worker.ingest.pdf import extract_pdf

    return [extract_pdf(doc.pdf).text for doc in docs]


# --- enqueue ---------------------------------------------------------------------------


class EnqueueSamples:
    """Milliseconds per call, by (tool, phase)."""

    def __init__(self) -> None:
        self.ms: dict[tuple[str, str], list[float]] = {}

    def add(self, tool: str, phase: str, ms: float) -> None:
        self.ms.setdefault((tool, phase), []).append(ms)

    def get(self, tool: str, phase: str) -> list[float]:
        return self.ms.get((tool, phase), [])


async def bench_enqueue(results: Results, home: Path, samples: int, background: int) -> None:
    """p50/p95 of one insert/upload call with no wait: idle, and while `background` documents index."""
    docs = corpus(1 + 4 * samples + background, seed=23)  # documents no other figure uses
    warm, rest = docs[0], docs[1:]
    idle, busy, bulk = rest[: 2 * samples], rest[2 * samples : 4 * samples], rest[4 * samples :]
    texts = dict(zip([d.name for d in docs], texts_of(docs), strict=True))
    ours, floor = EnqueueSamples(), EnqueueSamples()
    still_busy = await _ours_enqueue(ours, home, texts, warm, idle, busy, bulk)
    await _floor_enqueue(floor, home / "floor", texts, warm, idle, busy, bulk)
    for tool, what in (("insert_text", "lightrag_insert_text"), ("upload", "upload_to_lightrag (PDF)")):
        floor_what = "LightRAG enqueue" if tool == "insert_text" else "extraction + LightRAG enqueue"
        for phase, words in (("idle", "idle"), ("busy", f"while {len(bulk)} docs index")):
            notes = f"floor: {floor_what}"
            if phase == "busy":
                notes += f"; {still_busy.get(tool, 0)} of {len(ours.get(tool, phase))} calls answered while indexing ran"
            record(results, f"enqueue: {what}, 2-page doc, no wait, {words}", "ms", ours.get(tool, phase),
                   ENQUEUE_TARGET, floor.get(tool, phase), notes)


async def _ours_enqueue(
    ours: EnqueueSamples, home: Path, texts: dict[str, str], warm: BenchDoc,
    idle: list[BenchDoc], busy: list[BenchDoc], bulk: list[BenchDoc],
) -> dict[str, int]:
    """Our calls; returns how many busy-phase calls per tool were answered with indexing still running."""
    still_busy: dict[str, int] = {}
    async with front(home, WORKING_DIR=str(home / "data"), LIGHTRAG_MCP_WAIT_SECONDS="0") as client:
        await client.wait_ready()
        await client.index([warm], 1)  # opens the workspace and loads the model: not a figure
        for index, doc in enumerate(idle):
            tool = "insert_text" if index % 2 == 0 else "upload"
            ours.add(tool, "idle", await timed_ms(lambda: _ours_call(client, tool, doc, texts)))  # noqa: B023
            await _wait_settled(client)  # the next call finds the workspace idle again
        await _upload_all(client, bulk)
        for index, doc in enumerate(busy):
            tool = "insert_text" if index % 2 == 0 else "upload"
            ours.add(tool, "busy", await timed_ms(lambda: _ours_call(client, tool, doc, texts)))  # noqa: B023
            counts = await client.counts()
            if unfinished(counts) > 1:  # more than the call's own document
                still_busy[tool] = still_busy.get(tool, 0) + 1
            await anyio.sleep(SAMPLE_GAP_S)
    return still_busy  # the server stops with documents still indexing: they are not a figure


async def _ours_call(client: BenchClient, tool: str, doc: BenchDoc, texts: dict[str, str]) -> None:
    if tool == "upload":
        result = await client.upload(doc)
    else:
        result = await client.call("lightrag_insert_text", {"text": texts[doc.name], "title": doc.name})
        assert not result.is_error, result.content
    assert (result.structured_content or {}).get("action") == "indexed", result.structured_content


async def _upload_all(client: BenchClient, docs: list[BenchDoc]) -> None:
    limiter = anyio.CapacityLimiter(CONCURRENT_UPLOADS)

    async def one(doc: BenchDoc) -> None:
        async with limiter:
            await client.upload(doc)

    async with anyio.create_task_group() as tg:
        for doc in docs:
            tg.start_soon(one, doc)


async def _wait_settled(client: BenchClient, poll: float = 0.1) -> None:
    while True:
        counts = await client.counts()
        if not unfinished(counts):
            assert not counts.get("failed"), counts
            return
        await anyio.sleep(poll)


async def _floor_enqueue(
    floor: EnqueueSamples, working_dir: Path, texts: dict[str, str], warm: BenchDoc,
    idle: list[BenchDoc], busy: list[BenchDoc], bulk: list[BenchDoc],
) -> None:
    from rag_worker.ingest.pdf import extract_pdf

    direct = DirectLightRAG(working_dir)
    await direct.open()

    async def call(tool: str, doc: BenchDoc) -> None:
        text = texts[doc.name] if tool == "insert_text" else extract_pdf(doc.pdf).text
        await direct.enqueue([text], [doc.name])

    try:
        await direct.index([warm])
        for index, doc in enumerate(idle):
            tool = "insert_text" if index % 2 == 0 else "upload"
            floor.add(tool, "idle", await timed_ms(lambda: call(tool, doc)))  # noqa: B023
            await direct.rag.apipeline_process_enqueue_documents()  # idle again, as on our side
        await direct.enqueue([texts[doc.name] for doc in bulk], [doc.name for doc in bulk])
        async with anyio.create_task_group() as tg:
            tg.start_soon(direct.rag.apipeline_process_enqueue_documents)
            for index, doc in enumerate(busy):
                tool = "insert_text" if index % 2 == 0 else "upload"
                floor.add(tool, "busy", await timed_ms(lambda: call(tool, doc)))  # noqa: B023
                await anyio.sleep(SAMPLE_GAP_S)
            tg.cancel_scope.cancel()  # the rest of the batch is not a figure (as on our side)
    finally:
        await direct.close()


# --- indexing --------------------------------------------------------------------------


async def bench_indexing(results: Results, home: Path, sizes: list[int], indexes: dict[int, ServerIndex]) -> None:
    """Seconds until N documents are processed, ours vs LightRAG's batch pipeline; keeps each
    server index in `indexes` for the query figures."""
    for size in sizes:
        docs = corpus(size)
        direct = DirectLightRAG(home / f"floor{size}")
        await direct.open()
        try:
            floor_s = await direct.index(docs)
        finally:
            await direct.close()
        index = ServerIndex(home / f"index{size}", {}, docs)
        async with front(index.home, **index.server_env(LIGHTRAG_MCP_WAIT_SECONDS="0")) as client:
            await client.wait_ready()
            sampler = RssSampler(client.pids)
            async with sampler.running():
                index.seconds = await client.index(docs, CONCURRENT_UPLOADS)
            await anyio.sleep(RELEASE_AFTER_IDLE_S + 1.0)  # the worker hands idle model memory back
            at_rest = psutil.Process(client.pids["worker"]).memory_info().rss / 2**20
        indexes[size] = index
        peaks = sampler.peaks()
        pages = sum(doc.pages for doc in docs)
        entry = record(results, f"indexing: {size} docs uploaded (no wait) → all processed", "s", [index.seconds],
               Target("≤ 1.05× LightRAG's batch pipeline", ratio_at_most=1.05), [floor_s],
               f"{pages} pages; peak RSS worker {peaks.get('worker')} MB, front {peaks.get('front')} MB")
        entry["peak_rss_mb"] = peaks
        record(results, f"indexing: {size} docs, documents/minute", "docs/min", [60 * size / index.seconds],
               Target("≥ 150 two-page docs/min (offline)", at_least=150), [60 * size / floor_s])
        record(results, f"indexing: worker RSS at rest after {size} docs", "MB", [at_rest], Target("< 512 MB", at_most=512))
