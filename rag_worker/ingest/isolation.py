"""Run text extraction in a separate process, so a hostile file costs one upload, not the worker.

Threads cannot be stopped: a parser stuck in a loop, or one that segfaults or eats all
memory, would take the worker with it.  `extract_isolated` hands the file to a small pool
of long-lived extractor processes instead:

- each process serves one file at a time and is reused (no start-up cost per file); it
  is killed and replaced when a file runs past the time limit, and it is recycled after
  `JOBS_PER_PROCESS` files so memory fragmentation does not accumulate;
- processes come from a *forkserver* (Linux; *spawn* elsewhere), never a plain fork of
  the worker, which has threads and an event loop.  The server preloads the parsers, so
  a replacement process starts in milliseconds;
- each process caps its address space (`MEMORY_LIMIT_BYTES`), points fd 1 at stderr and
  dies with its parent (PR_SET_PDEATHSIG; its parent is the single-threaded forkserver,
  which exits when the worker does);
- the child's answer is a JSON header and the text as raw UTF-8: the parent never
  unpickles anything the child produced.  A `RagError` raised in the child arrives as the
  same `RagError`; the child's log records are replayed into the worker's log.
"""

from __future__ import annotations

import json
import logging
import multiprocessing.util
import shutil
import threading
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from protocol.errors import ErrorCode, RagError

from .extracted import DEFAULT_MAX_PAGES, ExtractedDocument
from .extractor_process import READY, Job, serve
from .formats import DocFormat
from .ocr import OcrOptions, ocr_options_from_env
from .page_counts import check_page_bound

logger = logging.getLogger(__name__)

# Three processes, one workspace holding at most two (`scheduling.FairSlots`): a user's folder run
# parses two files at once and another user's upload still finds a free process.
POOL_SIZE = 3
PER_WORKSPACE = POOL_SIZE - 1
EXTRACTION_TIMEOUT_S = 120.0  # how long one file's extraction may run before its process is killed
JOBS_PER_PROCESS = 50
# Address space, not RSS: OCR (onnxruntime + OpenCV, loaded on the first scanned page) maps
# ~0.7 GB and peaked at ~1.25 GB virtual (0.4 GB resident) on a dense A4 page.
MEMORY_LIMIT_BYTES = 2048 * 1024 * 1024
# OCR stops taking new pages after this share of the timeout, so a long scan ends with a
# "pages … were not read" warning instead of being killed with nothing indexed.
OCR_TIME_SHARE = 0.7
_STOP_GRACE_S = 2.0
# A new process says "ready" once it is up; until then a 10 MB send could block on a full pipe.
_START_TIMEOUT_S = 60.0
# Imported once in the forkserver, so every extractor process starts with the parsers loaded.
_PRELOAD = ["rag_worker.ingest.extraction", "docx", "pptx", "openpyxl", "lxml.etree"]

Extractor = Callable[..., ExtractedDocument]


