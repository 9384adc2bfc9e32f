"""CSV and JSON files to text an index can search: each record spelled out with its field names.

A CSV row becomes `name: Ada; role: engineer` (empty values left out), so a chunk read on
its own still says what each value is.  JSON becomes one `path.to.key: value` line per leaf.
Both are bounded: rows, lines, nesting and characters (`DocumentBuilder`'s budget).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any

from protocol.errors import ErrorCode, RagError

from .extracted import DocumentBuilder, ExtractedDocument
from .text import require_text

logger = logging.getLogger(__name__)

MAX_CSV_ROWS = 100_000
MAX_JSON_LINES = 200_000
# Deeper than this a JSON subtree is written as compact JSON on one line: a path of 900
# segments repeated on every leaf line would be quadratic in size.
MAX_JSON_PATH_DEPTH = 32
_SNIFF_CHARS = 64 * 1024
_DELIMITERS = ",;\t|"


def _dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    """The delimiter and quoting of a CSV sample (comma, semicolon, tab or pipe); Excel's by default."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:
        return csv.excel_tab if sample.count("\t") > sample.count(",") else csv.excel


def _csv_rows(text: str) -> Iterator[list[str]]:
    """The cells of each record; a malformed record raises `EXTRACTION_FAILED` naming its line."""
    # StringIO splits at "\n" only (str.splitlines would also split at \f, \x1c, U+2028 inside fields).
    reader = csv.reader(io.StringIO(text), _dialect(text[:_SNIFF_CHARS]))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            logger.info("csv: malformed record", exc_info=True)
            raise RagError(
                ErrorCode.EXTRACTION_FAILED,
                f"The CSV could not be read at line {reader.line_num}: a field is malformed (an unclosed quote?) "
                f"or longer than {csv.field_size_limit():,} characters.",
            ) from None
        yield row


def extract_csv(data: bytes) -> ExtractedDocument:
    """Rows of a CSV (or TSV) file as `header: value; header: value` lines; the first row names the columns."""
    text = require_text(data)
    builder = DocumentBuilder()
    header: list[str] | None = None
    title: str | None = None
    count = 0
    rows = (cells for cells in _csv_rows(text) if any(cell.strip() for cell in cells))
    first = next(rows, None)
    second = next(rows, None)
    if first is not None and second is not None and _is_title_row(first, second):
        # A title line above the column names ("Sales 2024" then "region, amount"): a title, not a header.
        title = " ".join(" ".join(first).split())
        builder.add(title)
        first = None
    for cells in itertools.chain(filter(None, (first, second)), rows):
        if header is None:
            header = [" ".join(cell.split()) or f"column {i}" for i, cell in enumerate(cells, start=1)]
            continue
        if count == MAX_CSV_ROWS:
            builder.warnings.append(f"Only the first {MAX_CSV_ROWS:,} rows were indexed; the rest was skipped.")
            break
        fields = [
            f"{header[i] if i < len(header) else f'column {i + 1}'}: {' '.join(value.split())}"
            for i, value in enumerate(cells)
            if value.strip()
        ]
        if not builder.add("; ".join(fields)):
            break
        count += 1
    if header is not None and count == 0:  # a header alone is still the file's content
        builder.add("; ".join(header))
    return builder.build(title=title, empty_message="The CSV file contains no values.")


def _is_title_row(first: list[str], second: list[str]) -> bool:
    """True when the first row is one filled cell above a row of several: a title, as spreadsheets export one."""
    filled = [cell for cell in first if cell.strip()]
    return len(filled) == 1 and sum(1 for cell in second if cell.strip()) >= 2


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split()) if "\n" in value or "\r" in value else value
    return json.dumps(value)  # true, false, null, numbers as JSON writes them


def _json_lines(value: Any, path: str, depth: int) -> Iterator[str]:
    """`path: value` for every leaf under `value` (iterative in spirit: depth is bounded)."""
    if isinstance(value, dict) and value and depth < MAX_JSON_PATH_DEPTH:
        for key, item in value.items():
            yield from _json_lines(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list) and value and depth < MAX_JSON_PATH_DEPTH:
        for index, item in enumerate(value):
            yield from _json_lines(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, dict | list):
        yield f"{path or '$'}: {json.dumps(value, ensure_ascii=False)}"
    else:
        yield f"{path or '$'}: {_scalar(value)}"


def extract_json(data: bytes) -> ExtractedDocument:
    """A JSON document flattened to `path.to.key: value` lines (arrays as `items[0].name`).

    Raises `EXTRACTION_FAILED` for invalid JSON, naming the line and column.
    """
    text = require_text(data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RagError(
            ErrorCode.EXTRACTION_FAILED,
            f"The file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
        ) from None
    except RecursionError:
        raise RagError(ErrorCode.EXTRACTION_FAILED, "The JSON is nested too deeply to be read.") from None
    except ValueError:  # e.g. an integer literal longer than Python's 4,300-digit limit
        logger.info("json: value rejected", exc_info=True)
        raise RagError(ErrorCode.EXTRACTION_FAILED, "The JSON contains a value that cannot be read.") from None
    builder = DocumentBuilder()
    for count, line in enumerate(_json_lines(value, "", 0)):
        if count == MAX_JSON_LINES:
            builder.warnings.append(f"Only the first {MAX_JSON_LINES:,} values were indexed; the rest was skipped.")
            break
        if not builder.add(line):
            break
    title = value.get("title") if isinstance(value, dict) else None
    return builder.build(
        title=(" ".join(title.split())[:200] or None) if isinstance(title, str) else None,
        empty_message="The JSON file contains no values.",
    )
