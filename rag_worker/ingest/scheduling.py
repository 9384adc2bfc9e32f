"""Fair shares of the extractor processes: one user's hostile files cannot starve another's upload.

The worker has a few extractor processes (`isolation.POOL_SIZE`); a crafted file may keep one
busy until its time limit.  Before this, the processes went to whichever call asked first, so two
such files from one user held both for minutes and every other user's upload waited behind them.

`FairSlots` hands the slots out by owner (a user's workspace, all its knowledge bases together):
an owner holds at most `per_owner` at once (one fewer than there are, so there is always one
another owner can take), and a freed slot goes to the waiting owner that holds the fewest, first
come first served among equals.  A call waits for its slot on the event loop, before it takes a
worker thread, so waiting calls of one owner never fill the thread limiter either.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

T = TypeVar("T")


@dataclass
class _Waiter:
    owner: str
    order: int
    granted: anyio.Event = field(default_factory=anyio.Event)


class FairSlots:
    """`size` slots shared by owners (users' workspaces), each holding at most `per_owner` at once.

    Used from one event loop only (the worker's), so no lock is needed."""

    def __init__(self, size: int, per_owner: int) -> None:
        if size < 1 or not 1 <= per_owner <= size:
            raise ValueError("FairSlots needs size >= 1 and 1 <= per_owner <= size")
        self.size = size
        self.per_owner = per_owner
        self._held: Counter[str] = Counter()
        self._waiting: list[_Waiter] = []
        self._orders = itertools.count()

    def held(self, owner: str) -> int:
        """How many slots `owner` holds now."""
        return self._held[owner]

    def waiting(self, owner: str | None = None) -> int:
        """How many calls (of `owner`, or of anyone) wait for a slot."""
        return sum(1 for waiter in self._waiting if owner is None or waiter.owner == owner)

    @asynccontextmanager
    async def hold(self, owner: str) -> AsyncIterator[None]:
        """Hold one slot for `owner` while the block runs, waiting for its fair turn first."""
        await self._acquire(owner)
        try:
            yield
        finally:
            self._release(owner)

    async def run_in_thread(self, owner: str, func: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter) -> T:
        """`func(*args)` in a worker thread, holding one of `owner`'s slots until `func` returns.

        A call cancelled meanwhile answers at once, but its thread (and the extractor process it
        waits on) runs on until the file's time limit: the slot stays taken until then, so cancelling
        calls cannot win an owner more processes than its share."""
        await self._acquire(owner)
        handoff = _Handoff(lambda: self._release(owner))
        try:
            return await anyio.to_thread.run_sync(handoff.run, func, *args, limiter=limiter, abandon_on_cancel=True)
        finally:
            handoff.release_unless_started()

    async def _acquire(self, owner: str) -> None:
        waiter = _Waiter(owner, next(self._orders))
        self._waiting.append(waiter)
        self._grant()
        try:
            await waiter.granted.wait()
        except BaseException:  # cancelled while waiting: give back a slot granted meanwhile
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif waiter.granted.is_set():
                self._release(owner)
            raise

    def _free(self) -> int:
        return self.size - sum(self._held.values())

    def _release(self, owner: str) -> None:
        self._held[owner] -= 1
        if self._held[owner] <= 0:
            del self._held[owner]
        self._grant()

    def _grant(self) -> None:
        """Give free slots to the waiters whose turn it is: fewest held first, then arrival order."""
        while self._free() > 0:
            eligible = [waiter for waiter in self._waiting if self._held[waiter.owner] < self.per_owner]
            if not eligible:
                return
            chosen = min(eligible, key=lambda waiter: (self._held[waiter.owner], waiter.order))
            self._waiting.remove(chosen)
            self._held[chosen.owner] += 1
            chosen.granted.set()


class _Handoff:
    """Who gives a slot back: the thread once it started (when it ends), else the call that gave up."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release
        self._lock = threading.Lock()
        self._state = "pending"  # → "started" (the thread releases) or "given_up" (the caller did)

    def run(self, func: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._state != "pending":  # the call was cancelled before this thread started
                raise RuntimeError("the call gave up before its thread started")  # nobody reads it
            self._state = "started"
        try:
            return func(*args)
        finally:
            try:
                anyio.from_thread.run_sync(self._release)
            except RuntimeError:  # the event loop is gone (the worker is stopping): nothing to give back to
                pass

    def release_unless_started(self) -> None:
        with self._lock:
            if self._state != "pending":
                return
            self._state = "given_up"
        self._release()
