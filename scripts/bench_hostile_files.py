#!/usr/bin/env python3
"""How long another user's 50-byte upload takes to answer while hostile files are processed (issue 24).

    .venv/bin/python scripts/bench_hostile_files.py                       # this tree's server
    .venv/bin/python scripts/bench_hostile_files.py --server-tree DIR      # another checkout's code (before/after)

Three scenarios, each on a fresh stdio server (production supervision), each timed from the moment
the bystander's upload is sent:

- `quiet`: bob's upload alone (what it costs on a fresh server: opening his workspace, indexing);
- `fifo`: user mallory sends `lightrag_batch_process` with 5 file items naming FIFOs in an allowed
  folder, all 5 prepared at once (`max_concurrent: 5`); `--delay` (5 s) later user bob uploads a
  50-byte Markdown note;
- `tiff`: mallory uploads two 5.4 MB TIFFs of 100,000 one-pixel pages each, at once; `--delay`
  later (by then both are being parsed: their 7 MB calls take ~2 s to reach an extractor) bob
  uploads the note;
- `scan`: the fair-share case, files that are slow to parse yet within every bound: mallory
  uploads two 30-page scanned TIFFs at once (OCR keeps an extractor busy up to ~85 s each);
  `--delay` later bob uploads the note.

Printed per scenario: bob's answer time and status, mallory's answers (code, time), the server's
health afterwards.  The floor is bob's normal answer budget, LIGHTRAG_MCP_WAIT_SECONDS (15 s).  A
call still unanswered after `--give-up` seconds is reported as such; the FIFOs are then opened for
writing so a blocked reader returns and the server can stop.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_support import PRODUCTION_SUPERVISION  # noqa: E402
from tests.fixtures.hostile_files import make_page_flood_tiff  # noqa: E402
from tests.integration.harness import Client, running_server  # noqa: E402

NOTE = b"# Note\n\nThe MARLIN-4 buoy was moored by Esra Kaya."  # 50 bytes
FIFOS = 5
FLOOR_S = 15.0
SCAN_PAGES = 30  # 6.7 MB: OCR reads pages until 70 % of the 120 s extraction time
SCENARIOS = ["quiet", "fifo", "tiff", "scan"]


def upload(name: str, data: bytes) -> dict[str, Any]:
    return {"filename": name, "content": base64.b64encode(data).decode()}


def outcome(result: Any) -> str:
    content = result.structured_content or {}
    if result.is_error:
        return str(content.get("error_code", "error"))
    return str(content.get("status", "ok"))


async def timed(call: Callable[[], Awaitable[Any]], give_up: float) -> tuple[float | None, str]:
    """(seconds to the answer, its status or code); (None, 'no answer') after `give_up` seconds."""
    started = time.perf_counter()
    with anyio.move_on_after(give_up):
        result = await call()
        return time.perf_counter() - started, outcome(result)
    return None, f"no answer within {give_up:g} s"


def unblock(fifos: list[Path]) -> None:
    """Open each FIFO for writing without blocking: a reader stuck in open() gets end-of-file."""
    for fifo in fifos:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waiting: nothing to release


async def scenario(
    client: Client, hostile: list[tuple[str, Callable[[], Awaitable[Any]]]], delay: float, give_up: float
) -> dict[str, tuple[float | None, str]]:
    answers: dict[str, tuple[float | None, str]] = {}

    async def run(name: str, call: Callable[[], Awaitable[Any]]) -> None:
        answers[name] = await timed(call, give_up)

    async with anyio.create_task_group() as tg:
        for name, call in hostile:
            tg.start_soon(run, name, call)
        await anyio.sleep(delay if hostile else 0)
        tg.start_soon(run, "bob: 50-byte upload", lambda: client.call_as("bob", "upload_to_lightrag", upload("note.md", NOTE)))
    return answers


def fifo_calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    items = [{"item_type": "file", "content": f"pipe-{number}.md"} for number in range(FIFOS)]
    arguments = {"items": items, "batch_options": {"max_concurrent": FIFOS}}  # all at once: the attacker's choice
    return [(f"mallory: batch of {FIFOS} FIFOs", lambda: client.call_as("mallory", "lightrag_batch_process", arguments))]


def tiff_calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    flood = upload("fax.tiff", make_page_flood_tiff(100_000))
    return [
        (f"mallory: 100,000-page TIFF #{number}", lambda: client.call_as("mallory", "upload_to_lightrag", flood))
        for number in (1, 2)
    ]


def scan_calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    from tests.fixtures.scans import image_bytes, render_page

    lines = [f"Line {number} of a scanned page about the MARLIN-{number} buoy." for number in range(30)]
    scan = upload("scan.tiff", image_bytes([render_page(lines) for _ in range(SCAN_PAGES)], "TIFF"))
    return [
        (f"mallory: {SCAN_PAGES}-page scanned TIFF #{number}", lambda: client.call_as("mallory", "upload_to_lightrag", scan))
        for number in (1, 2)
    ]


def no_calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    return []


async def measure(kind: str, tree: Path, delay: float, give_up: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as scratch:
        home, allowed = Path(scratch) / "home", Path(scratch) / "allowed"
        home.mkdir()
        allowed.mkdir()
        fifos = [allowed / f"pipe-{number}.md" for number in range(FIFOS)]
        for fifo in fifos:
            os.mkfifo(fifo)
        env = {
            **PRODUCTION_SUPERVISION,
            "LIGHTRAG_MCP_WAIT_SECONDS": str(FLOOR_S),  # the default answer budget, not the bench's 600 s
            "LIGHTRAG_MCP_ALLOWED_DIRS": str(allowed),
            "PYTHONPATH": str(tree),
        }
        async with running_server(home, cwd=tree, **env) as client:
            await client.wait_ready(timeout=120)
            calls = {"fifo": fifo_calls, "tiff": tiff_calls, "scan": scan_calls, "quiet": no_calls}[kind](client)
            try:
                answers = await scenario(client, calls, delay, give_up)
            finally:
                unblock(fifos)
            with anyio.move_on_after(60):
                health = (await client.health())["status"]
    print(f"\n## {kind} (server code: {tree})")
    for name, (seconds, status) in answers.items():
        shown = "—" if seconds is None else f"{seconds:7.2f} s"
        floor = f"   floor {FLOOR_S:g} s" if name.startswith("bob") else ""
        print(f"  {name:40s} {shown:>10s}  {status}{floor}")
    print(f"  health afterwards: {health if 'health' in locals() else 'no answer'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-tree", type=Path, default=ROOT, help="project tree whose server code runs")
    parser.add_argument("--only", choices=SCENARIOS, help="one scenario")
    parser.add_argument("--delay", type=float, default=5.0, help="seconds between the hostile calls and bob's upload")
    parser.add_argument("--give-up", type=float, default=240.0, help="seconds after which a call counts as unanswered")
    args = parser.parse_args()
    for kind in [args.only] if args.only else SCENARIOS:
        anyio.run(measure, kind, args.server_tree.resolve(), args.delay, args.give_up)
    return 0


if __name__ == "__main__":
    sys.exit(main())
