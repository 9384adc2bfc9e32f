#!/usr/bin/env python3
"""Two server processes of one user on one data directory: how long the second one takes to
serve its first call while the first holds the user's knowledge base, idle.

    .venv/bin/python scripts/bench_second_process.py [--runs 3] [--code /path/to/other/checkout]

LibreChat can start two stdio servers for one user (its first calls race), and VS Code may run
one beside it. Each run starts server A (LIGHTRAG_MCP_USER_ID=dana), opens the knowledge base
with a listing, starts server B on the same WORKING_DIR, waits for B's worker, then times B's
first `lightrag_list_documents` and says how it ended (served, or its error code), and whether A
can still serve a call afterwards. Prints each run and the median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.harness import running_server  # noqa: E402


def _outcome(result: object) -> str:
    structured = getattr(result, "structured_content", None) or {}
    return str(structured.get("error_code")) if getattr(result, "is_error", False) else "served"


async def one_run(home: Path, code: str | None) -> tuple[float, str, str]:
    env = {"LIGHTRAG_MCP_USER_ID": "dana", "WORKING_DIR": str(home / "shared-data")}
    if code:  # the servers run another checkout's code (a before/after comparison)
        env["PYTHONPATH"] = code
    async with running_server(home, **env) as first:
        await first.wait_ready()
        opened = await first.call("lightrag_list_documents", {})
        if opened.is_error:
            raise SystemExit(f"server A could not open the knowledge base: {opened.content}")
        async with running_server(home, **env) as second:
            await second.wait_ready()
            started = time.perf_counter()
            result = await second.call("lightrag_list_documents", {})
            seconds = time.perf_counter() - started
        again = await first.call("lightrag_list_documents", {})
    return seconds, _outcome(result), _outcome(again)


async def main(runs: int, code: str | None) -> None:
    seconds = []
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            took, outcome, first_after = await one_run(home, code)
        seconds.append(took)
        sys.stdout.write(f"run {run + 1}: second process's first call {outcome} after {took:.2f} s; "
                         f"the first process's next call {first_after}\n")
    sys.stdout.write(f"median: {statistics.median(seconds):.2f} s over {runs} runs\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--code", help="run the servers from this checkout (PYTHONPATH) instead of this one")
    options = parser.parse_args()
    anyio.run(main, options.runs, options.code)
