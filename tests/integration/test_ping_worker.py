"""scripts/ping_worker.py: starts a worker like the front does and reports its health."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson

from tests.conftest import PROJECT_ROOT, PYTHON, client_env

SCRIPT = PROJECT_ROOT / "scripts" / "ping_worker.py"


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PYTHON, str(SCRIPT), *args], env=client_env(home, **env), cwd=home, capture_output=True, timeout=120
    )


def test_a_healthy_worker_reports_latency_and_versions(home: Path) -> None:
    done = run(home, "--count", "20", "--json")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = orjson.loads(done.stdout)
    assert report["healthy"] and report["pings"] == {"sent": 20, "answered": 20}
    assert report["rtt_ms"]["min"] <= report["rtt_ms"]["median"] <= report["rtt_ms"]["max"]
    assert report["versions"]["lightrag"] == "1.5.7" and report["status"]["pid"] == report["pid"]


def test_the_human_report_names_the_figures(home: Path) -> None:
    done = run(home, "--count", "3")
    assert done.returncode == 0
    text = done.stdout.decode()
    assert "healthy" in text and "median" in text and "RSS" in text


def test_an_unreachable_worker_exits_non_zero(home: Path) -> None:
    done = run(home, "--count", "3", "--json", LIGHTRAG_MCP_WORKER_COMMAND="false", LIGHTRAG_MCP_START_TIMEOUT="5")
    assert done.returncode == 1
    report = orjson.loads(done.stdout)
    assert report["healthy"] is False and "exited" in report["error"]


def test_bad_configuration_is_one_clear_line(home: Path) -> None:
    done = run(home, LIGHTRAG_MCP_PING_TIMEOUT="never")
    assert done.returncode == 2
    assert b"LIGHTRAG_MCP_PING_TIMEOUT" in done.stderr and b"Traceback" not in done.stderr
