"""Jupyter notebooks (.ipynb) to text: markdown cells, code cells and the text their runs printed.

A notebook is JSON (nbformat 4): a list of cells, each with its `source` and, for code, its
`outputs`.  What a reader of the rendered notebook sees is kept: markdown as written, code
under a fence with the kernel's language, and text outputs (streams, `text/plain` results,
error names and messages).  Images, HTML widgets and tracebacks' ANSI colour codes are not
text and are left out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .extracted import DocumentBuilder, ExtractedDocument
from .failures import Failure, refuse
from .text import markdown_title, require_text

# Terminal colour codes in tracebacks and progress bars.
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Lines of one cell's output kept: a training loop may print thousands.
MAX_OUTPUT_LINES = 200


def _text(value: Any) -> str:
    """A notebook string field: a string or a list of line strings."""
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _output_lines(output: Any) -> list[str]:
    """The text lines of one code-cell output."""
    if not isinstance(output, dict):
        return []
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text"))
    elif kind in ("execute_result", "display_data"):
        data = output.get("data")
        text = _text(data.get("text/plain")) if isinstance(data, dict) else ""
    elif kind == "error":
        text = f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}"
    else:
        text = ""
    lines = _ANSI_RE.sub("", text).splitlines()
    if len(lines) > MAX_OUTPUT_LINES:
        lines = [*lines[:MAX_OUTPUT_LINES], f"... ({len(lines) - MAX_OUTPUT_LINES} more output lines)"]
    return lines


def _language(notebook: dict[str, Any]) -> str:
    metadata = notebook.get("metadata")
    info = metadata.get("language_info") if isinstance(metadata, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name.isidentifier() else ""


def _cell_lines(cell: Any, language: str) -> list[str]:
    """What a reader sees of one cell."""
    if not isinstance(cell, dict):
        return []
    source = _text(cell.get("source")).strip("\n")
    kind = cell.get("cell_type")
    if kind == "markdown":
        return [source, ""] if source.strip() else []
    if kind != "code":
        return []
    lines = [f"```{language}", source, "```"] if source.strip() else []
    outputs = [line for output in cell.get("outputs") or [] for line in _output_lines(output)]
    if outputs:
        lines += ["Output:", *outputs]
    return [*lines, ""] if lines else []


def extract_notebook(data: bytes) -> ExtractedDocument:
    """The text of a Jupyter notebook; its title is its first `#` heading.

    Raises `EXTRACTION_FAILED` when the JSON is not a notebook or holds no text.
    """
    try:
        notebook = json.loads(require_text(data))
    except json.JSONDecodeError as exc:
        raise refuse(Failure.MALFORMED_DATA, f"The notebook is not valid JSON: {exc.msg} at line {exc.lineno}.") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise refuse(Failure.MALFORMED_DATA, "The file is JSON but not a Jupyter notebook (it has no list of cells).")
    language = _language(notebook)
    builder = DocumentBuilder()
    for cell in cells:
        if not builder.extend(_cell_lines(cell, language)):
            break
    markdown = "\n".join(_text(cell.get("source")) for cell in cells if isinstance(cell, dict)
                         and cell.get("cell_type") == "markdown")
    return builder.build(title=markdown_title(markdown), empty_message="The notebook has no text in its cells.")
