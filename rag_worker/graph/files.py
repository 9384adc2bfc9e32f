"""Export files: large graph exports are written to the workspace's `exports` folder instead of
being sent through the chat.  Clients only ever see a file's name inside that folder."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

EXPORT_FOLDER = "exports"
KEEP_EXPORTS = 20  # older export files of a workspace are removed
PREVIEW_CHARS = 4000


def write_export(workspace_dir: Path, text: str, extension: str) -> tuple[str, int]:
    """Write `text` as a new export file; returns its name (relative to the folder) and size.

    Blocking file I/O: run it in a worker thread."""
    folder = workspace_dir / EXPORT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    name = f"graph-{stamp}.{extension}"
    data = text.encode("utf-8")
    partial = folder / f".{name}.part"
    partial.write_bytes(data)
    os.replace(partial, folder / name)
    _prune(folder)
    return name, len(data)


def _prune(folder: Path) -> None:
    exports = sorted(path for path in folder.glob("graph-*") if path.is_file())
    for old in exports[:-KEEP_EXPORTS]:
        old.unlink(missing_ok=True)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first part of an export, cut at a line end."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut + 1 if cut > 0 else limit]
