"""A real local HTTP server speaking the OpenAI, Azure OpenAI and Ollama APIs, for tests.

It answers LightRAG's prompts well enough for the whole pipeline to run:
* entity extraction, gleaning, keyword extraction and description summaries are answered
  by the built-in extractor (`rag_worker.embedded.extractor.answer_prompt`, the work behind
  `builtin_llm_model_func`), which recognises every LightRAG 1.5.7 prompt;
* a RAG answer prompt gets ``FAKE-LLM ANSWER: ...`` quoting the context sentence that
  best matches the question, so a test can assert the fact made it through;
* embeddings are deterministic hashed bags of words, unit length.

Streaming (SSE for OpenAI, NDJSON for Ollama), usage counts, ``response_format`` /
``format``, float and base64 embeddings, API-key checks (401), and failure modes
switchable at run time: `fail_next`, `delay`, `down`. Every request is recorded.

In-process::

    with FakeLLMServer(api_key="sk-test") as fake:
        fake.openai_base_url   # http://127.0.0.1:<port>/v1

As a process: ``python -m tests.fakes.openai_server --port 0`` prints
``FAKE_LLM_PORT=<port>`` on stdout once it listens, and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import math
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rag_worker.embedded.extractor import PromptKind, answer_prompt, classify_prompt

log = logging.getLogger("tests.fakes.openai_server")

ANSWER_PREFIX = "FAKE-LLM ANSWER:"
DEFAULT_EMBEDDING_DIM = 64

_AZURE_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/(?P<endpoint>chat/completions|embeddings)$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_STOPWORDS = frozenset(
    "a an and are as at be by does did do for from has have how in is it its of on or that the this to"
    " was were what when where which who whom why with you your about into than then there".split()
)
#: Share of every embedding along one fixed direction: unrelated texts score about
#: this much cosine similarity (below LightRAG's 0.2 threshold), texts sharing a
#: content word score more.
_BASELINE_SIMILARITY = 0.15


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake saw it."""

    method: str
    path: str
    api: str  # "openai", "azure" or "ollama"
    endpoint: str  # "chat", "embeddings" or "other"
    model: str | None
    stream: bool
    status: int  # 0: dropped while `down`
    authorized: bool
    prompt_kind: str | None = None  # a PromptKind value for chat requests
    api_version: str | None = None  # Azure's ?api-version=
    body: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class _Failure:
    remaining: int
    status: int
    endpoint: str | None


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 (a free port unless `port` is given)."""

    def __init__(self, *, port: int = 0, api_key: str | None = None,
                 embedding_dim: int = DEFAULT_EMBEDDING_DIM, stream_chunk_words: int = 3) -> None:
        self.api_key = api_key
        self.embedding_dim = embedding_dim
        self.stream_chunk_words = max(1, stream_chunk_words)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._delay = 0.0
        self._down = False
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL: the Ollama host, the Azure endpoint."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> FakeLLMServer:
        """Serve in a background daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-llm", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- failure modes
    def fail_next(self, n: int = 1, status: int = 500, *, endpoint: str | None = None) -> None:
        """Answer the next `n` POSTs (only to `endpoint` "chat"/"embeddings" if given) with `status`."""
        with self._lock:
            self._failures.append(_Failure(n, status, endpoint))

    def delay(self, seconds: float) -> None:
        """Wait this long before answering every request (0 to stop)."""
        self._delay = max(0.0, seconds)

    def down(self, is_down: bool = True) -> None:
        """While down, every connection is closed without an answer."""
        self._down = is_down

    def up(self) -> None:
        self.down(False)

    def reset(self) -> None:
        """Forget recorded requests and clear every failure mode."""
        with self._lock:
            self._requests.clear()
            self._failures.clear()
        self._delay = 0.0
        self._down = False

    # ------------------------------------------------------------------ records
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, *, endpoint: str | None = None, prompt_kind: str | None = None,
                     api: str | None = None) -> list[RecordedRequest]:
        return [r for r in self.requests
                if (endpoint is None or r.endpoint == endpoint)
                and (prompt_kind is None or r.prompt_kind == prompt_kind)
                and (api is None or r.api == api)]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take_failure(self, endpoint: str) -> int | None:
        with self._lock:
            for failure in self._failures:
                if failure.endpoint in (None, endpoint) and failure.remaining > 0:
                    failure.remaining -= 1
                    if failure.remaining == 0:
                        self._failures.remove(failure)
                    return failure.status
        return None

    def _authorized(self, headers: Any) -> bool:
        if not self.api_key:
            return True
        return headers.get("Authorization", "") == f"Bearer {self.api_key}" or headers.get("api-key") == self.api_key


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    # ----------------------------------------------------------------- dispatch
    def _dispatch(self) -> None:
        fake = self.server.fake
        split = urlsplit(self.path)
        if fake._down:  # recorded with status 0: the client got no answer
            api, endpoint, deployment = _route(split.path)
            fake._record(RecordedRequest(method=self.command, path=split.path, api=api, endpoint=endpoint,
                                         model=deployment, stream=False, status=0, authorized=False))
            self._drop_connection()
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        api, endpoint, deployment = _route(split.path)
        model = deployment or body.get("model")
        kind = _prompt_kind(api, body) if endpoint == "chat" and isinstance(body, dict) else None
        if fake._delay:
            time.sleep(fake._delay)
        authorized = fake._authorized(self.headers)
        status = 401 if not authorized else (fake._take_failure(endpoint) if self.command == "POST" else None)
        status = status or (200 if endpoint != "other" or _is_known_other(self.command, split.path) else 404)
        fake._record(RecordedRequest(
            method=self.command, path=split.path, api=api, endpoint=endpoint, model=model,
            stream=bool(body.get("stream")) if isinstance(body, dict) else False, status=status,
            authorized=authorized, prompt_kind=kind, api_version=next(iter(parse_qs(split.query).get("api-version", [])), None),
            body=body if isinstance(body, dict) else {}))
        if status != 200:
            self._send_error(api, status)
        elif endpoint == "chat":
            self._chat(api, body, model or "")
        elif endpoint == "embeddings":
            self._embeddings(api, split.path, body, model or "")
        else:
            self._other(split.path)

    def _drop_connection(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ----------------------------------------------------------------- handlers
    def _chat(self, api: str, body: dict[str, Any], model: str) -> None:
        text = complete(body.get("messages") or [], body.get("response_format") or body.get("format"))
        prompt_tokens = sum(_count_tokens(_content_text(m.get("content"))) for m in body.get("messages") or [])
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": _count_tokens(text),
                 "total_tokens": prompt_tokens + _count_tokens(text)}
        pieces = list(_stream_pieces(text, self.server.fake.stream_chunk_words))
        if api == "ollama":
            if body.get("stream"):
                self._send_stream("application/x-ndjson", _ollama_chunks(model, pieces, usage))
            else:
                self._send_json(200, _ollama_message(model, text, usage, done=True))
        elif body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._send_stream("text/event-stream", _openai_chunks(model, pieces, usage if include_usage else None))
        else:
            self._send_json(200, {
                "id": f"chatcmpl-fake-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "usage": usage,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            })

    def _embeddings(self, api: str, path: str, body: dict[str, Any], model: str) -> None:
        dim = int(body.get("dimensions") or self.server.fake.embedding_dim)
        if path == "/api/embeddings":  # Ollama's legacy single-text endpoint
            self._send_json(200, {"embedding": fake_embedding(str(body.get("prompt", "")), dim)})
            return
        texts = body.get("input", "")
        texts = [texts] if isinstance(texts, str) else [t if isinstance(t, str) else json.dumps(t) for t in texts]
        vectors = [fake_embedding(text, dim) for text in texts]
        tokens = sum(_count_tokens(text) for text in texts)
        if api == "ollama":
            self._send_json(200, {"model": model, "embeddings": vectors, "prompt_eval_count": tokens})
            return
        as_base64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(struct.pack(f"<{dim}f", *v)).decode() if as_base64 else v}
                for i, v in enumerate(vectors)]
        self._send_json(200, {"object": "list", "data": data, "model": model,
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _other(self, path: str) -> None:
        if path == "/api/version":
            self._send_json(200, {"version": "0.0.0-fake"})
        elif path == "/api/tags":
            self._send_json(200, {"models": [{"name": "fake:latest", "model": "fake:latest", "size": 0}]})
        else:  # /v1/models, /models
            self._send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "fake"}]})

    # ---------------------------------------------------------------- responses
    def _send_error(self, api: str, status: int) -> None:
        message = "invalid or missing API key" if status == 401 else f"injected failure (HTTP {status})"
        if api == "ollama":
            self._send_json(status, {"error": message})
        else:
            self._send_json(status, {"error": {"message": message, "type": "fake_error", "code": str(status)}})

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, content_type: str, chunks: Iterable[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


# ------------------------------------------------------------------------ routing
def _route(path: str) -> tuple[str, str, str | None]:
    """(api, endpoint, Azure deployment) for a request path."""
    azure = _AZURE_PATH.match(path)
    if azure:
        endpoint = "chat" if azure.group("endpoint") == "chat/completions" else "embeddings"
        return "azure", endpoint, azure.group("deployment")
    if path in ("/v1/chat/completions", "/chat/completions"):
        return "openai", "chat", None
    if path in ("/v1/embeddings", "/embeddings"):
        return "openai", "embeddings", None
    if path == "/api/chat":
        return "ollama", "chat", None
    if path in ("/api/embed", "/api/embeddings"):
        return "ollama", "embeddings", None
    return ("ollama" if path.startswith("/api/") else "openai"), "other", None


def _is_known_other(method: str, path: str) -> bool:
    return method == "GET" and path in ("/api/version", "/api/tags", "/v1/models", "/models")


# ------------------------------------------------------------------------ answers
def complete(messages: list[dict[str, Any]], response_format: Any = None) -> str:
    """The fake model's reply to a chat conversation."""
    system = "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt = users[-1] if users else ""
    if isinstance(response_format, str):  # Ollama's format="json"
        response_format = {"type": "json_object"} if response_format == "json" else None
    if classify_prompt(prompt, system, response_format) is PromptKind.ANSWER:
        return rag_answer(prompt, system)
    return answer_prompt(prompt, system, response_format=response_format)


def rag_answer(question: str, system_prompt: str) -> str:
    """``FAKE-LLM ANSWER:`` quoting the context sentence sharing most words with the question."""
    wanted = _content_words(question)
    best, best_score = "", 0
    for sentence in _context_sentences(system_prompt):
        score = len(wanted & _content_words(sentence))
        if score > best_score:
            best, best_score = sentence, score
    if not best:
        return f"{ANSWER_PREFIX} the context says nothing about that question: {question.strip()}"
    return f'{ANSWER_PREFIX} according to the context, "{best}"'


def _context_sentences(system_prompt: str) -> Iterator[str]:
    # LightRAG puts each chunk on one line as JSON: {"reference_id": "1", "content": "..."}
    for line in system_prompt.splitlines():
        line = line.strip()
        if not (line.startswith("{") and '"content"' in line):
            continue
        try:
            content = json.loads(line).get("content", "")
        except (json.JSONDecodeError, AttributeError):
            continue
        for sentence in _SENTENCE_END.split(" ".join(str(content).split())):
            if sentence:
                yield sentence


def _prompt_kind(api: str, body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    system = "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    response_format = body.get("response_format") if api != "ollama" else (
        {"type": "json_object"} if body.get("format") == "json" else None)
    return classify_prompt(users[-1] if users else "", system, response_format).value


def _content_text(content: Any) -> str:
    if isinstance(content, list):  # multimodal parts
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _content_words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 2 and w not in _STOPWORDS}


