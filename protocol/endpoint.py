"""One JSON-RPC endpoint for both ends of the worker pipe, after pygls's `JsonRPCProtocol`.

The endpoint reads bounded NDJSON frames from a `Receive` and writes them through a `Send`
(small `Protocol` types, like pygls's Reader and Writer), so the same code runs over a
process pipe, an asyncio pipe or an in-memory stream in a test.  It owns:

* outgoing requests, pending by id: `request()` (or `send_request()` then `result()`)
  waits for the answer; an error answer becomes a `RagError`; cancelling the waiter sends
  `$/cancelRequest`; `$/progress` for a pending request goes to its `on_progress`;
* incoming requests, each in its own task under its own `CancelScope`, so `$/cancelRequest`
  cancels exactly one; `inline` methods are answered in the read loop itself (the worker's
  `ping`: a blocked event loop misses it, which is the point);
* the failure of every pending request at once when the stream ends or `fail_pending()`
  is called (the process was killed): waiters get `PeerGone`.

Policy stays with the users: what a request does, what a notification means, what a
closed stream is called.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.abc

from protocol.errors import ErrorCode, JsonRpcCode, RagError
from protocol.framing import FrameError, FrameReader, FrameTooLarge, decode_frame, encode_frame
from protocol.messages import (
    ErrorObject,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    parse_message,
)
from protocol.methods import CANCEL, PROGRESS

log = logging.getLogger("protocol.endpoint")

# Writing a cancel to a peer whose pipe is full must not hold up the caller for long.
CANCEL_WRITE_TIMEOUT = 1.0

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
RequestHandler = Callable[[Request], Awaitable[Any]]
NotificationHandler = Callable[[Notification], Awaitable[None]]
InlineHandler = Callable[[dict[str, Any]], Any]


class Receive(Protocol):
    """The next bytes of the incoming stream; b"" at its end."""

    def __call__(self) -> Awaitable[bytes]: ...


class Send(Protocol):
    """Write bytes to the outgoing stream; raises OSError or an anyio stream error when it is closed."""

    def __call__(self, data: bytes, /) -> Awaitable[None]: ...


class PeerGone(Exception):
    """The other end went away (or was killed) while a request was pending or being sent."""


@dataclass
class OutgoingRequest:
    """A request we sent and are waiting on."""

    id: int
    method: str
    on_progress: ProgressCallback | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    response: Response | None = None
    failure: Exception | None = None

    def settle(self, response: Response | None = None, failure: Exception | None = None) -> None:
        if not self.done.is_set():
            self.response, self.failure = response, failure
            self.done.set()

    def outcome(self) -> Any:
        """The result, or the error the answer (or the lack of one) stands for."""
        if self.response is None:
            raise self.failure or PeerGone("the connection closed")
        if self.response.error is not None:
            raise self.response.error.to_rag_error()
        return self.response.result


def _error_response(request_id: RequestId | None, error: RagError) -> Response:
    return Response(request_id, error=ErrorObject.from_rag_error(error))


class JsonRpcEndpoint:
    """Requests, responses and notifications over one bounded NDJSON stream."""

    def __init__(
        self,
        receive: Receive,
        send: Send,
        *,
        max_frame_bytes: int,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_cancelled: Callable[[Request], None] | None = None,
        inline: Mapping[str, InlineHandler] | None = None,
        answer_parse_errors: bool = False,
        peer: str = "the peer",
    ) -> None:
        self._receive = receive
        self._send = send
        self._max_frame = max_frame_bytes
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_cancelled = on_cancelled
        self._inline = dict(inline or {})
        self._answer_parse_errors = answer_parse_errors
        self.peer = peer
        self._ids = itertools.count(1)
        self._outgoing: dict[RequestId, OutgoingRequest] = {}
        self._incoming: dict[RequestId, anyio.CancelScope] = {}
        self._write_lock = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None
        self.closed_reason: str | None = None
        self.bad_frames = 0
        self.requests_sent = 0

    @property
    def in_flight(self) -> int:
        """Outgoing requests still waiting for an answer."""
        return len(self._outgoing)

    # --- outgoing ----------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any], on_progress: ProgressCallback | None = None) -> Any:
        """Send a request and wait for its result (raises RagError or PeerGone)."""
        return await self.result(await self.send_request(method, params, on_progress))

    async def send_request(
        self, method: str, params: dict[str, Any], on_progress: ProgressCallback | None = None
    ) -> OutgoingRequest:
        """Send a request; `result()` waits for its answer.

        A frame over the bound raises RESOURCE_LIMIT_EXCEEDED before anything is sent."""
        if self.closed_reason is not None:
            raise PeerGone(self.closed_reason)
        call = OutgoingRequest(next(self._ids), method, on_progress)
        frame = encode_frame(Request(call.id, method, params).to_wire())
        if len(frame) > self._max_frame:
            raise RagError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                f"The request is {len(frame) / 2**20:.1f} MB; the limit is {self._max_frame / 2**20:.0f} MB.",
                suggested_action="Send less data in one call (split the document or the batch).",
            )
        self._outgoing[call.id] = call
        self.requests_sent += 1
        try:
            await self._write(frame)
        except BaseException:
            self._outgoing.pop(call.id, None)
            raise
        return call

    async def result(self, call: OutgoingRequest) -> Any:
        """Wait for the answer to `call`; when the wait is cancelled, the peer is told so."""
        try:
            await call.done.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(CANCEL_WRITE_TIMEOUT, shield=True):
                await self.cancel(call)
            raise
        finally:
            self._outgoing.pop(call.id, None)
        return call.outcome()

    async def cancel(self, call: OutgoingRequest) -> None:
        """Stop waiting for `call` (its waiter gets REQUEST_CANCELLED) and ask the peer to stop it."""
        if call.done.is_set():
            return
        self._outgoing.pop(call.id, None)
        call.settle(failure=RagError(ErrorCode.REQUEST_CANCELLED))
        if self.closed_reason is None:
            try:
                await self.notify(CANCEL, {"id": call.id})
            except PeerGone:
                pass

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._write(encode_frame(Notification(method, params).to_wire()))

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are, unframed (fault injection only)."""
        await self._write(data)

    def fail_pending(self, reason: str) -> None:
        """Fail every outgoing request at once: their waiters get PeerGone(reason)."""
        for call in list(self._outgoing.values()):
            call.settle(failure=PeerGone(reason))
        self._outgoing.clear()

    async def _write(self, frame: bytes) -> None:
        try:
            async with self._write_lock:
                await self._send(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise PeerGone(f"the pipe to {self.peer} is closed ({type(exc).__name__})") from None

    # --- the read loop -----------------------------------------------------------

    async def serve(self, on_eof: Callable[[], Awaitable[str]] | None = None) -> None:
        """Read and handle frames until the stream ends, then fail what is pending.

        Incoming requests still running at the end are cancelled: nobody reads their
        answers.  `on_eof` names the end (e.g. the process's exit code)."""
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                await self._read_frames(FrameReader(self._receive, self._max_frame))
                tasks.cancel_scope.cancel()
        finally:
            self._tasks = None
            with anyio.CancelScope(shield=True):
                reason = await on_eof() if on_eof is not None else "the connection closed"
            self.closed_reason = self.closed_reason or reason
            self.fail_pending(self.closed_reason)

    async def _read_frames(self, frames: FrameReader) -> None:
        while True:
            try:
                line = await frames.read_line()
            except FrameTooLarge as exc:
                self.bad_frames += 1
                log.error("discarded an oversized frame from %s: %s", self.peer, exc)
                continue
            if line is None:
                return
            if line.strip():
                await self._handle_line(line)

    async def _handle_line(self, line: bytes) -> None:
        try:
            message = parse_message(decode_frame(line))
        except (FrameError, InvalidMessage) as exc:
            self.bad_frames += 1
            log.error("ignoring a non-protocol line from %s (%d bytes): %s", self.peer, len(line), exc)
            if self._answer_parse_errors:
                await self._answer(Response(None, error=ErrorObject(JsonRpcCode.PARSE_ERROR, "malformed frame")))
            return
        if isinstance(message, Request):
            await self._handle_request(message)
        elif isinstance(message, Notification):
            await self._handle_notification(message)
        else:
            self._handle_response(message)

    def _handle_response(self, response: Response) -> None:
        if response.id is None:
            log.error("%s reported a protocol error: %s", self.peer, response.error)
            return
        call = self._outgoing.get(response.id)
        if call is not None:
            call.settle(response)

    async def _handle_notification(self, message: Notification) -> None:
        if message.method == CANCEL:
            scope = self._incoming.get(message.params.get("id"))  # type: ignore[arg-type]
            if scope is not None:
                scope.cancel()
        elif message.method == PROGRESS:
            await self._route_progress(message.params)
        elif self._on_notification is not None:
            try:
                await self._on_notification(message)
            except Exception:  # a bad notification must not stop the read loop
                log.exception("handling notification %s failed", message.method)
        else:
            log.debug("ignoring notification %s", message.method)

    async def _route_progress(self, params: dict[str, Any]) -> None:
        call = self._outgoing.get(params.get("id"))  # type: ignore[arg-type]
        if call is None or call.on_progress is None:
            return
        try:
            await call.on_progress(float(params.get("progress", 0)), params.get("total"), params.get("message"))
        except Exception:  # a client that went away must not stop the read loop
            log.debug("forwarding progress failed", exc_info=True)

    # --- incoming requests -------------------------------------------------------

    async def _handle_request(self, request: Request) -> None:
        inline = self._inline.get(request.method)
        if inline is not None:
            # Answered right here in the read loop: a blocked event loop misses it.
            await self._answer(Response(request.id, inline(request.params)))
            return
        if self._on_request is None or self._tasks is None:
            error = ErrorObject(JsonRpcCode.METHOD_NOT_FOUND, f"{self.peer} serves no requests")
            await self._answer(Response(request.id, error=error))
            return
        scope = anyio.CancelScope()
        self._incoming[request.id] = scope
        self._tasks.start_soon(self._run_request, request, scope)

    async def _run_request(self, request: Request, scope: anyio.CancelScope) -> None:
        try:
            response = await self._execute(request, scope)
        finally:
            if self._incoming.get(request.id) is scope:
                del self._incoming[request.id]
        await self._answer(response, request.method)

    async def _execute(self, request: Request, scope: anyio.CancelScope) -> Response:
        """Run the handler; every outcome but the end of the stream becomes a response."""
        assert self._on_request is not None
        try:
            with scope:
                return Response(request.id, await self._on_request(request))
            # Only reached when `scope` was cancelled, i.e. by $/cancelRequest.
            log.info("request %s (%s) cancelled", request.id, request.method)
            if self._on_cancelled is not None:
                self._on_cancelled(request)
            error = RagError(ErrorCode.REQUEST_CANCELLED)
            return Response(request.id, error=ErrorObject(JsonRpcCode.REQUEST_CANCELLED, error.message, error.to_data()))
        except RagError as exc:
            return _error_response(request.id, exc)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            log.exception("method %s failed", request.method)
            return _error_response(request.id, RagError(ErrorCode.INTERNAL_ERROR))

    async def _answer(self, response: Response, method: str = "") -> None:
        """Send a response; one too large for the peer's bound becomes an error instead."""
        try:
            frame = encode_frame(response.to_wire())
        except TypeError:  # a result that is not JSON: a handler bug, not the caller's
            log.exception("the result of %s is not JSON", method or response.id)
            frame = encode_frame(_error_response(response.id, RagError(ErrorCode.INTERNAL_ERROR)).to_wire())
        if len(frame) > self._max_frame:
            # Never emit a frame the peer would have to discard.
            too_large = RagError(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                "The result is too large to return; ask for less (lower limits or a narrower filter).",
            )
            frame = encode_frame(_error_response(response.id, too_large).to_wire())
        try:
            await self._write(frame)
        except PeerGone:
            log.info("%s went away before the answer to %s", self.peer, method or response.id)
