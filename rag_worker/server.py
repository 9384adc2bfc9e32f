"""The worker's side of the pipe: read requests, run handlers concurrently, answer.

`ping` is answered inline by the event loop that runs everything else, so a loop that is
stuck (a handler that blocks instead of awaiting) stops answering pings and the front's
supervisor counts the worker as hung.  CPU-bound work goes to threads through
`RequestContext.run_cpu`, under the worker's own capacity limiter, so the loop stays free.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc

from config.logs import setup_logging
from config.settings import ConfigError, Settings, load_settings
from protocol import Request
from protocol import methods as m
from protocol.endpoint import JsonRpcEndpoint
from rag_worker.app import warm_up
from rag_worker.context import WorkerRuntime
from rag_worker.dispatch import Handler, dispatch
from rag_worker.handlers import HANDLERS
from rag_worker.ingest.isolation import remove_forkserver_files
from rag_worker.stdio_guard import ProtocolFds
from rag_worker.storage.engine import DataDirUnwritable

log = logging.getLogger("rag_worker.server")


class WorkerServer:
    """Serves one pipe until it closes (or the parent goes away): the endpoint plus the
    worker's dispatch policy."""

    def __init__(self, fds: ProtocolFds, settings: Settings, handlers: Mapping[str, Handler]) -> None:
        self._fds = fds
        self._settings = settings
        self._handlers = handlers
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.endpoint = JsonRpcEndpoint(
            self._receive,
            self._send,
            max_frame_bytes=settings.max_frame_mb * 1024 * 1024,
            on_request=self._serve_request,
            on_cancelled=self._count_cancelled,
            inline={m.PING.name: lambda _params: self.state.ping()},
            answer_parse_errors=True,
            peer="the front",
        )
        self.state = WorkerRuntime(
            settings=settings,
            limiter=anyio.CapacityLimiter(settings.worker_threads),
            notify=self.endpoint.notify,
            send_raw=self.endpoint.send_raw,
        )

    # --- the pipe ------------------------------------------------------------------

    async def _open_pipes(self) -> None:
        loop = asyncio.get_running_loop()
        self._reader = asyncio.StreamReader(limit=2**16, loop=loop)
        reader = self._reader
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(self._fds.read_fd, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(self._fds.write_fd, "wb", 0)
        )
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def _receive(self) -> bytes:
        assert self._reader is not None
        return await self._reader.read(1 << 20)

    async def _send(self, data: bytes) -> None:
        assert self._writer is not None
        self._writer.write(data)
        await self._writer.drain()

    # --- serving -------------------------------------------------------------------

    async def serve(self) -> None:
        await self._open_pipes()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_parent, tg.cancel_scope)
            await self._announce_ready(tg)
            await self.endpoint.serve()
            log.info("pipe closed by the front; stopping")
            tg.cancel_scope.cancel()
        await self.state.close()

    async def _watch_parent(self, scope: anyio.CancelScope) -> None:
        """Stop when the front is gone even if the pipe somehow stays open."""
        while True:
            await anyio.sleep(1.0)
            if os.getppid() != self._fds.parent_pid:
                log.warning("parent process %s is gone; stopping", self._fds.parent_pid)
                scope.cancel()
                return

    async def _announce_ready(self, tg: anyio.abc.TaskGroup) -> None:
        await warm_up(self.state, lambda job: tg.start_soon(job))
        served = [name for name, spec in m.METHODS.items() if not spec.debug_only or self._settings.debug_methods]
        await self.endpoint.notify(
            m.READY,
            {
                "pid": os.getpid(),
                "versions": self.state.versions(),
                "methods": served,
                "startup_s": round(time.monotonic() - self.state.started, 3),
            },
        )

    async def _serve_request(self, request: Request) -> Any:
        """Dispatch one request (dispatch sets its correlation id for the logs)."""
        try:
            return await dispatch(self.state, self._handlers, request)
        finally:
            self.state.requests_served += 1

    def _count_cancelled(self, _request: Request) -> None:
        self.state.requests_cancelled += 1


def run_worker(fds: ProtocolFds) -> None:
    """Process entry: configure logging, build the server, serve until the pipe closes."""
    setup_logging("rag_worker")
    faulthandler.enable()  # a crash in native code (a parser, a driver) leaves its Python stacks in the log
    try:
        settings = load_settings()
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        sys.exit(m.EXIT_CONFIGURATION)
    server = WorkerServer(fds, settings, HANDLERS)
    code = 0
    try:
        anyio.run(server.serve, backend="asyncio")
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # start-up failures the front should be able to name
        grouped = isinstance(exc, BaseExceptionGroup) and exc.subgroup(DataDirUnwritable) is not None
        if not (grouped or isinstance(exc, DataDirUnwritable)):
            raise
        code = m.EXIT_DATA_DIR
    # Skip interpreter teardown: library threads (onnxruntime, LightRAG workers) can stall it.
    remove_forkserver_files()
    logging.shutdown()
    os._exit(code)
