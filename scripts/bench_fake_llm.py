#!/usr/bin/env python3
"""The local OpenAI-compatible fake (tests/fakes/openai_server.py) in a process of its own, for
the benchmarks: neither side shares an interpreter (or its GIL) with it, as with a real API.

It counts what reaches it — embedding requests, texts embedded, LLM requests, and the bytes
read from and written to its sockets (HTTP headers included) — and answers commands on stdin,
one a line: ``reset`` (answers ``ok``) and ``count`` (answers one JSON line).  It prints
``FAKE_LLM_PORT=<port>`` once it listens and stops at the end of stdin.

`FakeLLMProcess` starts and drives it from the benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

DIM = 64


class _Bytes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.read = 0
        self.written = 0

    def add(self, read: int = 0, written: int = 0) -> None:
        with self.lock:
            self.read += read
            self.written += written


class _CountingReader:
    """A handler's `rfile` that counts the bytes it hands out."""

    def __init__(self, inner: BinaryIO, tally: _Bytes) -> None:
        self._inner, self._tally = inner, tally

    def read(self, size: int = -1) -> bytes:
        data = self._inner.read(size)
        self._tally.add(read=len(data))
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._inner.readline(size)
        self._tally.add(read=len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _CountingWriter:
    """A handler's `wfile` that counts the bytes written to it."""

    def __init__(self, inner: Any, tally: _Bytes) -> None:
        self._inner, self._tally = inner, tally

    def write(self, data: bytes) -> int:
        self._tally.add(written=len(data))
        return int(self._inner.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def serve() -> None:
    from tests.fakes import openai_server

    tally = _Bytes()

    class CountingHandler(openai_server._Handler):
        def setup(self) -> None:
            super().setup()
            self.rfile = _CountingReader(self.rfile, tally)  # type: ignore[assignment]
            self.wfile = _CountingWriter(self.wfile, tally)  # type: ignore[assignment]

    fake = openai_server.FakeLLMServer(embedding_dim=DIM)
    fake._httpd.RequestHandlerClass = CountingHandler
    fake.start()
    print(f"FAKE_LLM_PORT={fake.port}", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "reset":
            fake.reset()
            with tally.lock:
                tally.read = tally.written = 0
            print("ok", flush=True)
        elif command == "count":
            embeddings = fake.requests_for(endpoint="embeddings")
            texts = sum(len(r.body["input"]) if isinstance(r.body.get("input"), list) else 1 for r in embeddings)
            with tally.lock:
                sent, received = tally.read, tally.written
            counts = {"embedding_requests": len(embeddings), "texts_embedded": texts,
                      "llm_requests": len(fake.requests_for(endpoint="chat")),
                      "bytes_to_fake": sent, "bytes_from_fake": received}
            print(json.dumps(counts), flush=True)
    fake.stop()


class FakeLLMProcess:
    """The fake as a child process: its OpenAI base URL, and reset/count between calls.

    The commands block for about a millisecond: use them between timed calls, never inside one."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> FakeLLMProcess:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, cwd=str(PROJECT_ROOT),
        )
        first = self._readline()
        if not first.startswith("FAKE_LLM_PORT="):
            raise RuntimeError(f"the fake LLM did not start: {first!r}")
        self.port = int(first.split("=", 1)[1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=10)
            self._process = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The server's (and the floor's) configuration: LightRAG's openai binding for both sides."""
        host = self.base_url
        return {
            "LLM_BINDING": "openai", "LLM_MODEL": "fake-chat", "LLM_BINDING_HOST": host, "LLM_BINDING_API_KEY": "sk-bench",
            "EMBEDDING_BINDING": "openai", "EMBEDDING_MODEL": "fake-embed", "EMBEDDING_DIM": str(DIM),
            "EMBEDDING_BINDING_HOST": host, "EMBEDDING_BINDING_API_KEY": "sk-bench",
        }

    def reset(self) -> None:
        self._send("reset")
        assert self._readline() == "ok"

    def count(self) -> dict[str, int]:
        self._send("count")
        return dict(json.loads(self._readline()))

    def _send(self, command: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()

    def _readline(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        return self._process.stdout.readline().strip()


if __name__ == "__main__":
    serve()
