#!/usr/bin/env python3
"""Ops diagnostics: start a worker exactly as the front does, ping it, print its health.

    python scripts/ping_worker.py --count 100          # RTT min/median/max, pid, RSS, versions
    python scripts/ping_worker.py --json --probe       # also open the default workspace

Exit status 0 when the worker became ready and answered every ping, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config.settings import ConfigError, load_settings  # noqa: E402
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
        report["pings"] = {"sent": count, "answered": len(rtts)}
        report["rtt_samples_ms"] = [round(rtt, 4) for rtt in rtts]
        if rtts:
            report["rtt_ms"] = {
                "min": round(min(rtts), 3),
                "median": round(statistics.median(rtts), 3),
                "p95": round(sorted(rtts)[max(0, int(len(rtts) * 0.95) - 1)], 3),
                "max": round(max(rtts), 3),
            }
        try:
            report["status"] = await worker.endpoint.request(m.STATUS.name, {})
            if probe:
                context = CallContext(workspace_for(None, settings.default_workspace), "ping-worker").to_wire()
                health = await worker.endpoint.request(
                    m.HEALTH.name, {"context": context, "arguments": {"check_dependencies": True}}
                )
                report["probe"] = health.get("components", {})
        except (RagError, WorkerGone) as exc:
            report["error"] = str(exc)
        report["healthy"] = len(rtts) == count and "error" not in report
        await worker.terminate(10)
        tg.cancel_scope.cancel()
    return report


def print_human(report: dict[str, Any]) -> None:
    out = sys.stdout.write
    out(f"worker pid {report.get('pid')}: {'healthy' if report['healthy'] else 'UNHEALTHY'}\n")
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
        out(
            f"  uptime {status['uptime_s']:.1f} s, RSS {status['rss_mb']:.1f} MB, "
            f"threads {status['threads_busy']}/{status['threads_limit']}, "
            f"workspaces open {status['workspaces_open']}\n"
        )
    if "probe" in report:
        out(f"  probe: {orjson.dumps(report['probe']).decode()}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10, help="pings to send (default 10)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for each pong")
    parser.add_argument("--probe", action="store_true", help="also open the default workspace's LightRAG")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    try:
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
