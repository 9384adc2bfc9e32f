"""Small files that must survive a SIGKILL whole: written to a temporary sibling, flushed to
disk, then renamed over the target, so a reader sees the old version or the new one.

`sync=False` skips the flush to disk (fsync, ~7 ms here): the rename alone keeps the file whole
through a killed process, the guarantee LightRAG's own JSON files have; an operating-system
crash may then lose the last write."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace `path` with `data` atomically (temporary file, fsync unless `sync` is False, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
