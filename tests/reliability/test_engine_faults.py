"""Faults of the embedded database engine, with counts (issue 25): SIGKILL of the engine while
documents index, and two per-user server processes indexing at once on one data directory.
(SIGKILL of the worker mid-commit is test_faults.py's `test_sigkill_of_the_worker_during`,
which runs on the JSON files, the default; these run on the engine.)

After an engine kill: the call in flight answers (success, or STORAGE_ERROR, retryable), the
next call restarts the engine, nothing stays pending/processing, and every document
acknowledged before the fault is listed as processed, once, and found by a query."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from rag_worker.storage.embedded_engine import ENGINE_DIR, read_postmaster
from tests.integration.harness import running_server
from tests.reliability.test_faults import (
    KILL_WINDOWS,
    RUNS,
    Bench,
    Fault,
    Tally,
    b64,
    bench_server,
    finish_run,
    run_with_fault,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

STORAGE_FAILED = {"STORAGE_ERROR"}  # what a call in flight may get while the engine is down


def engine_dir(home: Path) -> Path:
    return home / ".local" / "share" / "lightrag-mcp" / ENGINE_DIR


def kill_engine(home: Path, tally: Tally) -> Fault:
    def fault(tg: object) -> None:
        running = read_postmaster(engine_dir(home))
        assert running is not None, "the engine is not running"
        tally.notes.append(f"engine pid {running[0]} killed")
        os.kill(running[0], signal.SIGKILL)

    return fault


async def engine_back(bench: Bench, home: Path, tally: Tally, fault_at: float, old_pid: int) -> None:
    """Calls until one succeeds on a restarted engine (a new postmaster pid); records fault → back."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        result = await bench.client.call("lightrag_get_status", {})
        running = read_postmaster(engine_dir(home))
        if not result.is_error and running is not None and running[0] != old_pid:
            tally.recovery_s.append(round(time.monotonic() - fault_at, 3))
            return
        await anyio.sleep(0.5)
    tally.notes.append("the engine was not back within 120 s")
    tally.unanswered += 1


@pytest.mark.xfail(
    strict=False,  # the kill moment is random: most runs pass, and one cause of the failures is now fixed
    reason="under observation (issue 25, engine not the default): a kill while a batch was handed to LightRAG left "
    "the document pending with no call to hand it over again (seen 2 runs in 6); a refused batch is now handed "
    "over again (test_intake), other kill moments are not ruled out yet",
)
async def test_sigkill_of_the_engine_while_documents_index(home: Path) -> None:
    """SIGKILL of the engine at a random moment of back-to-back uploads (indexing in the
    background): no acknowledged document lost or doubled, calls answer STORAGE_ERROR at worst."""
    problems: list[str] = []
    async with bench_server(home, 101, LIGHTRAG_MCP_WAIT_SECONDS="0", LIGHTRAG_MCP_DEFAULT_STORAGE="engine") as bench:
        for run in range(RUNS):
            tally = Tally()
            old = read_postmaster(engine_dir(home))
            assert old is not None
            delay = bench.rnd.uniform(0.02, KILL_WINDOWS["upload"])
            fault_at = await run_with_fault(tally, bench.upload_pdf, kill_engine(home, tally), delay)
            await engine_back(bench, home, tally, fault_at, old[0])
            await bench.settle(tally)
            await bench.verify(tally)
            listed = await bench.listing(tally)
            doubled = [name for name, count in Counter(item["filename"] for item in listed.values()).items() if count > 1]
            tally.lost.extend(f"{name}: listed twice" for name in doubled)
            finish_run("sigkill_engine_upload", run, bench, tally, STORAGE_FAILED, problems)
    assert not problems, problems


async def test_two_user_processes_index_at_once_on_one_data_directory(tmp_path: Path) -> None:
    """LibreChat's shape: one server process per user, one data directory, one engine for both."""
    data = tmp_path / "data"
    per_user = 6
    engines: dict[str, int] = {}
    processed: dict[str, int] = {}

    async def user(name: str) -> None:
        home = tmp_path / name
        home.mkdir()
        async with running_server(home, WORKING_DIR=str(data), LIGHTRAG_MCP_USER_ID=name, LIGHTRAG_MCP_WAIT_SECONDS="0",
                                  LIGHTRAG_MCP_DEFAULT_STORAGE="engine") as client:  # fmt: skip
            await client.wait_ready()
            for number in range(per_user):
                doc = f"# {name} note {number}\n\nThe {name.upper()}-{number} relay was assembled by {name} in Tromso."
                arguments = {"filename": f"{name}-{number}.md", "content": b64(doc), "mimeType": "text/markdown"}
                result = await client.call("upload_to_lightrag", arguments)
                assert not result.is_error, result.content
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                status = (await client.call("lightrag_get_status", {})).structured_content or {}
                if status["counts"].get("processed", 0) + status["counts"].get("failed", 0) >= per_user:
                    break
                await anyio.sleep(0.5)
            processed[name] = status["counts"].get("processed", 0)
            health = await client.health()
            engines[name] = health["components"]["storage"]["engine"]["pid"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(user, "alice")
        tg.start_soon(user, "bob")
    assert processed == {"alice": per_user, "bob": per_user}
    assert engines["alice"] == engines["bob"]  # one engine for both processes
    assert read_postmaster(data / ENGINE_DIR) is None  # the last one to leave stopped it

