"""The worker's states and the restart policy, as values and a pure function.

Like OTP's restart intensity: a crash is followed by a restart after an exponential
backoff; more than `max_restarts` restarts within `restart_window` seconds open the
circuit for `circuit_cooldown` seconds, after which one probe start is made (half-open:
if the probe fails while the earlier failures are still in the window, the circuit opens
again).  A planned recycle is not a failure and is not counted.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from config.settings import Settings


class WorkerState(enum.StrEnum):
    """What the supervisor is doing; the health tool reports these strings."""

    STARTING = "starting"  # a worker is spawned and not yet ready (also: a recycle's replacement)
    READY = "ready"  # calls go to the worker
    RESTARTING = "restarting"  # waiting out the backoff after a failure
    CIRCUIT_OPEN = "circuit_open"  # too many failures: calls fail fast until the cool-down ends
    STOPPED = "stopped"  # the front is shutting down


class Outcome(enum.Enum):
    """How one worker's life ended."""

    FAILED = "failed"  # it crashed, hung, never became ready or could not be spawned
    RECYCLED = "recycled"  # it was drained and stopped on purpose (request or RSS limit)


class Decision(NamedTuple):
    """The state to enter and how long to stay in it before the next start."""

    state: WorkerState
    delay: float


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int
    restart_window: float
    backoff_initial: float
    backoff_max: float
    circuit_cooldown: float

    @classmethod
    def from_settings(cls, settings: Settings) -> RestartPolicy:
        return cls(
            max_restarts=int(settings.max_restarts),
            restart_window=float(settings.restart_window),
            backoff_initial=float(settings.backoff_initial),
            backoff_max=float(settings.backoff_max),
            circuit_cooldown=float(settings.circuit_cooldown),
        )

    def recent(self, history: Sequence[float], now: float) -> int:
        """How many of the restart times in `history` fall within the window ending at `now`."""
        return sum(1 for when in history if now - when <= self.restart_window)

    def next(self, outcome: Outcome, history: Sequence[float], now: float) -> Decision:
        """What follows `outcome` at `now`, given the earlier restarts in `history`."""
        if outcome is Outcome.RECYCLED:
            return Decision(WorkerState.STARTING, 0.0)
        recent = self.recent(history, now) + 1  # this failure included
        if recent > self.max_restarts:
            return Decision(WorkerState.CIRCUIT_OPEN, self.circuit_cooldown)
        return Decision(WorkerState.RESTARTING, min(self.backoff_max, self.backoff_initial * 2 ** (recent - 1)))
