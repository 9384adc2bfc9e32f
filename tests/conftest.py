"""Shared fixtures: the anyio backend, and the environment a real client starts us with."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable  # the project's venv interpreter when run via `make test`


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """Only what LibreChat passes to a stdio server (HOME, PATH, SHELL, TERM) plus `extra`."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SHELL": "/bin/sh",
        "TERM": "dumb",
        # Fast supervision in tests; each test overrides what it exercises.
        # Shared 2-core machines stall processes for a second at times: keep the production
        # ping timeout; the supervision tests shorten it where they exercise it.
        "LIGHTRAG_MCP_PING_INTERVAL": "1",
        "LIGHTRAG_MCP_PING_TIMEOUT": "3",
        "LIGHTRAG_MCP_BACKOFF_INITIAL": "0.1",
        "LIGHTRAG_MCP_BACKOFF_MAX": "1",
    }
    env.update(extra)
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME: the server's default data directory lands inside it."""
    path = tmp_path / "home"
    path.mkdir()
    return path