def _count_tokens(text: str) -> int:
    return len(text.split())


def _stream_pieces(text: str, words_per_piece: int) -> Iterator[str]:
    words = re.findall(r"\S+\s*", text) or [text]
    for start in range(0, len(words), words_per_piece):
        yield "".join(words[start:start + words_per_piece])


def _openai_chunks(model: str, pieces: list[str], usage: dict[str, int] | None) -> Iterator[bytes]:
    ident, created = f"chatcmpl-fake-{time.monotonic_ns()}", int(time.time())

    def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        payload = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": choices, **extra}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    for i, piece in enumerate(pieces):
        delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
        yield event([{"index": 0, "delta": delta, "finish_reason": None}])
    yield event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    if usage is not None:
        yield event([], usage=usage)
    yield b"data: [DONE]\n\n"


def _ollama_message(model: str, text: str, usage: dict[str, int], *, done: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"model": model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "message": {"role": "assistant", "content": text}, "done": done}
    if done:
        message.update(done_reason="stop", prompt_eval_count=usage["prompt_tokens"],
                       eval_count=usage["completion_tokens"])
    return message


def _ollama_chunks(model: str, pieces: list[str], usage: dict[str, int]) -> Iterator[bytes]:
    for piece in pieces:
        yield json.dumps(_ollama_message(model, piece, usage, done=False)).encode() + b"\n"
    yield json.dumps(_ollama_message(model, "", usage, done=True)).encode() + b"\n"


