"""The benchmark table's arithmetic (scripts/bench_report.py): percentiles, ratios, verdicts, rows."""

from __future__ import annotations

import pytest

from scripts.bench_report import Target, markdown, number, percentile, record, stats

MACHINE = {"cpus": 2, "memory_gb": 24, "platform": "Linux", "python": "3.11.7", "date": "2026-11-24"}


def test_percentile_is_nearest_rank() -> None:
    ordered = [float(n) for n in range(1, 21)]
    assert percentile(ordered, 0.95) == 19.0
    assert percentile(ordered, 0.5) == 10.0
    assert percentile([7.0], 0.95) == 7.0


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_stats_reduce_samples_in_any_order() -> None:
    assert stats([3.0, 1.0, 2.0, 10.0]) == {"n": 4, "median": 2.5, "p95": 10.0, "mean": 4.0, "min": 1.0, "max": 10.0}
    assert stats([]) == {"n": 0}


def test_record_gives_the_ratio_of_medians_to_the_floor() -> None:
    results: dict = {}
    entry = record(results, "q", "ms", [10.0, 12.0, 14.0], "≤ 1.1×", [10.0, 10.0, 10.0])
    assert results["q"] is entry
    assert entry["ratio"] == 1.2
    assert entry["floor"]["median"] == 10.0
    assert "met" not in entry  # a target in words decides nothing


def test_ratio_target_is_met_or_missed_by_the_ratio() -> None:
    results: dict = {}
    target = Target("≤ 1.1×", ratio_at_most=1.1)
    assert record(results, "fast", "ms", [10.5], target, [10.0])["met"] is True
    assert record(results, "slow", "ms", [12.0], target, [10.0])["met"] is False


def test_bounds_apply_to_our_median() -> None:
    results: dict = {}
    assert record(results, "a", "ms", [19.0, 25.0, 15.0], Target("< 20 ms", at_most=20.0))["met"] is True
    assert record(results, "b", "docs/min", [140.0], Target("≥ 150", at_least=150.0))["met"] is False


def test_counts_must_equal_the_floor_on_average() -> None:
    results: dict = {}
    same = Target("= LightRAG", same_as_floor=True)
    assert record(results, "equal", "requests", [1.0, 1.0], same, [1.0, 1.0])["met"] is True
    assert record(results, "one more", "requests", [2.0, 1.0], same, [1.0, 1.0])["met"] is False


def test_number_keeps_three_significant_digits() -> None:
    assert number(0.54183) == "0.542"
    assert number(14.0483) == "14.0"
    assert number(1234.5) == "1,234"
    assert number(0) == "0"
    assert number(None) == "—"


def test_markdown_has_one_row_per_figure_with_floor_ratio_target_and_verdict() -> None:
    results: dict = {}
    record(results, "query mix", "ms", [12.0], Target("≤ 1.1×", ratio_at_most=1.1), [10.0], "accuracy 1.00")
    record(results, "worker ready", "s", [1.3], "< 5 s")
    results["skipped"] = {"n": 0}
    lines = markdown(results, MACHINE).splitlines()
    assert lines[0].startswith("Machine: 2 cores, 24 GiB")
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| figure")]
    assert rows == [
        "| query mix | 12.0 ms | 12.0 | 10.0 | 1.20 | ≤ 1.1× | **no** | accuracy 1.00 |",
        "| worker ready | 1.30 s | 1.30 | — | — | < 5 s | — |  |",
    ]


def test_markdown_shows_extra_keys_of_figures_without_notes() -> None:
    results: dict = {}
    record(results, "burst", "ms", [5.0], "no errors")
    results["burst"]["errors"] = 0
    assert "| errors 0 |" in markdown(results, MACHINE)
