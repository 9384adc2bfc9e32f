"""The worker's cycle collector (`rag_worker.app.GC_THRESHOLDS`): the rows a call holds while it
awaits the engine no longer set off full collections, which traverse everything the worker keeps
(at 5,000 documents 165-185 ms each, dozens of them during a few graph calls)."""

from __future__ import annotations

import gc
from typing import Any

from rag_worker.app import GC_THRESHOLDS


def full_collections(thresholds: tuple[int, int, int], kept: list[Any]) -> int:
    """Full collections while 40 calls each build 20,000 rows and hold them for two more calls,
    beside `kept` (what the worker keeps: graph snapshots, models)."""
    full = [0]

    def count(phase: str, info: dict[str, Any]) -> None:
        full[0] += phase == "stop" and info["generation"] == 2

    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    gc.callbacks.append(count)
    try:
        held: list[list[dict[str, Any]]] = []
        for call in range(40):
            held.append([{"id": f"{call}-{row}", "properties": {"weight": row}} for row in range(20_000)])
            del held[:-3]
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*before)
    assert kept
    return full[0]


def test_a_calls_rows_set_off_no_full_collection_beside_what_the_worker_keeps() -> None:
    kept = [{"name": f"entity {n}", "attrs": {"n": n}} for n in range(50_000)]  # a kept graph's objects
    gc.collect()
    assert full_collections((700, 10, 10), kept) >= 3  # Python's default
    assert full_collections(GC_THRESHOLDS, kept) <= 1
