"""What a tool the front answers itself (health, statistics) gets: one typed call."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from config.settings import Settings
from mcp_front.call_stats import CallStats
from mcp_front.identity import Identity
from mcp_front.supervisor import SupervisorSnapshot

#: Send a worker method with arguments under a timeout (seconds); the caller's context rides along.
CallWorker = Callable[[str, dict[str, Any], float], Awaitable[Any]]


@dataclass(frozen=True)
class FrontCall:
    """One call of a front-answered tool, with everything the front knows at that moment."""

    settings: Settings
    identity: Identity
    arguments: dict[str, Any]  # validated, defaults filled in
    call_worker: CallWorker
    snapshot: SupervisorSnapshot  # the supervisor's view of its worker when the call arrived
    worker_ready: bool
    call_stats: CallStats
    started: float  # time.monotonic() when the front started
    front_rss_mb: float

    @property
    def workspace(self) -> str:
        return self.identity.workspace

    @property
    def front_started_epoch(self) -> float:
        """When the front started, in epoch seconds."""
        return time.time() - (time.monotonic() - self.started)


FrontHandler = Callable[[FrontCall], Awaitable[dict[str, Any]]]
