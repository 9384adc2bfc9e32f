"""Fault injection against a real worker: crash, hang, garbage on the pipe, a worker that
never becomes ready, a restart storm, recycling, and the front dying (SPEC §2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.conftest import PYTHON, client_env
from tests.integration.harness import Client, error_of, process_gone, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
DEBUG = {"LIGHTRAG_MCP_DEBUG_METHODS": "1"}
FLAKY = Path(__file__).with_name("flaky_worker.py")


async def call_while(client: Client, fault: Callable[[], None]) -> Any:
    """Start a long worker call, inject `fault` while it runs, return the call's result."""
    outcome: dict[str, Any] = {}

    async def long_call() -> None:
        outcome["result"] = await client.call("lightrag_debug", {"action": "sleep", "seconds": 60})

    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        await anyio.sleep(0.5)
        fault()
    return outcome["result"]


async def test_sigkill_during_a_call_fails_it_at_once_and_the_next_call_works(home: Path) -> None:
    async with running_server(home, **DEBUG) as client:
        pid = await client.worker_pid()
        error = error_of(await call_while(client, lambda: os.kill(pid, signal.SIGKILL)))
        assert error["error_code"] == "WORKER_RESTARTED" and error["retryable"] is True
        health = await client.wait_ready(not_pid=pid)
        assert health["components"]["worker"]["restarts"] == 1
        assert not (await client.call("lightrag_debug", {"action": "echo", "text": "again"})).is_error


async def test_a_frozen_worker_is_detected_by_ping_and_replaced(home: Path) -> None:
    async with running_server(home, **DEBUG) as client:
        pid = await client.worker_pid()
        result = await call_while(client, lambda: os.kill(pid, signal.SIGSTOP))
        assert error_of(result)["error_code"] == "WORKER_RESTARTED"
        health = await client.wait_ready(not_pid=pid)
        assert "did not answer a ping" in health["components"]["worker"]["last_failure"]
        assert process_gone(pid)


async def test_a_blocked_event_loop_counts_as_hung(home: Path) -> None:
    async with running_server(home, **DEBUG) as client:
        pid = await client.worker_pid()
        error = error_of(await client.call("lightrag_debug", {"action": "block", "seconds": 30}))
        assert error["error_code"] == "WORKER_RESTARTED"
        await client.wait_ready(not_pid=pid)


async def test_garbage_and_huge_lines_on_the_pipe_are_skipped(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_FRAME_MB="1", **DEBUG) as client:
        pid = await client.worker_pid()
        result = await client.call("lightrag_debug", {"action": "garbage", "size": 3_000_000})
        assert not result.is_error
        health = await client.health()
        worker = health["components"]["worker"]
        assert worker["pid"] == pid and worker["bad_frames"] == 3  # not-json, not-a-message, oversized


async def test_oversized_requests_and_results_become_clear_errors(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_FRAME_MB="1", **DEBUG) as client:
        pid = await client.worker_pid()
        too_big_request = await client.call("lightrag_debug", {"action": "echo", "text": "z" * 2_000_000})
        assert error_of(too_big_request)["error_code"] == "RESOURCE_LIMIT_EXCEEDED"
        too_big_result = await client.call("lightrag_debug", {"action": "echo", "size": 2_000_000})
        assert error_of(too_big_result)["error_code"] == "RESOURCE_LIMIT_EXCEEDED"
        assert (await client.health())["components"]["worker"]["pid"] == pid


async def test_a_worker_that_never_becomes_ready_is_replaced_and_calls_fail_clearly(home: Path) -> None:
    never = f"{sys.executable} -c 'import time; time.sleep(600)'"
    env = {"LIGHTRAG_MCP_WORKER_COMMAND": never, "LIGHTRAG_MCP_START_TIMEOUT": "1", "LIGHTRAG_MCP_READY_WAIT": "1"}
    async with running_server(home, **env, **DEBUG) as client:
        with anyio.fail_after(30):
            while (await client.health())["components"]["worker"]["restarts"] < 1:
                await anyio.sleep(0.2)
        health = await client.health()
        assert health["status"] in {"degraded", "unhealthy"}
        assert "did not become ready" in health["components"]["worker"]["last_failure"]
        error = error_of(await client.call("lightrag_debug", {"action": "echo"}))
        assert error["error_code"] == "SERVICE_UNAVAILABLE" and error["retryable"] is True


