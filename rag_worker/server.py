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

from config.logs import correlation_id, setup_logging
from config.settings import ConfigError, Settings, load_settings
from protocol import (
    ErrorCode,
    ErrorObject,
    FrameError,
    FrameReader,
    FrameTooLarge,
    InvalidMessage,
    JsonRpcCode,
    Notification,
    RagError,
    Request,
    Response,
    decode_frame,
    encode_frame,
    parse_message,
)
from protocol import methods as m
from rag_worker.context import WorkerRuntime
from rag_worker.dispatch import Handler, dispatch
from rag_worker.stdio_guard import ProtocolFds

log = logging.getLogger("rag_worker.server")

class WorkerServer:
    """Serves one pipe until it closes (or the parent goes away)."""

    def __init__(self, fds: ProtocolFds, settings: Settings, handlers: Mapping[str, Handler]) -> None:
        self._fds = fds
        self._settings = settings
        self._handlers = handlers
        self._writer: asyncio.StreamWriter | None = None
        self._write_lock = anyio.Lock()
        self._in_flight: dict[Any, anyio.CancelScope] = {}
        self._max_frame = settings.max_frame_mb * 1024 * 1024
        self.state = WorkerRuntime(
            settings=settings,
            limiter=anyio.CapacityLimiter(settings.worker_threads),
            notify=self.notify,
            send_raw=self._send_raw,
        )

    # --- output ------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        frame = encode_frame(message)
        if len(frame) > self._max_frame and "id" in message:
            # Never emit a frame the front would have to discard: answer with an error instead.
            error = RagError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                "The result is too large to return; ask for less (lower limits or a narrower filter).",
            )
            frame = encode_frame(Response(message["id"], error=ErrorObject.from_rag_error(error)).to_wire())
        assert self._writer is not None
        async with self._write_lock:
            self._writer.write(frame)
            await self._writer.drain()

    async def _send_raw(self, data: bytes) -> None:
        """Write bytes to the protocol pipe as they are (fault injection only)."""
        assert self._writer is not None
        async with self._write_lock:
            self._writer.write(data)
            await self._writer.drain()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send(Notification(method, params).to_wire())

    # --- input -------------------------------------------------------------------

    async def _open_pipes(self) -> FrameReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**16, loop=loop)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(self._fds.read_fd, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(self._fds.write_fd, "wb", 0)
        )
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

        async def receive() -> bytes:
            return await reader.read(1 << 20)

        return FrameReader(receive, self._max_frame)

    async def serve(self) -> None:
        frames = await self._open_pipes()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_parent, tg.cancel_scope)
            await self._announce_ready(tg)
            while True:
                try:
                    line = await frames.read_line()
                except FrameTooLarge as exc:
                    log.error("discarded an oversized frame from the front: %s", exc)
                    continue
                if line is None:
                    log.info("pipe closed by the front; stopping")
                    break
                if not line.strip():
                    continue
                await self._handle_line(line, tg)
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
        await self.state.warm_up(lambda job: tg.start_soon(job))
        served = [name for name, spec in m.METHODS.items() if not spec.debug_only or self._settings.debug_methods]
        await self.notify(
            m.READY,
            {
                "pid": os.getpid(),
                "versions": self.state.versions(),
                "methods": served,
                "startup_s": round(time.monotonic() - self.state.started, 3),
            },
        )

    async def _handle_line(self, line: bytes, tg: anyio.abc.TaskGroup) -> None:
        try:
            message = parse_message(decode_frame(line))
        except (FrameError, InvalidMessage) as exc:
            log.warning("ignoring a malformed frame from the front: %s", exc)
            await self._send(
                Response(None, error=ErrorObject(JsonRpcCode.PARSE_ERROR, "malformed frame")).to_wire()
            )
            return
        if isinstance(message, Request):
            if message.method == m.PING.name:
                # Answered right here on the loop: a blocked loop misses pings.
                await self._send(Response(message.id, self.state.ping()).to_wire())
                return
            scope = anyio.CancelScope()
            self._in_flight[message.id] = scope
            tg.start_soon(self._run_request, message, scope)
        elif isinstance(message, Notification):
            if message.method == m.CANCEL:
                in_flight = self._in_flight.get(message.params.get("id"))
                if in_flight is not None:
                    in_flight.cancel()
            else:
                log.debug("ignoring notification %s", message.method)
        # Responses: the front sends none to the worker.

    async def _run_request(self, request: Request, scope: anyio.CancelScope) -> None:
        context_params = request.params.get("context") or {}
        token = correlation_id.set(str(context_params.get("correlation_id") or request.id))
        response: Response | None = None
        try:
            with scope:
                response = Response(request.id, await dispatch(self.state, self._handlers, request))
            if scope.cancelled_caught:
                self.state.requests_cancelled += 1
                log.info("request %s (%s) cancelled", request.id, request.method)
                error = RagError(ErrorCode.REQUEST_CANCELLED)
                response = Response(request.id, error=ErrorObject(JsonRpcCode.REQUEST_CANCELLED, error.message, error.to_data()))
        except RagError as exc:
            response = Response(request.id, error=ErrorObject.from_rag_error(exc))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            log.exception("method %s failed", request.method)
            response = Response(request.id, error=ErrorObject.from_rag_error(RagError(ErrorCode.INTERNAL_ERROR)))
        finally:
            self._in_flight.pop(request.id, None)
            self.state.requests_served += 1
            correlation_id.reset(token)
        if response is not None:
            try:
                await self._send(response.to_wire())
            except (BrokenPipeError, ConnectionResetError):
                log.info("front went away before the answer to %s", request.method)

def run_worker(fds: ProtocolFds) -> None:
    """Process entry: configure logging, build the server, serve until the pipe closes."""
    setup_logging("rag_worker")
    faulthandler.enable()  # a crash in native code (a parser, a driver) leaves its Python stacks in the log
    try:
        settings = load_settings()
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        sys.exit(m.EXIT_CONFIGURATION)
    from rag_worker.handlers import HANDLERS

    server = WorkerServer(fds, settings, HANDLERS)
    code = 0
    try:
        anyio.run(server.serve, backend="asyncio")
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # start-up failures the front should be able to name
        from rag_worker.storage.engine import DataDirUnwritable

        grouped = isinstance(exc, BaseExceptionGroup) and exc.subgroup(DataDirUnwritable) is not None
        if not (grouped or isinstance(exc, DataDirUnwritable)):
            raise
        code = m.EXIT_DATA_DIR
    # Skip interpreter teardown: library threads (onnxruntime, LightRAG workers) can stall it.
    logging.shutdown()
    os._exit(code)
