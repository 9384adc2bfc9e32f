"""The benchmarks' figures: samples reduced to p50/p95 beside their floor, checked against a
target, and written as one Markdown table (pure functions: tests/unit/test_bench_report.py).

A figure is one row: what we measured (ours), what the same work costs without us (the
floor, measured in the same run), the ratio of their medians, the target and whether it is met.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Any

Results = dict[str, dict[str, Any]]

# Keys other scripts (bench_multiuser) set on an entry after `record`: shown in its notes.
EXTRA_KEYS = ("accuracy", "errors", "leaks", "pings_missed", "throughput_qps")


def percentile(ordered: list[float], share: float) -> float:
    """Nearest-rank percentile of an ascending list (p95: share 0.95)."""
    if not ordered:
        raise ValueError("no samples")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def stats(samples: list[float]) -> dict[str, Any]:
    """n, median, p95, mean, min and max of `samples` (rounded for the table), or just n=0."""
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0}
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 4),
        "p95": round(percentile(ordered, 0.95), 4),
        "mean": round(statistics.fmean(ordered), 4),
        "min": round(ordered[0], 4),
        "max": round(ordered[-1], 4),
    }


@dataclass(frozen=True)
class Target:
    """A target in words, and the bounds that decide whether a figure meets it.

    The bounds apply to our median (`at_most`, `at_least`), to the ratio of our median to the
    floor's (`ratio_at_most`), or ask that both be equal (`same_as_floor`, for counts)."""

    text: str
    at_most: float | None = None
    at_least: float | None = None
    ratio_at_most: float | None = None
    same_as_floor: bool = False

    def met(self, entry: dict[str, Any]) -> bool | None:
        """Whether `entry` meets the target; None when nothing here can decide it."""
        value = entry.get("median")
        checks: list[bool] = []
        if value is None:
            return None
        if self.at_most is not None:
            checks.append(value <= self.at_most)
        if self.at_least is not None:
            checks.append(value >= self.at_least)
        ratio = entry.get("ratio")
        if self.ratio_at_most is not None and ratio is not None:
            checks.append(ratio <= self.ratio_at_most)
        floor = entry.get("floor", {}).get("median")
        if self.same_as_floor and floor is not None:
            checks.append(math.isclose(entry.get("mean", value), entry["floor"].get("mean", floor), abs_tol=1e-9))
        return all(checks) if checks else None


def record(
    results: Results,
    name: str,
    unit: str,
    samples: list[float],
    target: str | Target,
    floor: list[float] | None = None,
    notes: str = "",
) -> dict[str, Any]:
    """Add the figure `name` to `results` (and say it on stderr); returns its entry."""
    goal = target if isinstance(target, Target) else Target(target)
    entry: dict[str, Any] = {"unit": unit, "target": goal.text, **stats(samples)}
    if floor:
        entry["floor"] = stats(floor)
        if entry.get("median") is not None and entry["floor"]["median"]:
            entry["ratio"] = round(entry["median"] / entry["floor"]["median"], 3)
    met = goal.met(entry)
    if met is not None:
        entry["met"] = met
    if notes:
        entry["notes"] = notes
    results[name] = entry
    floor_text = f" (floor {entry['floor'].get('median')}, ratio {entry.get('ratio')})" if floor else ""
    sys.stderr.write(f"  {name}: median {entry.get('median')} {unit}{floor_text}{'  ' + notes if notes else ''}\n")
    return entry


def number(value: Any) -> str:
    """A figure as the table shows it: 3 significant digits, no exponent."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def machine_line(machine: dict[str, Any]) -> str:
    return (
        f"Machine: {machine['cpus']} cores, {machine['memory_gb']} GiB, {machine['platform']}, "
        f"Python {machine['python']}, {machine['date']}."
    )


def markdown(results: Results, machine: dict[str, Any]) -> str:
    """Every figure with its floor, ratio, target and verdict, as one Markdown table."""
    lines = [
        machine_line(machine),
        "",
        "| figure | ours p50 | ours p95 | floor p50 | ratio | target | met | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results.items():
        if not entry.get("n"):
            continue
        floor = entry.get("floor") or {}
        unit = entry["unit"]
        notes = [entry["notes"]] if entry.get("notes") else []
        if not notes:  # figures recorded without notes (bench_multiuser) say these here
            notes = [f"{key} {entry[key]}" for key in EXTRA_KEYS if key in entry]
        met = "—" if entry.get("met") is None else ("yes" if entry["met"] else "**no**")
        lines.append(
            f"| {name} | {number(entry['median'])} {unit} | {number(entry['p95'])} "
            f"| {number(floor.get('median'))} | {number(entry.get('ratio'))} | {entry['target']} | {met} "
            f"| {'; '.join(notes)} |"
        )
    return "\n".join(lines)
