#!/usr/bin/env python3
"""Many users, one server (issue 15): LibreChat users through ONE Streamable HTTP server with a
gateway token, against today's one stdio server per user, measured in the same run.

    .venv/bin/python scripts/bench_multiuser.py                          # 50 users, 5 questions, 3 stdio users
    .venv/bin/python scripts/bench_multiuser.py --users 5 --questions 2 --stdio-users 1 --calls 50
    .venv/bin/python scripts/bench.py --only multiuser                    # the same in bench.py's table

- Memory. Every user opens a session (the gateway token + X-User-Id, as LibreChat sends them),
  uploads one two-page PDF (scripts/corpus.py) and asks questions: the first about their own
  document (`accuracy`: its planted fact is in the answer), the others about other users'
  documents, whose planted facts must never appear (`leaks`). Then the RSS of the HTTP server's process tree — front + worker + extractor
  helpers (psutil) — beside K stdio servers started the LibreChat way (one per user,
  LIGHTRAG_MCP_USER_ID), each after the same flow: their process-tree RSS per user and that
  times the user count.
- Per-call overhead: p50 of the same calls (the health check, a small query) over HTTP and over
  stdio, interleaved.
- Concurrency: every user's session asks its question at the same moment: errors, p50/p95
  (floor: the same questions one at a time), pings the supervisor missed meanwhile.
Nothing is asserted: the numbers are printed with their floor; errors are counted.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import secrets
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_report import Results, markdown, record  # noqa: E402
from scripts.bench_support import PRODUCTION_SUPERVISION, machine_info  # noqa: E402
from scripts.corpus import BenchDoc, bench_documents  # noqa: E402
from tests.integration.harness import Client, running_server  # noqa: E402
from tests.integration.http_harness import bearer, http_server, mcp_client  # noqa: E402

#: Users indexing at the same time in the memory phase (LibreChat users do not all upload at once).
FLOW_CONCURRENCY = 4
USER_HEADER = "X-User-Id"
QUERY_TOOL = "lightrag_query"
HEALTH_TOOL = "lightrag_health_check"


@dataclass
class Options:
    users: int = 50
    questions: int = 5
    stdio_users: int = 3
    calls: int = 300  # per-call overhead samples per transport and call
    server_env: dict[str, str] = field(default_factory=dict)  # extra settings for every server started

    @classmethod
    def quick(cls) -> Options:
        return cls(users=10, questions=5, stdio_users=2, calls=100)


@dataclass
class FlowStats:
    """What the users' flows saw: errors, latencies, answers found, answers leaked."""

    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    upload_s: list[float] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    found: int = 0
    asked_own: int = 0
    leaks: int = 0
    asked_other: int = 0

    def failed(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(what[:300])


def user_id(index: int) -> str:
    """A LibreChat-style user id (24 hex digits, like a MongoDB ObjectId)."""
    return hashlib.sha256(f"bench-user-{index}".encode()).hexdigest()[:24]


async def attempt(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any, str | None]:
    """(seconds, result, error text): a tool error or an exception is an error, never raised."""
    started = time.perf_counter()
    try:
        result = await call()
    except Exception as exc:  # a benchmark counts failures; it does not stop at the first
        return time.perf_counter() - started, None, f"{type(exc).__name__}: {exc}"
    elapsed = time.perf_counter() - started
    if getattr(result, "is_error", False):
        text = result.content[0].text if result.content else "(no text)"
        return elapsed, result, text
    return elapsed, result, None


def answer_text(result: Any) -> str:
    """The result's text, whitespace collapsed (a PDF's lines break anywhere)."""
    text = " ".join(getattr(block, "text", "") for block in getattr(result, "content", None) or [])
    return " ".join(text.split())


def planted_fact(doc: BenchDoc) -> str:
    """The part of the document's planted sentence no other document holds: its device code and
    builder together (a builder's name alone also turns up in other documents' random text)."""
    code = doc.question.removeprefix("Who built the ").removesuffix(" prototype?")
    return f"{code} prototype was built by {doc.answer}"


async def user_flow(client: Client, doc: BenchDoc, others: list[BenchDoc], stats: FlowStats) -> None:
    """Upload one document, then ask about it and about `others` (which this user never saw)."""
    arguments = {"filename": doc.name, "content": base64.b64encode(doc.pdf).decode(), "mimeType": "application/pdf"}
    seconds, result, error = await attempt(lambda: client.call("upload_to_lightrag", arguments))
    if error is None and (result.structured_content or {}).get("status") != "processed":
        error = f"upload ended {(result.structured_content or {}).get('status')!r}"
    if error is not None:
        stats.failed(f"upload: {error}")
    stats.upload_s.append(seconds)
    for index, asked in enumerate([doc, *others]):
        seconds, result, error = await attempt(lambda: client.call(QUERY_TOOL, {"query": asked.question}))  # noqa: B023
        if error is not None:
            stats.failed(f"query: {error}")
            continue
        stats.query_ms.append(seconds * 1000)
        hit = planted_fact(asked) in answer_text(result)
        if index == 0:
            stats.asked_own, stats.found = stats.asked_own + 1, stats.found + hit
        else:
            stats.asked_other, stats.leaks = stats.asked_other + 1, stats.leaks + hit


async def run_flows(clients: list[Client], docs: list[BenchDoc], questions: int, stats: FlowStats) -> float:
    """The flow of each client's user (client i owns docs[i]; the others are the next documents),
    FLOW_CONCURRENCY at a time; the wall time in seconds."""
    limiter = anyio.CapacityLimiter(FLOW_CONCURRENCY)
    count = len(docs)

    async def one(index: int) -> None:
        others = [docs[(index + step) % count] for step in range(1, questions)] if count > 1 else []
        async with limiter:
            await user_flow(clients[index], docs[index], others, stats)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index in range(len(clients)):
            tg.start_soon(one, index)
    return time.perf_counter() - started


# --- memory ------------------------------------------------------------------------------------


def tree_memory(pid: int) -> dict[str, float]:
    """RSS (and PSS, which counts shared pages once) in MB of a front and its descendants:
    the worker (`-m rag_worker`) and the extractor helpers under it."""
    front = psutil.Process(pid)
    parts = {"front": 0.0, "worker": 0.0, "helpers": 0.0, "pss_total": 0.0}
    for process in [front, *front.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            memory = process.memory_full_info()
            cmdline = " ".join(process.cmdline())
            part = "front" if process.pid == pid else "worker" if "rag_worker" in cmdline else "helpers"
            parts[part] += memory.rss / 2**20
            parts["pss_total"] += getattr(memory, "pss", memory.rss) / 2**20
    parts["total"] = parts["front"] + parts["worker"] + parts["helpers"]
    return {name: round(value, 1) for name, value in parts.items()}


# --- the HTTP server ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_deployment(home: Path, extra: dict[str, str]) -> AsyncIterator[tuple[int, Callable[[str], Any]]]:
    """One HTTP server with a gateway token: (its pid, a function opening a session for a user)."""
    token = secrets.token_urlsafe(32)
    env = {
        **PRODUCTION_SUPERVISION,
        **extra,
        "LIGHTRAG_MCP_HTTP_TOKENS": f"gateway:bench:{hashlib.sha256(token.encode()).hexdigest()}",
        "LIGHTRAG_MCP_HTTP_USER_HEADER": USER_HEADER,
    }
    home.mkdir(parents=True, exist_ok=True)
    with http_server(home, **env) as server:
        yield server.process.pid, lambda user: mcp_client(server.url, bearer(token, user, USER_HEADER))


async def one_at_a_time_and_all_at_once(
    clients: list[Client], docs: list[BenchDoc]
) -> tuple[list[float], list[float], int, dict[str, Any], dict[str, Any]]:
    """Each user's question one at a time (the floor), then all at once; (floor ms, burst ms,
    burst errors, supervisor snapshot before, after)."""
    floor = []
    for client, doc in zip(clients, docs, strict=True):
        seconds, _, error = await attempt(lambda: client.call(QUERY_TOOL, {"query": doc.question}))  # noqa: B023
        if error is None:
            floor.append(seconds * 1000)
    before = await worker_snapshot(clients[0])
    burst: list[float] = []
    errors = 0

    async def ask(client: Client, doc: BenchDoc) -> None:
        nonlocal errors
        seconds, _, error = await attempt(lambda: client.call(QUERY_TOOL, {"query": doc.question}))
        if error is None:
            burst.append(seconds * 1000)
        else:
            errors += 1

    async with anyio.create_task_group() as tg:
        for client, doc in zip(clients, docs, strict=True):
            tg.start_soon(ask, client, doc)
    return floor, burst, errors, before, await worker_snapshot(clients[0])


async def worker_snapshot(client: Client) -> dict[str, Any]:
    _, result, error = await attempt(lambda: client.call(HEALTH_TOOL, {}))
    if error is not None or result.structured_content is None:
        return {}
    return dict(result.structured_content["components"]["worker"])


# --- per-call overhead -------------------------------------------------------------------------


async def call_latencies(http: Client, stdio: Client, calls: int) -> dict[str, tuple[list[float], list[float]]]:
    """(HTTP ms, stdio ms) of the same calls, alternated so both see the same machine."""
    samples: dict[str, tuple[list[float], list[float]]] = {"health": ([], []), "query": ([], [])}
    arguments = {"health": (HEALTH_TOOL, {}), "query": (QUERY_TOOL, {"query": "prototype", "top_k": 5})}
    for _ in range(calls):
        for name, (tool, args) in arguments.items():
            for transport, client in enumerate((http, stdio)):
                seconds, _, error = await attempt(lambda: client.call(tool, args))  # noqa: B023
                if error is None:
                    samples[name][transport].append(seconds * 1000)
    return samples


# --- the benchmark ----------------------------------------------------------------------------------


async def bench_multiuser(results: Results, home: Path, options: Options) -> None:
    """HTTP (one server, `options.users` users) and stdio (one server per user, `stdio_users`)."""
    docs = bench_documents(options.users)
    users = [user_id(index) for index in range(options.users)]
    async with contextlib.AsyncExitStack() as stack:
        pid, session = await stack.enter_async_context(http_deployment(home / "http", options.server_env))
        sys.stderr.write(f"  {options.users} users over HTTP (one server)\n")
        clients = [await stack.enter_async_context(session(user)) for user in users]
        await clients[0].wait_ready(timeout=120)
        http_stats = FlowStats()
        wall = await run_flows(clients, docs, options.questions, http_stats)
        http_memory = tree_memory(pid)

        sys.stderr.write(f"  {options.stdio_users} users over stdio (one server each)\n")
        stdio_clients, stdio_memory, stdio_stats = await stdio_users(stack, home / "stdio", docs, options)

        sys.stderr.write("  per-call overhead, HTTP vs stdio\n")
        latencies = await call_latencies(clients[0], stdio_clients[0], options.calls)

        sys.stderr.write(f"  {options.users} users asking at once\n")
        floor, burst, burst_errors, before, after = await one_at_a_time_and_all_at_once(clients, docs)
        http_memory_after = tree_memory(pid)
    report(results, options, http_stats, wall, http_memory, http_memory_after, stdio_memory, stdio_stats)
    report_calls(results, latencies)
    name = f"{options.users} users querying at once (HTTP)"
    record(results, name, "ms", burst, "no errors, p95 reported, no missed ping", floor)
    results[name].update(
        errors=burst_errors,
        pings_missed=after.get("pings_missed", 0) - before.get("pings_missed", 0),
        restarts=after.get("restarts", 0) - before.get("restarts", 0),
        ping_rtt_max_ms=after.get("ping_rtt_max_ms"),
    )


async def stdio_users(
    stack: contextlib.AsyncExitStack, home: Path, docs: list[BenchDoc], options: Options
) -> tuple[list[Client], list[dict[str, float]], FlowStats]:
    """K stdio servers started the LibreChat way (all kept up, as LibreChat keeps them), each
    after one user's flow: their clients, process-tree memory, flow stats."""
    home.mkdir(parents=True, exist_ok=True)
    count = min(options.stdio_users, len(docs))
    clients: list[Client] = []
    for index in range(count):
        env = {**PRODUCTION_SUPERVISION, **options.server_env, "LIGHTRAG_MCP_USER_ID": user_id(index)}
        clients.append(await stack.enter_async_context(running_server(home, **env)))
    stats = FlowStats()
    await run_flows(clients, docs, options.questions, stats)
    memory = []
    for client in clients:
        health = await client.wait_ready(timeout=120)
        memory.append(tree_memory(int(health["components"]["front"]["pid"])))
    return clients, memory, stats


def report(
    results: Results,
    options: Options,
    http_stats: FlowStats,
    wall: float,
    http_memory: dict[str, float],
    http_memory_after: dict[str, float],
    stdio_memory: list[dict[str, float]],
    stdio_stats: FlowStats,
) -> None:
    per_user = [entry["total"] for entry in stdio_memory]
    projected = [value * options.users for value in per_user]
    name = f"server RSS after {options.users} users (HTTP: front + worker + helpers)"
    record(results, name, "MB", [http_memory["total"]], f"< 1200 MB; floor = stdio per-user tree × {options.users}", projected)
    results[name].update(
        breakdown_mb=http_memory,
        after_concurrent_queries_mb=http_memory_after,
        stdio_per_user_mb=stdio_memory,
    )
    record(results, "stdio: RSS of one user's server (front + worker + helpers)", "MB", per_user, "≈ 665 MB (issue 15)")
    results["stdio: RSS of one user's server (front + worker + helpers)"][f"x{options.users}_mb"] = round(
        sum(per_user) / max(1, len(per_user)) * options.users, 1
    )
    name = f"{options.users} users: upload (2-page PDF) → processed, HTTP"
    record(results, name, "s", http_stats.upload_s, "—", stdio_stats.upload_s)
    results[name].update(flow_wall_s=round(wall, 2), errors=http_stats.errors, error_samples=http_stats.error_samples)
    name = f"{options.users} users × {options.questions} questions, HTTP (stdio floor)"
    record(results, name, "ms", http_stats.query_ms, "—", stdio_stats.query_ms)
    results[name].update(
        accuracy=round(http_stats.found / max(1, http_stats.asked_own), 3),
        leaks=f"{http_stats.leaks}/{http_stats.asked_other}",
        stdio_accuracy=round(stdio_stats.found / max(1, stdio_stats.asked_own), 3),
        stdio_errors=stdio_stats.errors,
    )


def report_calls(results: Results, latencies: dict[str, tuple[list[float], list[float]]]) -> None:
    http, stdio = latencies["health"]
    record(results, f"per call over HTTP vs stdio: {HEALTH_TOOL}", "ms", http, "HTTP overhead (p50) vs stdio", stdio)
    http, stdio = latencies["query"]
    record(results, f"per call over HTTP vs stdio: small {QUERY_TOOL}", "ms", http, "HTTP overhead (p50) vs stdio", stdio)


def summary(results: Results, options: Options) -> str:
    """The issue's three figures in three lines, beside today's stdio figure."""
    memory = results[f"server RSS after {options.users} users (HTTP: front + worker + helpers)"]
    stdio = results["stdio: RSS of one user's server (front + worker + helpers)"]
    burst = results[f"{options.users} users querying at once (HTTP)"]
    lines = [
        f"memory: one HTTP server for {options.users} users {memory['median']:.0f} MB RSS "
        f"(PSS {memory['breakdown_mb']['pss_total']:.0f} MB); stdio {stdio.get('median', 0):.0f} MB per user "
        f"≈ {stdio[f'x{options.users}_mb'] / 1024:.1f} GB for {options.users} users",
    ]
    for tool in (HEALTH_TOOL, f"small {QUERY_TOOL}"):
        entry = results[f"per call over HTTP vs stdio: {tool}"]
        lines.append(f"per call ({tool}): HTTP p50 {entry.get('median')} ms, stdio p50 {entry.get('floor', {}).get('median')} ms")
    lines.append(
        f"{options.users} concurrent queries: errors {burst.get('errors')}, p50 {burst.get('median')} ms, "
        f"p95 {burst.get('p95')} ms (one at a time p50 {burst.get('floor', {}).get('median')} ms), "
        f"pings missed {burst.get('pings_missed')}"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Options()
    parser.add_argument("--users", type=int, default=defaults.users, help=f"users over HTTP (default {defaults.users})")
    parser.add_argument("--questions", type=int, default=defaults.questions, help="questions per user (default 5)")
    parser.add_argument("--stdio-users", type=int, default=defaults.stdio_users, help="stdio servers, one per user (default 3)")
    parser.add_argument("--calls", type=int, default=defaults.calls, help="per-call overhead samples (default 300)")
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="NAME=VALUE",
        help="a setting for every server started, e.g. LIGHTRAG_MCP_MAX_OPEN_WORKSPACES=64 (repeatable)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.server_env)
    options = Options(max(1, args.users), max(1, args.questions), max(1, args.stdio_users), max(1, args.calls), extra)
    machine = machine_info()
    results: Results = {}

    async def run() -> None:
        with tempfile.TemporaryDirectory(prefix="lightrag-bench-multiuser-") as tmp:
            await bench_multiuser(results, Path(tmp), options)

    asyncio.run(run())
    sys.stdout.write(markdown(results, machine) + "\n\n" + summary(results, options) + "\n")
    if args.json:
        args.json.write_bytes(orjson.dumps({"machine": machine, "results": results}, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
