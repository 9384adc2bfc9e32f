"""What the reliability suite tried and what survived, for scripts/reliability_report.py.

Each test appends one JSON line per measurement to `RESULTS_FILE` (override with
LIGHTRAG_MCP_RELIABILITY_OUT); the report script sums and maximises them into a table.
Names of the numbers (all optional per line):

  inputs_tried, calls_answered, calls_unanswered, front_crashes, worker_restarts_from_input,
  faults_injected, documents_acknowledged, documents_lost, documents_stuck,
  cross_user_leaks, recovery_s (a list of seconds), rss_growth_mb, fd_growth,
  failed_calls (calls that should have succeeded and did not)

Hostile attacks (suite "hostile", lines with `attempts`, one table row per case): attempts,
refused, accepted, server_up, max_rss_front_mb, max_rss_worker_mb.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
RESULTS_FILE = Path(os.environ.get("LIGHTRAG_MCP_RELIABILITY_OUT") or PROJECT / ".reliability" / "results.jsonl")
# Long variants (more examples, more fault runs, the full soak) run only when asked.
LONG = os.environ.get("LIGHTRAG_MCP_RELIABILITY_LONG", "").lower() in {"1", "true", "yes"}


def record(suite: str, case: str, **numbers: Any) -> None:
    """Append one measurement: `suite` (fuzz, protocol, faults, isolation, soak, hostile), `case`."""
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    line = {"suite": suite, "case": case, "at": time.time(), **numbers}
    with RESULTS_FILE.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