# ---------------------------------------------------------------------- embeddings
def fake_embedding(text: str, dim: int = DEFAULT_EMBEDDING_DIM) -> list[float]:
    """Deterministic unit vector: a signed hashed bag of content words plus a fixed baseline direction."""
    if dim < 2:
        raise ValueError("dim must be at least 2")
    bag = [0.0] * dim
    for word in (m.lower() for m in _WORD.findall(text)):
        if len(word) <= 2 or word in _STOPWORDS:
            continue
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        bag[1 + h % (dim - 1)] += 1.0 if (h >> 40) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in bag))
    scale = math.sqrt(1 - _BASELINE_SIMILARITY) / norm if norm else 0.0
    vector = [v * scale for v in bag]
    vector[0] = math.sqrt(_BASELINE_SIMILARITY) if norm else 1.0
    return vector


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--api-key", default=None, help="require this key (Authorization: Bearer / api-key)")
    parser.add_argument("--dim", type=int, default=DEFAULT_EMBEDDING_DIM, help="embedding dimension")
    args = parser.parse_args(argv)
    server = FakeLLMServer(port=args.port, api_key=args.api_key, embedding_dim=args.dim)
    print(f"FAKE_LLM_PORT={server.port}", flush=True)
    print(f"fake LLM listening on {server.url}", file=sys.stderr, flush=True)

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server._httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
