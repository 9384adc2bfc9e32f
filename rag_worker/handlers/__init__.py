"""Worker method handlers, keyed by the method names of `protocol.methods`."""

from __future__ import annotations

from protocol import methods as m
from rag_worker.handlers import system

HANDLERS = {
    m.STATUS.name: system.status,
    m.SHUTDOWN.name: system.shutdown,
    m.HEALTH.name: system.health,
    m.DEBUG.name: system.debug,
}
