"""Storage failures as STORAGE_ERROR (SPEC §7): a server that went away gives a clear,
retryable answer instead of an internal error, and the worker keeps serving.

LightRAG lets driver exceptions through (the modules the backend rows of `config.backends`
name: asyncpg, redis, pymilvus, neo4j, pymongo, qdrant), sometimes wrapped; a refused or reset connection surfaces as `OSError`.  The
exception chain is searched for either.  The details go to the log, never to the client.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio

from config.backends import DRIVER_MODULES
from config.storages import ServerAddress, probe_servers
from protocol import ErrorCode, RagError

log = logging.getLogger("rag_worker.storage")

MAX_CHAIN = 20

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]
RECENT_S = 120.0  # health reports storage trouble this long after the last failure

_last_failure_at: float | None = None


def seconds_since_failure() -> float | None:
    """Seconds since a call last failed on storage, if that was within RECENT_S."""
    if _last_failure_at is None:
        return None
    ago = time.monotonic() - _last_failure_at
    return ago if ago <= RECENT_S else None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what caused it: causes, contexts and the members of exception groups."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending and len(seen) < MAX_CHAIN:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def is_storage_failure(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) comes from a storage driver or a lost connection."""
    for current in _chain(exc):
        module = type(current).__module__ or ""
        if module.split(".")[0] in DRIVER_MODULES:
            return True
        if isinstance(current, ConnectionError) or (isinstance(current, OSError) and current.errno):
            return True
    return False


def _disk_full(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) is "no space left" / "quota exceeded" on a local disk."""
    return any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in _chain(exc))


def storage_error(exc: BaseException) -> RagError:
    global _last_failure_at
    _last_failure_at = time.monotonic()
    log.error("storage failure: %s: %s", type(exc).__name__, str(exc)[:500])
    if _disk_full(exc):
        return RagError(
            ErrorCode.STORAGE_ERROR,
            "The knowledge base's disk is full, so the call could not store anything.",
            suggested_action="Ask the administrator to free space on the server's data disk, then retry; "
            "documents already indexed are intact.",
            retryable=True,
        )
    return RagError(
        ErrorCode.STORAGE_ERROR,
        "The knowledge base's storage is not reachable right now, so the call could not complete.",
        suggested_action="Retry in a minute; lightrag_health_check shows when the storage is back.",
        retryable=True,
    )


def with_storage_errors(handler: Handler) -> Handler:
    """`handler`, with storage failures answered as STORAGE_ERROR.

    Drivers do not always fail fast: asyncpg's pool waits without a deadline for a server
    that went away.  So a call on server storages that runs longer than WATCH_AFTER_S is
    watched: when its storage servers refuse connections twice in a row, the call is
    cancelled and answers STORAGE_ERROR instead of running into its timeout."""

    async def guarded(ctx: Any, arguments: dict[str, Any]) -> Any:
        addresses = _watched_addresses(ctx)
        try:
            if not addresses:
                return await handler(ctx, arguments)
            return await _watched(handler, ctx, arguments, addresses)
        except RagError:
            raise
        except Exception as exc:
            if is_storage_failure(exc):
                raise storage_error(exc) from exc
            raise

    return guarded


WATCH_AFTER_S = 3.0
WATCH_EVERY_S = 2.0
PROBE_TIMEOUT_S = 1.0


def _watched_addresses(ctx: Any) -> list[ServerAddress]:
    engines = getattr(getattr(ctx, "state", None), "engines", None)
    placement = getattr(engines, "placement", None)
    if placement is None or not getattr(ctx, "workspace", ""):
        return []
    addresses: list[ServerAddress] = placement.watched_addresses(ctx.workspace, engines)  # ctx is untyped here
    return addresses


async def _watched(handler: Handler, ctx: Any, arguments: dict[str, Any], addresses: list[ServerAddress]) -> Any:
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            try:
                outcome["result"] = await handler(ctx, arguments)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # re-raised below, outside the task group
                outcome["error"] = exc
            finally:
                tg.cancel_scope.cancel()

        async def watch() -> None:
            await anyio.sleep(WATCH_AFTER_S)
            misses = 0
            while True:
                problems = await anyio.to_thread.run_sync(probe_servers, addresses, PROBE_TIMEOUT_S)
                misses = misses + 1 if problems else 0
                if misses >= 2:
                    outcome["down"] = problems
                    tg.cancel_scope.cancel()
                    return
                await anyio.sleep(WATCH_EVERY_S)

        tg.start_soon(run)
        tg.start_soon(watch)
    if "error" in outcome:
        raise outcome["error"]
    if "result" in outcome:
        return outcome["result"]
    raise storage_error(ConnectionError("; ".join(outcome.get("down") or ["storage unreachable"])))
