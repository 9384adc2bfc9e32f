"""Framing on the worker pipe: one JSON value per line (NDJSON), encoded with orjson.

orjson never writes a raw newline inside a JSON value, so a newline always ends a frame.
The reader is transport-agnostic: it takes any `receive()` coroutine that returns the
next bytes (empty at end of stream), so the same code reads an anyio process pipe in
the front and an asyncio pipe in the worker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024


class FrameError(Exception):
    """A line on the pipe is not a protocol frame."""


class FrameTooLarge(FrameError):
    """A line exceeded the frame bound; it was discarded up to its newline."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of at least {size} bytes exceeds the {limit}-byte limit")
        self.size = size
        self.limit = limit


def encode_frame(message: dict[str, Any]) -> bytes:
    """Serialise one message as a newline-terminated frame."""
    return orjson.dumps(message) + b"\n"


def decode_frame(line: bytes) -> Any:
    """Parse one frame's JSON (without its newline); raises FrameError when it is not JSON."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"not JSON: {exc}") from None


class FrameReader:
    """Splits a byte stream into lines, with a bound on line length.

    Scanning resumes where the previous search stopped, so a large frame arriving in
    many small reads costs linear, not quadratic, time.
    """

    def __init__(
        self,
        receive: Callable[[], Awaitable[bytes]],
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self._receive = receive
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._scanned = 0
        self._discarding = False
        self._eof = False

    async def read_line(self) -> bytes | None:
        """The next line without its newline; None at end of stream.

        Raises FrameTooLarge once per oversized line, after skipping it entirely.
        """
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if self._discarding:
                    self._discarding = False
                    raise FrameTooLarge(self._max + 1, self._max)
                return line
            self._scanned = len(self._buffer)
            if self._scanned > self._max:
                # Keep nothing of an oversized line: memory stays bounded.
                self._discarding = True
                self._buffer.clear()
                self._scanned = 0
            if self._eof:
                if self._buffer and not self._discarding:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            chunk = await self._receive()
            if not chunk:
                self._eof = True
            else:
                self._buffer += chunk
