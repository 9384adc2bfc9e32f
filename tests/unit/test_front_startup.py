"""The front starts light: `initialize` and `tools/list` load nothing they do not use, and
reading a process's memory needs no psutil on Linux."""

from __future__ import annotations

import json
import os
import subprocess

import psutil

from mcp_front.worker_process import process_rss_mb
from tests.conftest import PROJECT_ROOT, PYTHON

#: Loaded later, by what needs them: argument validation (jsonschema, at the first call), the
#: HTTP transport and its auth (jwt, httpx, dotenv for an env file), psutil (off Linux, at the
#: first memory reading), and never the worker's LightRAG stack.
NOT_AT_START = (
    "jsonschema",
    "psutil",
    "mcp_front.http_transport",
    "mcp_front.auth",
    "jwt",
    "httpx",
    "dotenv",
    "rag_worker",
    "lightrag",
    "numpy",
)

LIST_TOOLS = f"""
import json, sys
import mcp_front.__main__
from mcp_front.catalogue import TOOLS, Catalogue
assert Catalogue(TOOLS, profile="all").list_tools()
print(json.dumps(sorted(name for name in {NOT_AT_START!r} if name in sys.modules)))
"""


def test_starting_the_front_and_listing_its_tools_loads_nothing_a_later_call_needs() -> None:
    proc = subprocess.run(
        [PYTHON, "-c", LIST_TOOLS], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_a_process_rss_reads_as_psutil_reads_it() -> None:
    ours = process_rss_mb(os.getpid())
    theirs = psutil.Process().memory_info().rss / 2**20
    assert ours is not None and abs(ours - theirs) < 5, (ours, theirs)


def test_a_process_has_an_rss_while_it_runs_and_none_once_it_is_gone() -> None:
    # The child says it runs before it is measured: between fork and exec its RSS can read 0.
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    child = subprocess.Popen([PYTHON, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        running = process_rss_mb(child.pid)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)
    assert running is not None and running > 0
    assert process_rss_mb(child.pid) is None
