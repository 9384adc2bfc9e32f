#!/usr/bin/env python3
"""The reliability suite's table (issue 8): what was tried, what was injected, what survived.

Runs ``pytest -m reliability tests/reliability`` with LIGHTRAG_MCP_RELIABILITY_OUT pointing at
a fresh results file (tests/reliability/recorder.py appends one JSON line per measurement),
then prints a Markdown table per suite and in total: inputs tried, faults injected, calls
answered / unanswered, failed calls, documents acknowledged / lost, documents stuck,
cross-user leaks, max and median recovery time, RSS growth (front, worker), fd growth; and a
second table per fault case, and a third per hostile attack (attempts, refused, accepted,
server up, largest RSS). Exits non-zero when a document was lost, a user saw another user's
data, a hostile attempt was accepted, or pytest failed.

    .venv/bin/python scripts/reliability_report.py                  # the default suite
    .venv/bin/python scripts/reliability_report.py --long           # long variants (LIGHTRAG_MCP_RELIABILITY_LONG=1)
    .venv/bin/python scripts/reliability_report.py -- -k faults     # arguments after -- go to pytest
    .venv/bin/python scripts/reliability_report.py --from .reliability/results.jsonl   # only read a file
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE_ORDER = ["fuzz", "protocol", "hostile", "isolation", "faults", "soak"]
RECOVERY_NOTE = (
    "Recovery: a dead, hung or mute worker: fault -> health ready with a new pid; a full disk or an LLM "
    "outage: cause removed -> the next upload processed. Documents acknowledged: acknowledged documents "
    "checked after each fault (faults) or expected at the end (soak)."
)
SUMMED = [
    "inputs_tried",
    "faults_injected",
    "calls_answered",
    "calls_unanswered",
    "failed_calls",
    "documents_acknowledged",
    "documents_lost",
    "documents_stuck",
    "cross_user_leaks",
    "front_crashes",
    "worker_restarts_from_input",
]


def read_results(path: Path) -> list[dict[str, Any]]:
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if raw.strip():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                print(f"{path}:{number}: not JSON, skipped", file=sys.stderr)
    return lines


def summarise(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums of the counts, every recovery time, the largest growths, the skips."""
    total: dict[str, Any] = {key: 0 for key in SUMMED}
    recovery: list[float] = []
    front_rss: list[float] = []
    worker_rss: list[float] = []
    fds: list[float] = []
    skipped: list[str] = []
    for line in lines:
        for key in SUMMED:
            value = line.get(key)
            if isinstance(value, int | float):
                total[key] += value
        recovery += [float(v) for v in line.get("recovery_s") or [] if isinstance(v, int | float)]
        if isinstance(line.get("rss_growth_front_mb"), int | float):
            front_rss.append(line["rss_growth_front_mb"])
        worker = line.get("rss_growth_worker_mb", line.get("rss_growth_mb"))
        if isinstance(worker, int | float):
            worker_rss.append(worker)
        if isinstance(line.get("fd_growth"), int | float):
            fds.append(line["fd_growth"])
        if line.get("skipped"):
            skipped.append(f"{line.get('case')}: {line['skipped']}")
    total.update(
        measurements=len(lines),
        recovery_max=max(recovery) if recovery else None,
        recovery_median=statistics.median(recovery) if recovery else None,
        recoveries=len(recovery),
        rss_front=max(front_rss) if front_rss else None,
        rss_worker=max(worker_rss) if worker_rss else None,
        fd_growth=max(fds) if fds else None,
        skipped=skipped,
    )
    return total


def number(value: Any, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.{digits}f}"
    return f"{int(value):,}"


def row(name: str, s: dict[str, Any]) -> str:
    recovery = "—" if s["recovery_max"] is None else f"{s['recovery_max']:.2f} / {s['recovery_median']:.2f}"
    rss = f"{number(s['rss_front'])} / {number(s['rss_worker'])}"
    cells = [
        name,
        number(s["inputs_tried"]),
        number(s["faults_injected"]),
        f"{number(s['calls_answered'])} / {number(s['calls_unanswered'])}",
        number(s["failed_calls"]),
        f"{number(s['documents_acknowledged'])} / {number(s['documents_lost'])}",
        number(s["documents_stuck"]),
        number(s["cross_user_leaks"]),
        recovery,
        rss,
        number(s["fd_growth"]),
    ]
    return "| " + " | ".join(cells) + " |"


