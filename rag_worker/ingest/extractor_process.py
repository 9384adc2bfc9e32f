"""The extractor process's side of `isolation`: receive a file, extract it, answer, repeat.

Runs in a child of the multiprocessing forkserver.  Protocol on its pipe: `READY` once, then per file:
parent → child a pickled `Job`, then the file's bytes; child → parent a JSON header
(`result`, `error` — a `RagError` — or `failure`; `retire` when the process exits after
answering), then the text as UTF-8 bytes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.errors import RagError
from rag_worker.stdio_guard import die_with_parent

from .extraction import extract_document
from .formats import DocFormat
from .ocr import OcrOptions

MAX_LOG_RECORDS = 100
READY = b"ready"  # sent once at start: the process is up and reading its pipe


@dataclass
class Job:
    """What to extract; the file's bytes follow on the pipe (no pickling copy of 10 MB)."""

    fmt: str
    filename: str | None
    max_pages: int
    log_level: int
    extractor: Callable[..., Any] | None = None
    ocr: OcrOptions | None = None


class _LogCapture(logging.Handler):
    """Keeps the records of one job, flattened to [logger name, level, text], for the parent's log."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[list[Any]] = []
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) >= MAX_LOG_RECORDS:
            self.dropped += 1
            return
        try:
            message = record.getMessage()
        except Exception:  # a bad format string in some library must not cost the job
            message = str(record.msg)
        if record.exc_info and record.exc_info[0] is not None:
            message += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        self.records.append([record.name, record.levelno, message])

    def take(self) -> list[list[Any]]:
        records, self.records = self.records, []
        if self.dropped:
            records.append([__name__, logging.INFO, f"{self.dropped} more log records of this file were dropped"])
            self.dropped = 0
        return records


def _limit_memory(limit_bytes: int) -> None:
    """Cap the address space: a parser that balloons gets MemoryError here, not the OOM killer there."""
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard > limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))
    except (ImportError, ValueError, OSError):
        pass  # not on this platform: the time limit still applies


def _release_inherited_fds() -> None:
    """Close the descriptors multiprocessing hands every forkserver child so it can start processes.

    One is the write end of the worker's "alive" pipe: while any child holds it, the forkserver
    never sees the worker die, stays up, and PR_SET_PDEATHSIG never fires — a hung extractor
    would outlive the worker.  An extractor starts no processes, so it needs neither.
    """
    from multiprocessing import forkserver, resource_tracker

    holders = ((forkserver._forkserver, "_forkserver_alive_fd"), (resource_tracker._resource_tracker, "_fd"))
    for holder, attribute in holders:
        fd = getattr(holder, attribute, None)
        if isinstance(fd, int):
            try:
                os.close(fd)
            except OSError:
                pass
            setattr(holder, attribute, None)


def _isolate_process(memory_limit: int) -> None:
    _release_inherited_fds()
    die_with_parent()
    _limit_memory(memory_limit)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal is the worker's to handle
    # Whatever a parser prints goes to stderr, never to a protocol pipe.
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def _run(job: Job, data: bytes) -> tuple[dict[str, Any], bytes, bool]:
    """(header, body, exit afterwards) for one job."""
    extract = job.extractor or extract_document
    try:
        document = extract(data, DocFormat(job.fmt), filename=job.filename, max_pages=job.max_pages, ocr=job.ocr)
    except RagError as exc:
        error = {
            "code": exc.code.value,
            "message": exc.message,
            "suggested_action": exc.suggested_action,
            "retryable": exc.retryable,
            "details": exc.details,
        }
        return {"error": error}, b"", False
    except MemoryError:
        return {"failure": "memory", "retire": True}, b"", True  # the heap may be in no state for another file
    except Exception:
        return {"failure": "exception", "traceback": traceback.format_exc(limit=30)}, b"", False
    result = {
        "pages": document.pages,
        "words": document.words,
        "page_offsets": document.page_offsets,
        "title": document.title,
        "warnings": document.warnings,
        "ocr_pages": document.ocr_pages,
        "empty_pages": document.empty_pages,
    }
    return {"result": result}, document.text.encode("utf-8", "surrogatepass"), False


def serve(conn: Any, memory_limit: int) -> None:
    """The process's main loop; returns (and the process exits) when the parent closes the pipe."""
    _isolate_process(memory_limit)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    capture = _LogCapture()
    root.addHandler(capture)
    try:
        conn.send_bytes(READY)
    except OSError:
        return
    while True:
        try:
            job: Job = conn.recv()
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        root.setLevel(job.log_level)
        try:
            header, body, exit_after = _run(job, data)
            del data
            header["logs"] = capture.take()
            conn.send_bytes(json.dumps(header, default=str).encode("utf-8"))
            conn.send_bytes(body)
        except MemoryError:
            os._exit(3)  # the parent sees the pipe close and reports the failure
        except (BrokenPipeError, EOFError, OSError):
            return
        if exit_after:
            return