async def test_a_restart_storm_opens_the_circuit_and_a_probe_closes_it(home: Path, tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    env = {
        "LIGHTRAG_MCP_WORKER_COMMAND": f"{sys.executable} {FLAKY} {counter} 4",
        "LIGHTRAG_MCP_MAX_RESTARTS": "2",
        "LIGHTRAG_MCP_CIRCUIT_COOLDOWN": "3",
    }
    async with running_server(home, **env, **DEBUG) as client:
        with anyio.fail_after(30):
            while (await client.health())["components"]["worker"]["state"] != "circuit_open":
                await anyio.sleep(0.05)
        health = await client.health()
        assert health["status"] == "unhealthy" and health["components"]["worker"]["circuit_open"]
        error = error_of(await client.call("lightrag_debug", {"action": "echo"}))
        assert error["error_code"] == "SERVICE_UNAVAILABLE"
        # Starts 4 fail; after the cool-down a probe start (the 5th or later) succeeds.
        health = await client.wait_ready(timeout=60)
        assert health["status"] == "healthy" and int(counter.read_text()) >= 5
        assert not (await client.call("lightrag_debug", {"action": "echo"})).is_error


async def test_recycling_after_n_calls_swaps_the_worker_without_failing_a_call(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_REQUESTS="5", **DEBUG) as client:
        first = await client.worker_pid()
        pids = set()
        for i in range(12):
            result = await client.call("lightrag_debug", {"action": "echo", "text": str(i)})
            assert not result.is_error, result.content
            assert result.structured_content["echo"] == str(i)
            pids.add(result.structured_content["pid"])
        health = await client.health()
        assert len(pids) >= 2 and first in pids
        assert health["components"]["worker"]["recycles"] >= 1 and health["components"]["worker"]["restarts"] == 0
        assert process_gone(first)


async def test_a_recycle_due_while_the_worker_indexes_waits_until_indexing_ends(home: Path) -> None:
    """Stopping the worker mid-indexing would interrupt LightRAG's pipeline (its documents are
    then processed again): the recycle due after LIGHTRAG_MCP_MAX_REQUESTS calls waits until the
    worker has indexed what it was given, then happens."""
    env = {"LIGHTRAG_MCP_MAX_REQUESTS": "4", "LIGHTRAG_MCP_WAIT_SECONDS": "0", "LIGHTRAG_MCP_PING_INTERVAL": "0.2"}
    async with running_server(home, **env) as client:
        first = await client.worker_pid()
        for i in range(6):
            text = f"# Report {i}\n\n" + f"The KESTREL-{i} array was built by Orrin Vale in Lisbon in 19{i}0. " * 40
            result = await client.call("lightrag_insert_text", {"text": text, "title": f"report-{i}"})
            assert not result.is_error, result.content
        polls = 0
        with anyio.fail_after(240):
            while True:
                worker = (await client.health())["components"]["worker"]
                status = await client.call("lightrag_get_status", {})
                assert not status.is_error and status.structured_content is not None, status.content
                if status.structured_content["counts"].get("processed", 0) == 6:
                    break
                # Still indexing after that health check, so the worker was indexing during it.
                assert (worker["pid"], worker["recycles"], worker["restarts"]) == (first, 0, 0), worker
                polls += 1
                await anyio.sleep(0.05)
        assert polls >= 2, "the documents were indexed before the call limit was passed: nothing was tested"
        worker = (await client.wait_ready(timeout=60, not_pid=first))["components"]["worker"]
        assert worker["recycles"] >= 1 and worker["restarts"] == 0
        assert process_gone(first)


async def test_recycling_over_the_rss_limit(home: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_RSS_MB="1", LIGHTRAG_MCP_PING_INTERVAL="0.3", **DEBUG) as client:
        first = await client.worker_pid()
        health = await client.wait_ready(not_pid=first)
        assert health["components"]["worker"]["recycles"] >= 1


async def test_closing_stdin_stops_the_worker(home: Path) -> None:
    async with running_server(home) as client:
        pid = await client.worker_pid()
    assert process_gone(pid)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_front_stops_it_its_worker_and_the_embedded_engine_gracefully(home: Path, signum: int) -> None:
    """A client that stops its stdio server with a signal (the TypeScript SDK two seconds after
    closing stdin, `docker stop`) gets what closing stdin gets: the worker stops gracefully and,
    as the engine's last user, stops it.  Before, the front died at once, its worker was killed
    with it, and the engine was left running."""
    from rag_worker.storage.embedded_engine import read_postmaster

    data = home / "data"
    front = subprocess.Popen(
        [PYTHON, "-m", "mcp_front"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=client_env(home, WORKING_DIR=str(data)),
        cwd=home,
    )
    assert front.stdin is not None and front.stdout is not None
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lightrag_list_documents", "arguments": {}}},
        ):
            front.stdin.write(json.dumps(message).encode() + b"\n")
            front.stdin.flush()
            if "id" in message:
                assert json.loads(front.stdout.readline())["id"] == message["id"]
        worker = psutil.Process(front.pid).children()[0]
        engine = read_postmaster(data / "engine")
        assert engine is not None and psutil.pid_exists(engine[0])

        front.send_signal(signum)
        assert front.wait(30) == 0
        assert process_gone(worker.pid) and process_gone(engine[0])
        assert read_postmaster(data / "engine") is None  # stopped, not killed: no pid file left
    finally:
        if front.poll() is None:
            front.kill()


def test_a_sigkilled_front_leaves_no_orphan_worker(home: Path) -> None:
    front = subprocess.Popen(
        [PYTHON, "-m", "mcp_front"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=client_env(home),
        cwd=home,
    )
    try:
        parent = psutil.Process(front.pid)
        worker = None
        for _ in range(200):
            children = parent.children()
            if children:
                worker = children[0]
                break
            anyio.run(anyio.sleep, 0.05)
        assert worker is not None, "the front did not spawn a worker"
        front.kill()
        front.wait(10)
        assert process_gone(worker.pid)
    finally:
        if front.poll() is None:
            front.kill()
