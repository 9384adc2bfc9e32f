#!/usr/bin/env python3
"""What hostile HTTP clients with a valid token cost the server (issue 24), before and after.

Starts `python -m mcp_front --transport http` from a project directory (this one by default; an
older checkout with --project, so both are measured by the same script on the same machine) with
two person tokens, then:

- body: the front's peak RSS while 1 and then 8 clients at once send a 15 MB `tools/call` holding
  5 M empty objects, what each got, and how long /healthz took meanwhile;
- sessions: one token opens N sessions; can another user still open one?
- upload: what a 12 MB file upload (16 MB of base64) gets.

    .venv/bin/python scripts/bench_hostile_http.py [--project DIR] [--sessions 2000]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
TOKENS = {"ann": "ann-bench-token-0123456789", "bob": "bob-bench-token-0123456789"}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip


def start(project: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    tokens = ",".join(f"user:{name}:{hashlib.sha256(token.encode()).hexdigest()}" for name, token in TOKENS.items())
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIGHTRAG_")}
    env.update(HOME=str(home), PYTHONPATH=str(project), LIGHTRAG_MCP_TRANSPORT="http", LIGHTRAG_MCP_HTTP_PORT=str(port),
               LIGHTRAG_MCP_HTTP_TOKENS=tokens)  # fmt: skip
    log = (home / "server.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "mcp_front"], env=env, cwd=project, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).json().get("status") == "ok":
                return process, base
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.3)
    raise SystemExit("the server did not become healthy")


def auth(name: str) -> dict[str, str]:
    return {**ACCEPT, "authorization": f"Bearer {TOKENS[name]}"}


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def hostile_bodies(base: str, pid: int, clients: int) -> dict[str, Any]:
    empties = b",".join([b"{}"] * (15 * 2**20 // 3))
    body = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lightrag_list_documents","arguments":{},"junk":[' + empties + b"]}}"
    statuses: list[int] = []
    health_s: list[float] = []
    peak = rss_mb(pid)
    done = threading.Event()

    def send() -> None:
        try:
            statuses.append(httpx.post(f"{base}/mcp", content=body, headers=auth("ann"), timeout=300).status_code)
        except httpx.HTTPError as exc:
            statuses.append(-1)
            print(f"  request failed: {type(exc).__name__}", file=sys.stderr)

    threads = [threading.Thread(target=send) for _ in range(clients)]
    for thread in threads:
        thread.start()

    def watch() -> None:
        while not done.is_set():
            started = time.perf_counter()
            httpx.get(f"{base}/healthz", timeout=60)
            health_s.append(time.perf_counter() - started)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    while any(thread.is_alive() for thread in threads):
        peak = max(peak, rss_mb(pid))
        time.sleep(0.02)
    done.set()
    watcher.join()
    time.sleep(2)
    return {"clients": clients, "statuses": sorted(statuses), "front_peak_mb": round(peak, 1),
            "front_after_mb": round(rss_mb(pid), 1), "healthz_max_s": round(max(health_s, default=0), 3)}  # fmt: skip


def sessions(base: str, count: int) -> dict[str, Any]:
    opened = 0
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            opened += client.post(f"{base}/mcp", json=INITIALIZE, headers=auth("ann")).status_code == 200
        other = client.post(f"{base}/mcp", json=INITIALIZE, headers=auth("bob")).status_code
    return {"opened_by_ann": opened, "seconds": round(time.perf_counter() - started, 1), "bob_gets": other}


def upload(base: str) -> dict[str, Any]:
    content = base64.b64encode(b"x" * (12 * 2**20)).decode()
    with httpx.Client(timeout=120) as client:
        response = client.post(f"{base}/mcp", json=INITIALIZE, headers=auth("bob"))
        session = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "upload_to_lightrag", "arguments": {"filename": "big.txt", "content": content, "mimeType": "text/plain"}}}  # fmt: skip
        answer = client.post(f"{base}/mcp", json=call, headers={**auth("bob"), **session})
    text = answer.text
    code = next((c for c in ("FILE_TOO_LARGE", "INVALID_PARAMETER") if c in text), text[:80])
    return {"http_status": answer.status_code, "got": code}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=ROOT, help="the checkout whose server is measured")
    parser.add_argument("--sessions", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        process, base = start(args.project.resolve(), Path(home))
        try:
            print(f"project {args.project}; front idle {rss_mb(process.pid):.1f} MB")
            for clients in (1, 8):
                print("body:", json.dumps(hostile_bodies(base, process.pid, clients)))
            print("upload 12 MB:", json.dumps(upload(base)))
            print("sessions:", json.dumps(sessions(base, args.sessions)))
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:  # thousands of open sessions shut down slowly
                process.kill()
                process.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
