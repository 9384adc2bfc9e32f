"""The wire contract: framing, message shapes, error codes."""

from __future__ import annotations

from typing import Any

import pytest

from protocol import (
    ERROR_TABLE,
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
from protocol.methods import METHODS


def reader_over(chunks: list[bytes], limit: int = 1024) -> FrameReader:
    pending = list(chunks)

    async def receive() -> bytes:
        return pending.pop(0) if pending else b""

    return FrameReader(receive, limit)


def test_a_frame_is_one_line_even_when_strings_hold_newlines() -> None:
    frame = encode_frame({"text": "a\nb\r\nc"})
    assert frame.endswith(b"\n") and frame.count(b"\n") == 1
    assert decode_frame(frame[:-1]) == {"text": "a\nb\r\nc"}


def test_non_json_is_a_frame_error() -> None:
    with pytest.raises(FrameError):
        decode_frame(b"this is not json")


@pytest.mark.anyio
async def test_reader_splits_lines_across_reads() -> None:
    reader = reader_over([b'{"a"', b":1}\n{", b'"b":2}\n', b"tail-without-newline"])
    assert await reader.read_line() == b'{"a":1}'
    assert await reader.read_line() == b'{"b":2}'
    assert await reader.read_line() == b"tail-without-newline"
    assert await reader.read_line() is None


@pytest.mark.anyio
async def test_oversized_line_is_skipped_and_reading_continues() -> None:
    reader = reader_over([b"x" * 600, b"x" * 600, b"x" * 600 + b"\n", b'{"ok":true}\n'], limit=1000)
    with pytest.raises(FrameTooLarge):
        await reader.read_line()
    assert await reader.read_line() == b'{"ok":true}'
    assert await reader.read_line() is None


@pytest.mark.anyio
async def test_many_small_reads_of_a_large_frame() -> None:
    body = b"y" * 200_000
    chunks = [body[i : i + 100] for i in range(0, len(body), 100)] + [b"\n"]
    reader = reader_over(chunks, limit=1_000_000)
    assert await reader.read_line() == body


def test_messages_round_trip() -> None:
    for message in (
        Request(7, "system/health", {"context": {"workspace": "w", "correlation_id": "c"}, "arguments": {}}),
        Notification("worker/ready", {"pid": 1}),
        Response(7, {"ok": True}),
        Response("x", error=ErrorObject(-32000, "boom", {"error_code": "STORAGE_ERROR"})),
    ):
        assert parse_message(decode_frame(encode_frame(message.to_wire())[:-1])) == message


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"id": 1, "method": "ping"},  # no jsonrpc member
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "error": "nope"},
    ],
)
def test_invalid_messages_are_rejected(bad: object) -> None:
    with pytest.raises(InvalidMessage):
        parse_message(bad)


def test_every_error_code_has_a_message_and_an_action() -> None:
    assert set(ERROR_TABLE) == set(ErrorCode)
    for info in ERROR_TABLE.values():
        assert info.message.endswith(".") and info.suggested_action


def test_rag_error_survives_the_pipe() -> None:
    error = RagError(ErrorCode.FILE_TOO_LARGE, "The file is 12 MB; the limit is 10 MB.", details={"size_mb": 12})
    wire = ErrorObject.from_rag_error(error).to_wire()
    assert wire["code"] == JsonRpcCode.APPLICATION_ERROR
    back = parse_message({"jsonrpc": "2.0", "id": 1, "error": wire})
    assert isinstance(back, Response) and back.error is not None
    again = back.error.to_rag_error()
    assert (again.code, again.message, again.retryable, again.details) == (
        ErrorCode.FILE_TOO_LARGE,
        "The file is 12 MB; the limit is 10 MB.",
        False,
        {"size_mb": 12},
    )


def test_an_unknown_error_code_from_the_pipe_becomes_internal_error() -> None:
    error = ErrorObject(-32000, "Traceback: secret path /root/x", {"error_code": "NOPE"}).to_rag_error()
    assert error.code is ErrorCode.INTERNAL_ERROR
    assert "/root" not in error.message


def test_tool_method_schemas_are_closed_and_bounded() -> None:
    def walk(schema: dict[str, Any], where: str) -> None:
        kind = schema.get("type")
        for option in schema.get("anyOf", []):
            walk(option, where)
        if kind == "object":
            extra = schema.get("additionalProperties")
            if extra is not False:  # an open map (metadata): bounded in size and in its values
                assert isinstance(extra, dict) and "maxProperties" in schema, where
                walk(extra, f"{where}.*")
            for name, sub in schema.get("properties", {}).items():
                walk(sub, f"{where}.{name}")
        elif kind == "string":
            assert "maxLength" in schema or "enum" in schema, where
        elif kind == "array":
            assert "maxItems" in schema, where
            walk(schema["items"], f"{where}[]")
        elif kind in ("integer", "number"):
            assert "maximum" in schema, where

    for spec in METHODS.values():
        walk(spec.params_schema, spec.name)
