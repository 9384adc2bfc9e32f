"""Reading a client's file by path: a regular file's bytes, without ever blocking on what is not one.

A FIFO in an allowed folder blocked the worker: the file was opened before it was checked, and
opening a FIFO waits for a writer (a saved job naming one blocked every new worker again).
`open_regular` opens without blocking (O_NONBLOCK) and without following a link (O_NOFOLLOW: the
path was resolved already, so a link there now is a swap), then checks the open descriptor: a
FIFO, device, socket or folder is refused with what it is.  `read_file` reads from that very
descriptor, bounded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from protocol import ErrorCode, RagError

from .validation import format_size


def read_file(real: Path, max_bytes: int) -> bytes:
    """A regular file's bytes, refusing anything that is not (or changed into) a regular file or grew past the bound.

    The one reader of client paths: `open_regular` never blocks and never follows a link, and the
    bytes come from the very descriptor that was checked."""
    fd = open_regular(real)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise _too_large(real.name, size, max_bytes)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(real.name, len(data), max_bytes)
    return data


def open_regular(real: Path) -> int:
    """A read-only descriptor of the regular file `real` (already resolved), or a `RagError`.

    O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one (a
    blocking open would hold a worker thread, and a saved job would block every new worker).
    O_NOFOLLOW: the path was resolved, so a link there now is a swap.  The descriptor is then
    fstat-ed: a FIFO, device, socket or folder is closed and refused."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    name = short(real.name, 80)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise RagError(ErrorCode.FILE_NOT_FOUND, f"'{name}' no longer exists.") from None
    except OSError:
        kind = _kind_at(real)  # a socket cannot be opened at all (ENXIO): say what it is
        if kind is not None:
            raise _not_regular(name, kind) from None
        raise RagError(ErrorCode.FORBIDDEN, f"'{name}' cannot be read (permissions or a symlink).") from None
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _not_regular(name, kind)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(name: str, kind: str) -> RagError:
    return RagError(
        ErrorCode.UNSUPPORTED_FORMAT,
        f"'{name}' is {kind}, not a regular file; only regular files can be indexed.",
        suggested_action="Name a regular file (or a folder) instead.",
    )


def _kind_at(path: Path) -> str | None:
    """What the non-regular, non-link file at `path` is; None for a regular file, a link or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISLNK(mode) else _kind(mode)


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file"


def _too_large(name: str, size: int, max_bytes: int) -> RagError:
    return RagError(
        ErrorCode.FILE_TOO_LARGE,
        f"'{name}' is {format_size(size)}, over the {format_size(max_bytes)} limit (LIGHTRAG_MCP_MAX_FILE_MB).",
        suggested_action="Split the file, or ask the administrator to raise LIGHTRAG_MCP_MAX_FILE_MB.",
    )


def short(text: str, limit: int = 200) -> str:
    """`text`, cut to `limit` characters with an ellipsis: a client's path echoed in a message."""
    return text if len(text) <= limit else text[:limit] + "…"