def suite_table(lines: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    by_suite: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        by_suite[str(line.get("suite", "?"))].append(line)
    order = [s for s in SUITE_ORDER if s in by_suite] + sorted(set(by_suite) - set(SUITE_ORDER))
    header = (
        "| suite | inputs tried | faults injected | calls answered / unanswered | failed calls "
        "| documents acknowledged / lost | documents stuck | cross-user leaks | recovery max / median (s) "
        "| RSS growth front / worker (MB) | fd growth |"
    )
    rows = [header, "|" + "---|" * 11]
    rows += [row(suite, summarise(by_suite[suite])) for suite in order]
    total = summarise(lines)
    rows.append(row("**total**", total))
    return "\n".join(rows), total


def fault_table(lines: list[dict[str, Any]]) -> str:
    """Per fault case: runs, what the calls in flight got, recovery, losses."""
    cases: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        if line.get("suite") == "faults" and not line.get("skipped"):
            cases[str(line.get("case"))].append(line)
    if not cases:
        return ""
    rows = [
        "| fault | runs | what the calls got (in flight at the fault; during it) | recovery max / median (s) "
        "| lost | stuck | wrong codes |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, runs in cases.items():
        outcomes: Counter[str] = Counter()
        for run in runs:
            outcomes.update({str(k): int(v) for k, v in (run.get("in_flight") or {}).items()})
        s = summarise(runs)
        recovery = "—" if s["recovery_max"] is None else f"{s['recovery_max']:.2f} / {s['recovery_median']:.2f}"
        got = ", ".join(f"{k} ×{v}" for k, v in sorted(outcomes.items())) or "—"
        rows.append(
            f"| {case} | {len(runs)} | {got} | {recovery} | {number(s['documents_lost'])} "
            f"| {number(s['documents_stuck'])} | {number(s['failed_calls'])} |"
        )
    return "\n".join(rows)


def attack_table(lines: list[dict[str, Any]]) -> str:
    """Per hostile attack (issue 24): attempts, refused, accepted, server up, largest RSS of each process."""
    cases: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        if line.get("suite") == "hostile" and "attempts" in line:
            cases[str(line.get("case"))].append(line)
    if not cases:
        return ""
    rows = [
        "| attack | attempts | refused | accepted | server up | max RSS front / worker (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for case, runs in cases.items():
        sums = {key: sum(int(run.get(key) or 0) for run in runs) for key in ("attempts", "refused", "accepted")}
        up = all(bool(run.get("server_up")) for run in runs)
        front = max((float(run.get("max_rss_front_mb") or 0) for run in runs), default=0.0)
        worker = max((float(run.get("max_rss_worker_mb") or 0) for run in runs), default=0.0)
        rows.append(
            f"| {case} | {sums['attempts']} | {sums['refused']} | {sums['accepted']} | {'yes' if up else '**no**'} "
            f"| {number(front)} / {number(worker)} |"
        )
    return "\n".join(rows)


def run_pytest(results: Path, long: bool, extra: list[str]) -> int:
    env = dict(os.environ, LIGHTRAG_MCP_RELIABILITY_OUT=str(results))
    if long:
        env["LIGHTRAG_MCP_RELIABILITY_LONG"] = "1"
    command = [sys.executable, "-m", "pytest", "-m", "reliability", "tests/reliability", *extra]
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="only read this results file (no pytest run)")
    parser.add_argument("--long", action="store_true", help="long variants: LIGHTRAG_MCP_RELIABILITY_LONG=1")
    parser.add_argument("--out", type=Path, help="results file to write (default: .reliability/results-<time>.jsonl)")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)

    pytest_status = 0
    if args.source is not None:
        results = args.source
        if not results.is_file():
            print(f"{results}: no such results file", file=sys.stderr)
            return 2
    else:
        results = args.out or ROOT / ".reliability" / f"results-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text("", encoding="utf-8")  # fresh: never mix two runs
        pytest_status = run_pytest(results, args.long, extra)

    lines = read_results(results)
    table, total = suite_table(lines)
    parts = [f"Reliability suite ({len(lines)} measurements from {results.name}):", "", table]
    faults = fault_table(lines)
    if faults:
        parts += ["", faults, "", RECOVERY_NOTE]
    attacks = attack_table(lines)
    if attacks:
        parts += ["", attacks]
    if total["skipped"]:
        parts += ["", "Skipped: " + "; ".join(total["skipped"])]
    text = "\n".join(parts)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")

    verdict = []
    if total["documents_lost"]:
        verdict.append(f"{total['documents_lost']} document(s) lost")
    if total["cross_user_leaks"]:
        verdict.append(f"{total['cross_user_leaks']} cross-user leak(s)")
    accepted = sum(int(line.get("accepted") or 0) for line in lines if line.get("suite") == "hostile")
    if accepted:
        verdict.append(f"{accepted} hostile attempt(s) accepted")
    if pytest_status:
        verdict.append(f"pytest exited {pytest_status}")
    if not lines:
        verdict.append("no measurements recorded")
    if verdict:
        print("\nFAILED: " + ", ".join(verdict), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
