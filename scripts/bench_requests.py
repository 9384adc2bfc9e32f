#!/usr/bin/env python3
"""The LLM path (`llm` in scripts/bench.py): queries through this server against LightRAG alone,
with LightRAG's real `openai` binding for the LLM and the embeddings of both sides, talking to a
local OpenAI-compatible fake (scripts/bench_fake_llm.py; nothing leaves the machine).

Per mode, two paths: the answer (`lightrag_query` vs `aquery_llm`) and the context
(`lightrag_query` with only_context vs `aquery_data`), with the QueryParam the worker builds.
Per query: latency, and what the fake saw during that one call — embedding requests, texts
embedded, LLM requests, bytes to and from it.  Every question is new to its side and path
(LightRAG's caches would hide requests); both sides answer from the same index: the documents
are indexed once through the server (the fake's built-in extractor answers entity extraction
deterministically) and the floor opens LightRAG on a copy of that workspace.

Alone, from the project root::

    .venv/bin/python scripts/bench_requests.py --docs 20 --questions 4
"""

from __future__ import annotations

import argparse
import itertools
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from scripts.bench_fake_llm import FakeLLMProcess  # noqa: E402
from scripts.bench_queries import spread  # noqa: E402
from scripts.bench_report import Results, Target, markdown, number, record  # noqa: E402
from scripts.bench_support import MODES, DirectLightRAG, corpus, index_through_server, machine_info  # noqa: E402

LLM_TARGET = Target("p50 ≤ 1.1× LightRAG in-process; same requests", ratio_at_most=1.1)
PATHS = ("answer", "context")
FAKE_COSINE_THRESHOLD = "0.1"
COUNTS = ("embedding_requests", "texts_embedded", "llm_requests", "bytes_to_fake", "bytes_from_fake")


class Calls:
    """Latency (ms) and the fake's counts of every call, by (side, path)."""

    def __init__(self) -> None:
        self.ms: dict[tuple[str, str], list[float]] = {}
        self.counts: dict[tuple[str, str], list[dict[str, int]]] = {}
        self.hits: dict[tuple[str, str], int] = {}

    def add(self, side: str, path: str, ms: float, counts: dict[str, int], hit: bool) -> None:
        self.ms.setdefault((side, path), []).append(ms)
        self.counts.setdefault((side, path), []).append(counts)
        self.hits[(side, path)] = self.hits.get((side, path), 0) + hit

    def mean(self, side: str, path: str, key: str) -> float:
        return statistics.fmean(row[key] for row in self.counts[(side, path)])


async def bench_llm(results: Results, home: Path, sizes: list[int], questions: int) -> None:
    with FakeLLMProcess() as fake:
        for size in sizes:
            started = time.perf_counter()
            index = await index_through_server(home / f"llm{size}", corpus(size), llm_env(fake))
            sys.stderr.write(f"  ({size} docs indexed through the fake in {time.perf_counter() - started:.1f} s)\n")
            async with index.both_sides(home / f"floor{size}", answer=True) as (client, direct):
                numbers = itertools.count()
                for mode in MODES:
                    calls = Calls()
                    for turn, doc in enumerate(spread(index.docs, questions)):
                        for side, path in _order(turn):
                            question = f"{doc.question} (reference {next(numbers)})"  # new to every side and path
                            fake.reset()
                            ms, text = await _call(client, direct, side, path, question, mode)
                            calls.add(side, path, ms, fake.count(), doc.answer in text)
                    _record_mode(results, calls, mode, size, questions)


def llm_env(fake: FakeLLMProcess) -> dict[str, str]:
    """Both sides' configuration: LightRAG's openai binding against the fake.  The fake's hashed
    bag-of-words vectors score a question against its passage at about 0.1-0.2 cosine, under
    LightRAG's default 0.2 threshold: without a lower one naive retrieval finds nothing and its
    answer path never reaches the LLM."""
    return {**fake.env(), "COSINE_THRESHOLD": FAKE_COSINE_THRESHOLD}


def _order(turn: int) -> list[tuple[str, str]]:
    """Both paths of both sides, neither side always first."""
    sides = ("ours", "floor") if turn % 2 == 0 else ("floor", "ours")
    return [(side, path) for path in PATHS for side in sides]


async def _call(client: Any, direct: DirectLightRAG, side: str, path: str, question: str, mode: str) -> tuple[float, str]:
    """(milliseconds, what the accuracy is read from) for one query: the LLM's answer on the
    answer path, everything that came back on the context path."""
    import orjson

    started = time.perf_counter()
    if side == "ours":
        arguments: dict[str, Any] = {"query": question, "mode": mode}
        if path == "context":
            arguments["only_context"] = True
        result = await client.call("lightrag_query", arguments)
        ms = (time.perf_counter() - started) * 1000
        assert not result.is_error, result.content
        expected = "answered" if path == "answer" else "context_only"
        structured = result.structured_content or {}
        assert structured.get("status") in (expected, "no_results"), structured
        if path == "answer":
            return ms, str(structured.get("answer") or "")
        return ms, "".join(getattr(part, "text", "") for part in result.content)
    raw = await direct.query(question, mode, answer=path == "answer")
    ms = (time.perf_counter() - started) * 1000
    if path == "answer":
        return ms, str((raw.get("llm_response") or {}).get("content") or "")
    return ms, orjson.dumps(raw).decode()


def _record_mode(results: Results, calls: Calls, mode: str, size: int, questions: int) -> None:
    for path in PATHS:
        ours, floor = ("ours", path), ("floor", path)
        same = all(calls.mean(*ours, key) == calls.mean(*floor, key) for key in ("embedding_requests", "llm_requests"))
        per_query = ", ".join(
            f"{label} {number(calls.mean(*ours, key))}·{number(calls.mean(*floor, key))}"
            for label, key in (("embedding requests", "embedding_requests"), ("texts embedded", "texts_embedded"),
                               ("LLM requests", "llm_requests"))
        )
        wire = (
            f"KB to·from the fake {number(calls.mean(*ours, 'bytes_to_fake') / 1000)}·"
            f"{number(calls.mean(*floor, 'bytes_to_fake') / 1000)} / {number(calls.mean(*ours, 'bytes_from_fake') / 1000)}·"
            f"{number(calls.mean(*floor, 'bytes_from_fake') / 1000)}"
        )
        accuracy = f"accuracy {calls.hits[ours] / questions:.2f}·{calls.hits[floor] / questions:.2f}"
        name = f"LLM path: query {mode}, {'answer' if path == 'answer' else 'only_context'}, @ {size} docs"
        entry = record(results, name, "ms", calls.ms[ours], LLM_TARGET, calls.ms[floor],
                       f"per query (ours·LightRAG): {per_query}; {wire}; {accuracy}")
        entry["met"] = bool(entry.get("met")) and same
        entry["requests_per_query"] = {
            side: {key: round(calls.mean(side, path, key), 2) for key in COUNTS} for side in ("ours", "floor")
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--questions", type=int, default=4, help="questions per mode (each asked once per side and path)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    results: Results = {}

    async def run() -> None:
        with tempfile.TemporaryDirectory(prefix="bench-requests-") as tmp:
            await bench_llm(results, Path(tmp), [args.docs], args.questions)

    anyio.run(run)
    sys.stdout.write(markdown(results, machine_info()) + "\n")


if __name__ == "__main__":
    main()
