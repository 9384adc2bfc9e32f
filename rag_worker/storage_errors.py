"""Storage failures as STORAGE_ERROR (SPEC §7): a server that went away gives a clear,
retryable answer instead of an internal error, and the worker keeps serving.

LightRAG lets driver exceptions through (asyncpg, redis, pymilvus, neo4j, pymongo,
qdrant), sometimes wrapped; a refused or reset connection surfaces as `OSError`.  The
exception chain is searched for either.  The details go to the log, never to the client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from protocol import ErrorCode, RagError

log = logging.getLogger("rag_worker.storage")

DRIVER_MODULES = ("asyncpg", "redis", "pymilvus", "grpc", "neo4j", "pymongo", "motor", "qdrant_client", "opensearchpy")
MAX_CHAIN = 20

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


def is_storage_failure(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) comes from a storage driver or a lost connection."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending and len(seen) < MAX_CHAIN:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        module = type(current).__module__ or ""
        if module.split(".")[0] in DRIVER_MODULES:
            return True
        if isinstance(current, ConnectionError) or (isinstance(current, OSError) and current.errno):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def storage_error(exc: BaseException) -> RagError:
    log.error("storage failure: %s: %s", type(exc).__name__, str(exc)[:500])
    return RagError(
        ErrorCode.STORAGE_ERROR,
        "The knowledge base's storage is not reachable right now, so the call could not complete.",
        suggested_action="Retry in a minute; lightrag_health_check shows when the storage is back.",
        retryable=True,
    )


def with_storage_errors(handler: Handler) -> Handler:
    """`handler`, with storage failures answered as STORAGE_ERROR."""

    async def guarded(ctx: Any, arguments: dict[str, Any]) -> Any:
        try:
            return await handler(ctx, arguments)
        except RagError:
            raise
        except Exception as exc:
            if is_storage_failure(exc):
                raise storage_error(exc) from exc
            raise

    return guarded
