"""The supervisor's restart policy and states, without any process."""

from __future__ import annotations

from mcp_front.restart_policy import Decision, Outcome, RestartPolicy, WorkerState
from mcp_front.supervisor import SupervisorSnapshot

POLICY = RestartPolicy(max_restarts=3, restart_window=60.0, backoff_initial=0.5, backoff_max=4.0, circuit_cooldown=30.0)


def test_the_first_failure_restarts_after_the_initial_backoff() -> None:
    assert POLICY.next(Outcome.FAILED, [], now=100.0) == Decision(WorkerState.RESTARTING, 0.5)


def test_the_backoff_doubles_with_each_recent_failure() -> None:
    assert POLICY.next(Outcome.FAILED, [99.0], now=100.0).delay == 1.0
    assert POLICY.next(Outcome.FAILED, [98.0, 99.0], now=100.0).delay == 2.0


def test_the_backoff_is_capped() -> None:
    policy = RestartPolicy(max_restarts=10, restart_window=60.0, backoff_initial=0.5, backoff_max=4.0, circuit_cooldown=30.0)
    assert policy.next(Outcome.FAILED, [90.0 + i for i in range(8)], now=100.0) == Decision(WorkerState.RESTARTING, 4.0)


def test_more_than_max_restarts_within_the_window_opens_the_circuit_for_the_cooldown() -> None:
    assert POLICY.next(Outcome.FAILED, [97.0, 98.0, 99.0], now=100.0) == Decision(WorkerState.CIRCUIT_OPEN, 30.0)


def test_exactly_max_restarts_within_the_window_still_restarts() -> None:
    assert POLICY.next(Outcome.FAILED, [98.0, 99.0], now=100.0).state is WorkerState.RESTARTING


def test_failures_older_than_the_window_do_not_count() -> None:
    old = [10.0, 11.0, 12.0, 13.0]
    assert POLICY.next(Outcome.FAILED, old, now=100.0) == Decision(WorkerState.RESTARTING, 0.5)
    assert POLICY.recent(old + [99.0], now=100.0) == 1


def test_a_failed_probe_reopens_the_circuit_while_the_storm_is_in_the_window() -> None:
    storm = [60.0, 61.0, 62.0, 63.0]  # opened the circuit at 63; the probe after the cool-down fails at 93
    assert POLICY.next(Outcome.FAILED, storm, now=93.0).state is WorkerState.CIRCUIT_OPEN


def test_a_failed_probe_after_the_window_restarts_with_backoff() -> None:
    storm = [60.0, 61.0, 62.0, 63.0]
    assert POLICY.next(Outcome.FAILED, storm, now=200.0) == Decision(WorkerState.RESTARTING, 0.5)


def test_a_recycle_is_not_a_restart() -> None:
    storm = [97.0, 98.0, 99.0]
    assert POLICY.next(Outcome.RECYCLED, storm, now=100.0) == Decision(WorkerState.STARTING, 0.0)


def test_the_states_are_the_strings_the_health_tool_reports() -> None:
    assert [state.value for state in WorkerState] == ["starting", "ready", "restarting", "circuit_open", "stopped"]


def test_a_snapshot_reads_as_the_health_tools_worker_component() -> None:
    snapshot = SupervisorSnapshot(
        state=WorkerState.CIRCUIT_OPEN,
        pid=None,
        uptime_s=None,
        rss_mb=None,
        restarts=4,
        restarts_recent=4,
        recycles=0,
        in_flight=0,
        calls_served=0,
        last_ping_rtt_ms=None,
        ping_rtt_max_ms=0.0,
        pings_answered=0,
        pings_missed=0,
        pings_deferred=0,
        last_failure="the worker exited (code 3)",
        circuit_open=True,
        bad_frames=0,
        versions={},
    )
    view = snapshot.as_dict()
    assert view["state"] == "circuit_open" and type(view["state"]) is str
    assert view["restarts"] == 4 and view["circuit_open"] is True and view["last_failure"].endswith("(code 3)")