class _Failed(Exception):
    """The process stopped answering: timed out, died, or never received the job."""

    def __init__(self, reason: str, delivered: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.delivered = delivered


class _ExtractorProcess:
    """One extractor process and our end of its pipe."""

    def __init__(self, context: Any) -> None:
        parent_end, child_end = context.Pipe(duplex=True)
        self.process = context.Process(
            target=serve,
            args=(child_end, MEMORY_LIMIT_BYTES),
            name="lightrag-extractor",
            daemon=True,
        )
        self.process.start()
        child_end.close()  # else our own copy would keep the pipe open after the child dies
        self.conn = parent_end
        self.jobs = 0
        self.ready = False

    def _await_ready(self) -> None:
        try:
            if self.conn.poll(_START_TIMEOUT_S) and self.conn.recv_bytes() == READY:
                self.ready = True
                return
        except (OSError, EOFError):
            pass
        raise _Failed("start", delivered=False)

    def run(self, job: Job, data: bytes, timeout: float) -> tuple[dict[str, Any], bytes]:
        """Send one job and wait up to `timeout` s for (header, body); raises `_Failed`."""
        if not self.ready:
            self._await_ready()
        try:
            self.conn.send(job)
            self.conn.send_bytes(data)
        except (OSError, EOFError, ValueError):
            raise _Failed("the process was gone before it got the file", delivered=False) from None
        self.jobs += 1
        ready = wait([self.conn, self.process.sentinel], timeout)
        if not ready:
            raise _Failed("timeout")
        try:
            header = json.loads(self.conn.recv_bytes())
            body = self.conn.recv_bytes()
        except (OSError, EOFError, ValueError):
            self.process.join(_STOP_GRACE_S)
            raise _Failed(f"the process died (exit code {self.process.exitcode})") from None
        return header, body

    def kill(self) -> None:
        self.process.kill()
        self.process.join(_STOP_GRACE_S)
        self.conn.close()

    def stop(self) -> None:
        """Let the process finish: closing the pipe ends its loop; kill it if it lingers."""
        self.conn.close()
        self.process.join(_STOP_GRACE_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(_STOP_GRACE_S)


class ExtractorPool:
    """Up to `size` extractor processes; a caller thread borrows one for one file."""

    def __init__(self, size: int = POOL_SIZE) -> None:
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_ExtractorProcess] = []
        self._lock = threading.Lock()
        self._context: Any = None

    @property
    def started(self) -> bool:
        return self._context is not None

    def _new_process(self) -> _ExtractorProcess:
        with self._lock:
            if self._context is None:
                import multiprocessing

                methods = multiprocessing.get_all_start_methods()
                self._context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
                if "forkserver" in methods:
                    self._context.set_forkserver_preload(_PRELOAD)
        return _ExtractorProcess(self._context)

    def _checkout(self) -> _ExtractorProcess:
        with self._lock:
            while self._idle:
                candidate = self._idle.pop()
                if candidate.process.is_alive():
                    return candidate
                candidate.kill()
        return self._new_process()

    def _checkin(self, extractor: _ExtractorProcess) -> None:
        if extractor.jobs >= JOBS_PER_PROCESS or not extractor.process.is_alive():
            extractor.stop()
            return
        with self._lock:
            self._idle.append(extractor)

    def run(self, job: Job, data: bytes, timeout: float) -> tuple[dict[str, Any], bytes]:
        """Run `job` in a borrowed process; a process that fails is killed and not returned."""
        with self._slots:
            for attempt in (1, 2):
                extractor = self._checkout()
                try:
                    reply = extractor.run(job, data, timeout)
                except _Failed as failure:
                    extractor.kill()
                    if not failure.delivered and attempt == 1:
                        continue  # the process died before it saw the file: the file is not to blame
                    raise
                except BaseException:
                    extractor.kill()
                    raise
                if reply[0].get("retire"):
                    extractor.stop()
                else:
                    self._checkin(extractor)
                return reply
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the idle processes (busy ones are stopped by their callers)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for extractor in idle:
            extractor.stop()


_pool: ExtractorPool | None = None
_pool_lock = threading.Lock()


def _get_pool() -> ExtractorPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ExtractorPool()
        return _pool


def shutdown_extractors() -> None:
    """Stop the extractor processes (they also stop on their own when the worker exits)."""
    with _pool_lock:
        pool = _pool
    if pool is not None:
        pool.close()


def remove_forkserver_files() -> None:
    """Remove the temp directory (`pymp-*`) holding the forkserver's socket, last thing before the
    worker's `os._exit`: that skips multiprocessing's exit hook, which would remove it, and every
    worker that parsed a file left one behind (2,400 after a few days of test runs)."""
    with _pool_lock:
        started = _pool is not None and _pool.started
    if started:
        shutil.rmtree(multiprocessing.util.get_temp_dir(), ignore_errors=True)


def _timeout_error(timeout: float) -> RagError:
    return RagError(
        ErrorCode.EXTRACTION_FAILED,
        f"Extracting text from the file took longer than {timeout:g} s and was stopped; the file may be "
        "damaged or unusually complex. Upload a simpler copy (for example saved as PDF or plain text), or split it.",
        details={"timeout_s": timeout},
    )


def _crash_error(reason: str) -> RagError:
    return RagError(
        ErrorCode.EXTRACTION_FAILED,
        f"The parser failed on this file ({reason}); the file may be damaged or crafted. "
        "Re-save it, or convert it to PDF or plain text, and upload it again.",
    )


def _replay_logs(records: list[list[Any]]) -> None:
    for name, level, message in records:
        logging.getLogger(str(name)).log(int(level), "[extractor] %s", message)


def extract_isolated(
    data: bytes,
    fmt: DocFormat,
    *,
    timeout: float,
    filename: str | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    extractor: Extractor | None = None,
    ocr: OcrOptions | None = None,
) -> ExtractedDocument:
    """`extract_document(data, fmt)` in an extractor process, stopped after `timeout` seconds.

    `ocr` defaults to the environment's `LIGHTRAG_MCP_OCR*` settings, with a time budget of
    `OCR_TIME_SHARE` of `timeout`.  Blocking: call it from a worker thread (`ctx.run_cpu`).  `extractor` replaces
    `extract_document` (a module-level function, called as `extractor(data, fmt,
    filename=…, max_pages=…)`); tests use it to inject a parser that hangs or crashes.
    Raises the child's `RagError` unchanged, `FILE_TOO_LARGE` without starting the child when the
    file's structure declares more than `max_pages` pages, and `EXTRACTION_FAILED` when the time
    runs out or the process dies.
    """
    check_page_bound(data, fmt, max_pages)  # before the file takes a process: counting is cheap, decoding is not
    log_level = logging.getLogger().getEffectiveLevel()
    if ocr is None:
        ocr = ocr_options_from_env(budget_s=timeout * OCR_TIME_SHARE)
    job = Job(fmt=str(fmt), filename=filename, max_pages=max_pages, log_level=log_level, extractor=extractor, ocr=ocr)
    try:
        header, body = _get_pool().run(job, data, timeout)
    except _Failed as failure:
        if failure.reason == "start":
            logger.error("the extractor process did not start within %g s", _START_TIMEOUT_S)
            raise RagError(ErrorCode.INTERNAL_ERROR, "The text extractor could not be started.") from None
        if failure.reason == "timeout":
            logger.warning(
                "extraction of a %s file (%d bytes) timed out after %g s; process killed", fmt, len(data), timeout
            )
            raise _timeout_error(timeout) from None
        logger.error("extraction of a %s file (%d bytes) failed: %s", fmt, len(data), failure.reason)
        raise _crash_error("it stopped unexpectedly") from None
    _replay_logs(header.get("logs", []))
    if "error" in header:
        error = header["error"]
        raise RagError(
            ErrorCode(error["code"]),
            error["message"],
            suggested_action=error["suggested_action"],
            retryable=error["retryable"],
            details=error.get("details") or None,
        )
    if header.get("failure") == "memory":
        logger.error(
            "extraction of a %s file (%d bytes) ran out of memory (limit %d MB)",
            fmt,
            len(data),
            MEMORY_LIMIT_BYTES >> 20,
        )
        raise _crash_error("it needed more memory than allowed")
    if "failure" in header:
        logger.error("extraction of a %s file failed in the extractor process:\n%s", fmt, header.get("traceback", ""))
        raise _crash_error("it raised an unexpected error")
    result = header["result"]
    return ExtractedDocument(
        text=body.decode("utf-8", "surrogatepass"),
        pages=int(result["pages"]),
        words=int(result["words"]),
        page_offsets=[int(offset) for offset in result["page_offsets"]],
        title=result["title"],
        warnings=[str(warning) for warning in result["warnings"]],
        ocr_pages=[int(page) for page in result.get("ocr_pages", [])],
        empty_pages=[int(page) for page in result.get("empty_pages", [])],
    )
