#!/usr/bin/env python3
"""Ops diagnostics: start a worker exactly as the front does, ping it, print its health.

    python scripts/ping_worker.py --count 100          # RTT min/median/max, pid, RSS, versions
    python scripts/ping_worker.py --json --probe       # also open the default workspace
    python scripts/ping_worker.py --url http://127.0.0.1:8765/mcp --token T [--user U]

With --url it asks a running HTTP server instead (the SDK's streamable HTTP client): the worker's
figures come from the health tool, the RTT is of MCP pings to the server.  The token may also
come from LIGHTRAG_MCP_TOKEN; --user is sent in LIGHTRAG_MCP_HTTP_USER_HEADER (a gateway token).

Exit status 0 when the worker became ready and answered every ping, 1 otherwise, 2 on a bad
configuration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config.settings import ConfigError, load_settings, setting  # noqa: E402
from mcp_front.identity import workspace_for  # noqa: E402
from mcp_front.server import worker_environment  # noqa: E402
from mcp_front.startup import load_env_file  # noqa: E402
from mcp_front.worker_process import WorkerGone, WorkerProcess, worker_command  # noqa: E402
from protocol import RagError  # noqa: E402
from protocol import methods as m  # noqa: E402
from protocol.context import CallContext  # noqa: E402


async def diagnose(count: int, timeout: float, probe: bool) -> dict[str, Any]:
    load_env_file()
    settings = load_settings()
    run_dir = Path(settings.data_dir) / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    worker = WorkerProcess(
        worker_command(settings.worker_command),
        env=worker_environment(settings),
        cwd=str(run_dir),
        max_frame_bytes=settings.max_frame_mb * 2**20,
    )
    report: dict[str, Any] = {"healthy": False, "command": worker.command}
    spawned = time.perf_counter()
    async with anyio.create_task_group() as tg:
        await worker.start(tg)
        report["pid"] = worker.pid
        with anyio.move_on_after(settings.start_timeout):
            await worker.ready.wait()
        if not worker.ready.is_set():
            report["error"] = worker.exit_reason or f"not ready within {settings.start_timeout:g}s"
            worker.kill("diagnostics finished")
            tg.cancel_scope.cancel()
            return report
        report["ready_s"] = round(time.perf_counter() - spawned, 3)
        report["versions"] = worker.ready_info.get("versions", {})
        rtts: list[float] = []
        for _ in range(count):
            rtt = await worker.ping(timeout)
            if rtt is None:
                break
            rtts.append(rtt * 1000)
        report.update(ping_figures(count, rtts))
        try:
            if probe:  # first: opening the workspace starts the engine, which the status then shows
                context = CallContext(workspace_for(None, settings.default_workspace), "ping-worker").to_wire()
                health = await worker.endpoint.request(
                    m.HEALTH.name, {"context": context, "arguments": {"check_dependencies": True}}
                )
                report["probe"] = health.get("components", {})
            report["status"] = await worker.endpoint.request(m.STATUS.name, {})
        except (RagError, WorkerGone) as exc:
            report["error"] = str(exc)
        report["healthy"] = len(rtts) == count and "error" not in report
        await worker.terminate(10)
        tg.cancel_scope.cancel()
    return report


def ping_figures(count: int, rtts: list[float]) -> dict[str, Any]:
    """`pings`, `rtt_samples_ms` and (when any answered) `rtt_ms` of a report."""
    figures: dict[str, Any] = {"pings": {"sent": count, "answered": len(rtts)}}
    figures["rtt_samples_ms"] = [round(rtt, 4) for rtt in rtts]
    if rtts:
        figures["rtt_ms"] = {
            "min": round(min(rtts), 3),
            "median": round(statistics.median(rtts), 3),
            "p95": round(sorted(rtts)[max(0, int(len(rtts) * 0.95) - 1)], 3),
            "max": round(max(rtts), 3),
        }
    return figures


HEALTH_TOOL = "lightrag_health_check"
HTTP_READY_TIMEOUT = 60.0
STATUS_FIELDS = ("pid", "uptime_s", "rss_mb", "versions", "requests_served", "workspaces_open", "engine")


async def diagnose_http(url: str, headers: dict[str, str], count: int, timeout: float, probe: bool) -> dict[str, Any]:
    """The same report from a running HTTP server: its health tool and MCP pings."""
    import httpx2

    report: dict[str, Any] = {"healthy": False, "url": url}
    refusals: list[str] = []

    async def note_refusal(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            await response.aread()
            refusals.append(f"HTTP {response.status_code}: {response.text[:300]}")

    try:
        async with httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30, read=300), event_hooks={"response": [note_refusal]}
        ) as http:
            await _diagnose_http(report, url, http, count, timeout, probe)
    except Exception as exc:  # an ExceptionGroup from the client's task group, usually
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        report["error"] = refusals[0] if refusals else f"{type(exc).__name__}: {exc}"[:500]
    return report


async def _diagnose_http(report: dict[str, Any], url: str, http: Any, count: int, timeout: float, probe: bool) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    started = time.perf_counter()
    async with (
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        health = await _health_once_ready(session, HTTP_READY_TIMEOUT)
        worker = health["components"]["worker"]
        report["pid"] = worker["pid"]
        if worker["state"] != "ready":
            report["error"] = f"worker {worker['state']}: {worker.get('last_failure') or 'not ready'}"
            return
        report["ready_s"] = round(time.perf_counter() - started, 3)
        report["versions"] = worker.get("versions", {})
        rtts: list[float] = []
        for _ in range(count):
            sent = time.perf_counter()
            with anyio.move_on_after(timeout):
                await session.send_ping()
                rtts.append((time.perf_counter() - sent) * 1000)
        report.update(ping_figures(count, rtts))
        details = health.get("worker_details", {})
        report["status"] = {name: details[name] for name in STATUS_FIELDS if name in details}
        if probe:
            probed = await session.call_tool(HEALTH_TOOL, {"check_dependencies": True})
            report["probe"] = (probed.structured_content or {}).get("components", {})
        if health["status"] != "healthy":
            report["error"] = f"health is {health['status']}: {'; '.join(health.get('notes', []))[:500]}"
        report["healthy"] = len(rtts) == count and "error" not in report


async def _health_once_ready(session: Any, within: float) -> dict[str, Any]:
    """The health tool's report, polled until the worker is ready (or `within` seconds pass)."""
    deadline = time.monotonic() + within
    while True:
        result = await session.call_tool(HEALTH_TOOL, {})
        health: dict[str, Any] = result.structured_content or {}
        if result.is_error or "components" not in health:
            raise RuntimeError(f"the health tool failed: {result.content[0].text if result.content else '?'}")
        if health["components"]["worker"]["state"] == "ready" or time.monotonic() > deadline:
            return health
        await anyio.sleep(0.2)


