"""Logging set-up shared by both processes: stderr only, every line with a correlation id.

The correlation id of the call being served lives in a context variable, so log lines
from deep inside LightRAG or a parser still carry it.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys

correlation_id: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="-")


class _CorrelationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = correlation_id.get()
        return True


def setup_logging(process: str, level: str | None = None) -> None:
    """Send every log record to stderr (never stdout: it carries the protocol)."""
    level_name = (level or os.environ.get("LIGHTRAG_MCP_LOG_LEVEL") or "INFO").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_CorrelationFilter())
    handler.setFormatter(
        logging.Formatter(f"%(asctime)s {process} %(levelname)s [%(correlation_id)s] %(name)s: %(message)s")
    )
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level_name, logging.INFO))
