"""The JSON-RPC endpoint both ends of the worker pipe use, driven over in-memory streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from protocol import ErrorCode, JsonRpcCode, Notification, RagError, Request, Response, encode_frame
from protocol import methods as m
from protocol.endpoint import JsonRpcEndpoint, PeerGone

pytestmark = pytest.mark.anyio
LIMIT = 4096


@dataclass
class Pipe:
    """One direction of a connection: bytes written at one end come out at the other."""

    sender: MemoryObjectSendStream[bytes]
    receiver: MemoryObjectReceiveStream[bytes]

    @classmethod
    def open(cls) -> Pipe:
        sender, receiver = anyio.create_memory_object_stream[bytes](100)
        return cls(sender, receiver)

    async def send(self, data: bytes) -> None:
        await self.sender.send(data)

    async def receive(self) -> bytes:
        try:
            return await self.receiver.receive()
        except anyio.EndOfStream:
            return b""


@dataclass
class Worker:
    """A request handler with knobs: echo, fail, block, report progress."""

    cancelled: list[Any] = field(default_factory=list)
    notifications: list[Notification] = field(default_factory=list)
    release: anyio.Event = field(default_factory=anyio.Event)
    endpoint: JsonRpcEndpoint | None = None

    async def on_request(self, request: Request) -> Any:
        action = request.params.get("action")
        if action == "fail":
            raise RagError(ErrorCode.DOCUMENT_NOT_FOUND, "No such document.")
        if action == "crash":
            raise ValueError("a handler bug")
        if action == "wait":
            await self.release.wait()
        if action == "sleep":
            await anyio.sleep_forever()
        if action == "progress":
            assert self.endpoint is not None
            for step in (1, 2):
                params = {"id": request.id, "progress": step, "total": 2, "message": f"step {step}"}
                await self.endpoint.notify(m.PROGRESS, params)
        if action == "big":
            return "z" * 2 * LIMIT
        return {"echo": request.params.get("text"), "id": request.id}

    async def on_notification(self, message: Notification) -> None:
        if message.method == "boom":
            raise ValueError("a notification handler bug")
        self.notifications.append(message)

    def on_cancelled(self, request: Request) -> None:
        self.cancelled.append(request.id)


@asynccontextmanager
async def connected(worker: Worker | None = None) -> AsyncIterator[tuple[JsonRpcEndpoint, JsonRpcEndpoint, Worker]]:
    """A front endpoint and a worker endpoint, each serving its side of two pipes."""
    worker = worker or Worker()
    to_worker, to_front = Pipe.open(), Pipe.open()
    front = JsonRpcEndpoint(to_front.receive, to_worker.send, max_frame_bytes=LIMIT, peer="the worker")
    back = JsonRpcEndpoint(
        to_worker.receive,
        to_front.send,
        max_frame_bytes=LIMIT,
        on_request=worker.on_request,
        on_notification=worker.on_notification,
        on_cancelled=worker.on_cancelled,
        inline={"ping": lambda params: {"pong": True}},
        answer_parse_errors=True,
        peer="the front",
    )
    worker.endpoint = back

    async def front_eof() -> str:
        return "the worker exited (code 3)"

    async with anyio.create_task_group() as tg:
        tg.start_soon(back.serve)
        tg.start_soon(front.serve, front_eof)
        try:
            with anyio.fail_after(5):
                yield front, back, worker
        finally:
            tg.cancel_scope.cancel()


async def test_a_request_gets_its_result() -> None:
    async with connected() as (front, _, _):
        assert await front.request("echo", {"text": "hello"}) == {"echo": "hello", "id": 1}


async def test_concurrent_requests_are_answered_as_they_finish() -> None:
    async with connected() as (front, back, worker):
        slow = await front.send_request("wait", {"action": "wait"})
        assert await front.request("echo", {"text": "fast"}) == {"echo": "fast", "id": 2}
        assert front.in_flight == 1
        worker.release.set()
        assert await front.result(slow) == {"echo": None, "id": 1}
        assert front.in_flight == 0


async def test_an_error_answer_becomes_the_rag_error_it_stands_for() -> None:
    async with connected() as (front, _, _):
        with pytest.raises(RagError) as caught:
            await front.request("fail", {"action": "fail"})
        assert caught.value.code is ErrorCode.DOCUMENT_NOT_FOUND and caught.value.message == "No such document."


async def test_an_unexpected_exception_becomes_internal_error_without_its_text() -> None:
    async with connected() as (front, _, _):
        with pytest.raises(RagError) as caught:
            await front.request("crash", {"action": "crash"})
        assert caught.value.code is ErrorCode.INTERNAL_ERROR and "bug" not in caught.value.message


async def test_inline_methods_are_answered_by_the_read_loop_not_the_request_handler() -> None:
    async with connected() as (front, _, _):
        assert await front.request("ping", {"action": "fail"}) == {"pong": True}


async def test_progress_reaches_the_pending_request_callback() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connected() as (front, _, _):
        await front.request("progress", {"action": "progress"}, on_progress)
    assert seen == [(1.0, 2, "step 1"), (2.0, 2, "step 2")]


async def test_a_failing_progress_callback_does_not_stop_the_read_loop() -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("the client went away")

    async with connected() as (front, _, _):
        assert await front.request("progress", {"action": "progress"}, on_progress) == {"echo": None, "id": 1}
        assert await front.request("echo", {"text": "still reading"}) == {"echo": "still reading", "id": 2}


async def test_notifications_reach_the_handler_and_a_failing_one_is_survived() -> None:
    async with connected() as (front, _, worker):
        await front.notify("boom", {})
        await front.notify("worker/ready", {"pid": 7})
        assert await front.request("echo", {"text": "after"}) == {"echo": "after", "id": 1}
    assert [(n.method, n.params) for n in worker.notifications] == [("worker/ready", {"pid": 7})]


async def test_a_cancelled_waiter_cancels_the_request_at_the_peer() -> None:
    async with connected() as (front, _, worker):
        with anyio.move_on_after(0.2):
            await front.request("sleep", {"action": "sleep"})
        while not worker.cancelled:
            await anyio.sleep(0.01)
        assert worker.cancelled == [1] and front.in_flight == 0


async def test_cancelling_an_outgoing_request_stops_waiting_for_it() -> None:
    async with connected() as (front, _, worker):
        call = await front.send_request("sleep", {"action": "sleep"})
        await front.cancel(call)
        with pytest.raises(RagError) as caught:
            await front.result(call)
        assert caught.value.code is ErrorCode.REQUEST_CANCELLED
        while not worker.cancelled:
            await anyio.sleep(0.01)
        assert worker.cancelled == [call.id]


async def test_a_cancelled_incoming_request_answers_request_cancelled() -> None:
    async with connected() as (front, back, worker):
        call = await front.send_request("sleep", {"action": "sleep"})
        await front.notify(m.CANCEL, {"id": call.id})  # the peer cancels; we keep waiting
        with pytest.raises(RagError) as caught:
            await front.result(call)
        assert caught.value.code is ErrorCode.REQUEST_CANCELLED and worker.cancelled == [call.id]


async def test_malformed_lines_are_counted_and_answered_with_a_parse_error() -> None:
    async with connected() as (front, back, _):
        await front.send_raw(b'this is not json\n{"jsonrpc": "2.0"}\n')
        assert await front.request("echo", {"text": "ok"}) == {"echo": "ok", "id": 1}
        assert back.bad_frames == 2
        assert front.bad_frames == 0  # the parse-error answers are protocol, not garbage


async def test_a_line_that_is_not_protocol_is_counted_by_the_front_too() -> None:
    async with connected() as (front, back, _):
        await back.send_raw(b"x" * (3 * LIMIT) + b"\nnot json either\n")
        assert await front.request("echo", {"text": "ok"}) == {"echo": "ok", "id": 1}
        assert front.bad_frames == 2  # the oversized line and the non-JSON one


async def test_an_oversized_request_fails_before_anything_is_sent() -> None:
    async with connected() as (front, back, _):
        with pytest.raises(RagError) as caught:
            await front.request("echo", {"text": "y" * 2 * LIMIT})
        assert caught.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED and "Send less data" in caught.value.suggested_action
        assert front.in_flight == 0 and front.requests_sent == 0
        assert await front.request("echo", {"text": "small"}) == {"echo": "small", "id": 2}
        assert back.bad_frames == 0


async def test_an_oversized_result_becomes_a_resource_limit_error() -> None:
    async with connected() as (front, _, _):
        with pytest.raises(RagError) as caught:
            await front.request("big", {"action": "big"})
        assert caught.value.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED and "too large" in caught.value.message
        assert front.bad_frames == 0


async def test_fail_pending_fails_every_waiter_at_once_with_its_reason() -> None:
    async with connected() as (front, _, _):
        calls = [await front.send_request("sleep", {"action": "sleep"}) for _ in range(3)]
        front.fail_pending("the worker was killed")
        for call in calls:
            with pytest.raises(PeerGone, match="the worker was killed"):
                await front.result(call)
        assert front.in_flight == 0


async def test_the_end_of_the_stream_fails_pending_requests_with_the_eof_reason() -> None:
    to_worker, to_front = Pipe.open(), Pipe.open()

    async def eof_reason() -> str:
        return "the worker exited (code 3)"

    front = JsonRpcEndpoint(to_front.receive, to_worker.send, max_frame_bytes=LIMIT)
    async with anyio.create_task_group() as tg:
        tg.start_soon(front.serve, eof_reason)
        call = await front.send_request("sleep", {})
        await to_front.sender.aclose()  # the worker's output ends
        with anyio.fail_after(5), pytest.raises(PeerGone, match=r"code 3"):
            await front.result(call)
    with pytest.raises(PeerGone, match=r"code 3"):
        await front.send_request("echo", {})


async def test_requests_still_running_when_the_stream_ends_are_cancelled() -> None:
    finished = anyio.Event()
    to_worker, to_front = Pipe.open(), Pipe.open()

    async def handler(request: Request) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            finished.set()

    back = JsonRpcEndpoint(to_worker.receive, to_front.send, max_frame_bytes=LIMIT, on_request=handler)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(back.serve)
            await to_worker.send(encode_frame(Request(1, "sleep").to_wire()))
            await anyio.sleep(0.05)
            await to_worker.sender.aclose()
        await finished.wait()


async def test_a_response_without_an_id_is_a_logged_protocol_error_not_a_bad_frame() -> None:
    async with connected() as (front, back, _):
        error = Response(None, error=None, result=None).to_wire()
        await back.send_raw(encode_frame(error))
        assert await front.request("echo", {"text": "ok"}) == {"echo": "ok", "id": 1}
        assert front.bad_frames == 0


async def test_the_parse_error_answer_uses_the_json_rpc_code() -> None:
    """What the worker writes back for a malformed frame, byte for byte."""
    to_worker, to_front = Pipe.open(), Pipe.open()
    back = JsonRpcEndpoint(to_worker.receive, to_front.send, max_frame_bytes=LIMIT, answer_parse_errors=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(back.serve)
        await to_worker.send(b"{broken\n")
        with anyio.fail_after(5):
            answer = await to_front.receive()
        tg.cancel_scope.cancel()
    expected = {"jsonrpc": "2.0", "id": None, "error": {"code": JsonRpcCode.PARSE_ERROR, "message": "malformed frame"}}
    assert answer == encode_frame(expected)