def print_human(report: dict[str, Any]) -> None:
    out = sys.stdout.write
    where = f" behind {report['url']}" if "url" in report else ""
    out(f"worker pid {report.get('pid')}{where}: {'healthy' if report['healthy'] else 'UNHEALTHY'}\n")
    if "error" in report:
        out(f"  error: {report['error']}\n")
    if "ready_s" in report:
        out(f"  ready after {report['ready_s']:.3f} s; versions {report.get('versions')}\n")
    if "rtt_ms" in report:
        rtt = report["rtt_ms"]
        out(
            f"  ping RTT ms over {report['pings']['answered']}/{report['pings']['sent']}: "
            f"min {rtt['min']:.3f}  median {rtt['median']:.3f}  p95 {rtt['p95']:.3f}  max {rtt['max']:.3f}\n"
        )
    status = report.get("status")
    if status:
        threads = f"threads {status['threads_busy']}/{status['threads_limit']}, " if "threads_limit" in status else ""
        out(
            f"  uptime {status['uptime_s']:.1f} s, RSS {status['rss_mb']:.1f} MB, "
            f"{threads}workspaces open {status['workspaces_open']}\n"
        )
    engine = (status or {}).get("engine")
    if engine:
        where = engine.get("data_dir")
        if engine.get("up"):
            out(f"  embedded engine: up, pid {engine['pid']}, {engine['version']}, {where}, uptime {engine['uptime_s']:.0f} s\n")
        else:
            out(f"  embedded engine: not running in this worker yet ({where}; --probe opens a knowledge base)\n")
    if "probe" in report:
        out(f"  probe: {orjson.dumps(report['probe']).decode()}\n")


def http_headers(token: str | None, user: str | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if user:
        name = "LIGHTRAG_MCP_HTTP_USER_HEADER"
        headers[setting(name).parse(name, os.environ.get(name, setting(name).default))] = user
    return headers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10, help="pings to send (default 10)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for each pong")
    parser.add_argument("--probe", action="store_true", help="also open the default workspace's LightRAG")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--url", help="ask a running HTTP server instead, e.g. http://127.0.0.1:8765/mcp")
    parser.add_argument("--token", help="bearer token for --url (default: $LIGHTRAG_MCP_TOKEN)")
    parser.add_argument("--user", help="user to name in the user header (gateway tokens)")
    args = parser.parse_args()
    try:
        if args.url:
            headers = http_headers(args.token or os.environ.get("LIGHTRAG_MCP_TOKEN"), args.user)
            report = anyio.run(diagnose_http, args.url, headers, max(1, args.count), args.timeout, args.probe)
        else:
            report = anyio.run(diagnose, max(1, args.count), args.timeout, args.probe)
    except ConfigError as exc:
        sys.stderr.write(f"configuration error: {exc}\n")
        return 2
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print_human(report)
    return 0 if report["healthy"] else 1


if __name__ == "__main__":
    sys.exit(main())
