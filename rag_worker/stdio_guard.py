"""Keep the protocol pipe away from everything that prints.

LightRAG and other libraries write to stdout (`aexport_data`, `TokenTracker`, ...).  Before
anything else is imported, the worker takes private duplicates of fd 0 and fd 1 for the
protocol, then points fd 1 at stderr and fd 0 at /dev/null: a stray `print("x")` anywhere
in the process lands in the log, never in a frame.  Only `os`, `sys` and `ctypes` here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ProtocolFds:
    read_fd: int
    write_fd: int
    parent_pid: int


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphan after a front SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the pipe-EOF and parent-pid checks still stop us


def claim_protocol_fds() -> ProtocolFds:
    """Move the protocol onto private descriptors; redirect fd 0/1 away from it."""
    parent_pid = os.getppid()
    die_with_parent()
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    os.dup2(2, 1)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    return ProtocolFds(read_fd, write_fd, parent_pid)
