#!/usr/bin/env python3
"""Shared knowledge bases (issue 29): one shared handbook against a private copy per user.

    .venv/bin/python scripts/bench_shared.py                     # the issue's run: 50 users, 100-document handbook
    .venv/bin/python scripts/bench_shared.py --users 4 --handbook 6 --copies 2 --stdio 3   # a smoke run

Documents are this machine's own (scripts/machine_docs.py): the handbook is package READMEs from
/usr/share/doc, each user's own documents are manual pages rendered to text; each holds one
planted fact and its question, so an answer is checked.

- *shared, HTTP* (the team deployment, one worker for all): an admin (role header) uploads the
  handbook once into the shared knowledge base; each user uploads `--own` documents of their
  own; every user asks about the handbook and about their own documents without `workspace`.
- *private copies, HTTP*: `--copies` users (not all of them: every copy is `--handbook`
  indexings) upload the handbook and their own documents into their own knowledge base and ask
  the same.  Per copy: indexing seconds, disk, RSS growth of the server; extrapolated linearly
  to `--users` copies and printed as such.
- *stdio* (LibreChat's one process per user, on the shared run's data directory): user
  processes are started one by one, each asking its questions, until `--stdio` are up or the
  machine's used memory passes MEMORY_CEILING_GIB; RSS of every process tree, its growth per
  user, extrapolated to `--users`.  Then a writer process uploads a new handbook document and
  deletes it: seconds from its acknowledgement until every reader process's answer shows (or no
  longer shows) it.  The private-copy side over stdio: one process per private copy's user, on
  the private run's data directory, its RSS growth per user extrapolated the same way.
Nothing is asserted: the numbers are printed beside their floor (the private copies; the
readers' check interval).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_multiuser import answer_text, tree_memory  # noqa: E402
from scripts.bench_report import percentile  # noqa: E402
from scripts.bench_support import PRODUCTION_SUPERVISION, engine_processes, machine_info, pss_mb  # noqa: E402
from scripts.machine_docs import MachineDoc, handbook, private_documents  # noqa: E402
from tests.integration.harness import Client, running_server  # noqa: E402
from tests.integration.http_harness import http_server, mcp_client  # noqa: E402

SHARED = json.dumps({"handbook": {"read": ["*"], "write": ["role:ADMIN"], "search_by_default": True}})
SEEN_TIMEOUT_S = 120.0
MEMORY_CEILING_GIB = 18.0  # no more stdio processes once the machine uses this much
UPLOADS_AT_ONCE = 3
READER_CHECK_S = 1.0  # rag_worker.storage.shared_readers.CHECK_S: the floor of a reader's delay


def upload(doc: MachineDoc, **extra: Any) -> dict[str, Any]:
    return {"filename": doc.name, "content": base64.b64encode(doc.content).decode(), "mimeType": "text/plain", **extra}


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {answer_text(result)[:300]}")
    return result


def user(index: int) -> str:
    return f"user-{index:03d}"


def used_gib() -> float:
    memory = psutil.virtual_memory()
    return (memory.total - memory.available) / 2**30


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def times_ms(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"query_p50_ms": round(percentile(ordered, 0.5) * 1000, 1), "query_p95_ms": round(percentile(ordered, 0.95) * 1000, 1)}


class Questions:
    """Query times and how many answers held their planted fact."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.first: list[float] = []  # a process's first question (stdio), not in `times`
        self.found = {"handbook": [0, 0], "own": [0, 0]}

    async def ask(self, client: Client, doc: MachineDoc, kind: str, **extra: Any) -> None:
        began = time.perf_counter()
        result = await ok(client, "lightrag_query", {"query": doc.question, "mode": "mix", **extra})
        self.times.append(time.perf_counter() - began)
        self.found[kind][0] += doc.fact in answer_text(result)
        self.found[kind][1] += 1

    def row(self) -> dict[str, Any]:
        facts = {f"{kind}_facts_found": f"{hit}/{asked}" for kind, (hit, asked) in self.found.items() if asked}
        first = {"first_query_p50_ms": times_ms(self.first)["query_p50_ms"]} if self.first else {}
        return {**times_ms(self.times), "queries": len(self.times), **facts, **first}


async def each(items: list[Any], work: Callable[[Any], Awaitable[None]], at_once: int = UPLOADS_AT_ONCE) -> float:
    """Run `work` on every item, `at_once` at a time; the wall seconds."""
    limiter = anyio.CapacityLimiter(at_once)
    started = time.perf_counter()

    async def one(item: Any) -> None:
        async with limiter:
            await work(item)

    async with anyio.create_task_group() as tg:
        for item in items:
            tg.start_soon(one, item)
    return time.perf_counter() - started


async def team(home: Path, mode: str, users: int, book: list[MachineDoc], own: list[list[MachineDoc]], rounds: int) -> dict[str, Any]:
    """One HTTP server and `users` users with the handbook shared (or copied into each user's own
    knowledge base): indexing seconds, process-tree memory, disk, query times, facts found."""
    token = secrets.token_urlsafe(32)
    env = {
        **PRODUCTION_SUPERVISION,
        "LIGHTRAG_MCP_HTTP_TOKENS": f"gateway:bench:{hashlib.sha256(token.encode()).hexdigest()}",
        "LIGHTRAG_MCP_HTTP_ROLE_HEADER": "X-User-Role",
        "LIGHTRAG_MCP_SHARED_KBS": SHARED,
        "LIGHTRAG_MCP_MAX_OPEN_WORKSPACES": str(users + 8),
    }

    def session(name: str, role: str = "USER") -> Any:
        return mcp_client(server.url, {"Authorization": f"Bearer {token}", "X-User-Id": name, "X-User-Role": role})

    async def store(item: tuple[str, MachineDoc, dict[str, Any]]) -> None:
        name, doc, extra = item
        async with session(name, "ADMIN") as client:
            result = await ok(client, "upload_to_lightrag", upload(doc, **extra))
            if result.structured_content.get("status") != "processed":
                raise RuntimeError(f"{doc.name}: {result.structured_content.get('status')}")

    row: dict[str, Any] = {"mode": mode, "users": users, "handbook_documents": len(book)}
    questions = Questions()
    home.mkdir(parents=True, exist_ok=True)
    with http_server(home, **env) as server:
        async with session("nobody") as client:
            await ok(client, "lightrag_health_check", {})
        row["rss_started_mb"] = tree_memory(server.process.pid)["total"]
        if mode == "shared":
            row["handbook_indexing_s"] = round(await each([("admin", doc, {"workspace": "handbook"}) for doc in book], store), 1)
        else:  # every user's own copy, one user after the other: the time and memory of one copy is what scales
            row["handbook_indexing_s_per_copy"], row["rss_after_copy_mb"] = [], []
            for index in range(users):
                row["handbook_indexing_s_per_copy"].append(round(await each([(user(index), doc, {}) for doc in book], store), 1))
                async with session(user(index)) as client:
                    await ok(client, "lightrag_query", {"query": book[index].question, "mode": "mix"})
                row["rss_after_copy_mb"].append(tree_memory(server.process.pid)["total"])
        mine = [(user(index), doc, {}) for index in range(users) for doc in own[index]]
        row["own_indexing_s"] = round(await each(mine, store), 1)
        for round_ in range(rounds):
            for index in range(users):
                async with session(user(index)) as client:
                    await questions.ask(client, book[(index * rounds + round_) % len(book)], "handbook")
                    await questions.ask(client, own[index][round_ % len(own[index])], "own")
        memory = tree_memory(server.process.pid)
    row.update({f"rss_{part}_mb": memory[part] for part in ("front", "worker", "helpers", "total")})
    row["pss_total_mb"] = memory["pss_total"]
    row["disk_mb"] = disk_mb(server.data_dir)
    return row | questions.row()


def stdio_env(data: Path, name: str, role: str = "USER") -> dict[str, str]:
    return {**PRODUCTION_SUPERVISION, "LIGHTRAG_MCP_USER_ID": name, "LIGHTRAG_MCP_USER_ROLE": role,
            "LIGHTRAG_MCP_SHARED_KBS": SHARED, "WORKING_DIR": str(data)}  # fmt: skip


async def stdio_processes(
    stack: contextlib.AsyncExitStack, home: Path, data: Path, wanted: int,
    book: list[MachineDoc], own: list[list[MachineDoc]], rounds: int,
) -> tuple[list[Client], list[dict[str, Any]], Questions]:
    """Up to `wanted` user processes on `data`, started one by one until the memory ceiling;
    after each start, the total RSS of all of them (each after its first questions)."""
    clients: list[Client] = []
    fronts: list[int] = []
    curve: list[dict[str, Any]] = []
    questions = Questions()
    step_gib = 0.0  # what the last process added: the next one must fit under the ceiling too
    for index in range(wanted):
        if used_gib() + step_gib > MEMORY_CEILING_GIB:
            print(f"stdio: stopped at {index} processes, machine uses {used_gib():.1f} GiB", file=sys.stderr, flush=True)
            break
        before = used_gib()
        client = await stack.enter_async_context(running_server(home, **stdio_env(data, user(index))))
        health = await client.wait_ready(timeout=300)
        fronts.append(int(health["components"]["front"]["pid"]))
        clients.append(client)
        began = time.perf_counter()  # the process's first question opens its knowledge bases: timed apart
        await ok(client, "lightrag_query", {"query": book[index % len(book)].question, "mode": "mix"})
        questions.first.append(time.perf_counter() - began)
        for round_ in range(rounds):
            await questions.ask(client, book[(index * rounds + round_) % len(book)], "handbook")
            await questions.ask(client, own[index][round_ % len(own[index])], "own")
        trees = [tree_memory(pid) for pid in fronts]
        engine_pss = pss_mb(engine_processes(data))  # one for every process of the data directory (0 on the files)
        curve.append({"processes": index + 1, "rss_total_mb": round(sum(t["total"] for t in trees), 1),
                      "pss_total_mb": round(sum(t["pss_total"] for t in trees), 1), "engine_pss_mb": engine_pss,
                      "machine_used_gib": round(used_gib(), 1)})
        step_gib = max(step_gib, used_gib() - before)
    return clients, curve, questions


def growth(curve: list[dict[str, Any]], users: int, key: str = "rss_total_mb") -> dict[str, Any]:
    """MB per added user process (the curve's least-squares slope) and the line at `users`."""
    return line([row["processes"] for row in curve], [row[key] for row in curve], users)


def line(xs: list[int], ys: list[float], users: int) -> dict[str, Any]:
    """The least-squares slope of ys over xs (MB per user) and its value at `users`."""
    if len(xs) < 2:
        return {"per_user_mb": ys[0] if ys else None, f"extrapolated_to_{users}_mb": round(ys[0] * users, 1) if ys else None}
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    return {"per_user_mb": round(slope, 1), f"extrapolated_to_{users}_mb": round(mean_y + slope * (users - mean_x), 1)}


async def until(reader: Client, doc: MachineDoc, present: bool, first: list[float]) -> float:
    """perf_counter() when the reader's answer first does (or no longer does) hold `doc`'s fact;
    when its first question after the write already does, that question's seconds go to `first`
    (it includes loading the writer's commit)."""
    asked = 0
    with anyio.fail_after(SEEN_TIMEOUT_S):
        while True:
            began = time.perf_counter()
            result = await ok(reader, "lightrag_query", {"query": doc.question, "mode": "mix", "workspace": "handbook"})
            asked += 1
            if (doc.fact in answer_text(result)) == present:
                if asked == 1:
                    first.append(time.perf_counter() - began)
                return time.perf_counter()
            await anyio.sleep(0.1)


async def freshness(home: Path, data: Path, readers: list[Client], new: MachineDoc) -> dict[str, Any]:
    """A writer process beside the readers: seconds until every reader sees its upload, its delete
    (the readers asked one after another), and how many saw it at their first question after it."""
    seen: dict[str, list[float]] = {"upload": [], "delete": []}
    first: dict[str, list[float]] = {"upload": [], "delete": []}
    async with running_server(home, **stdio_env(data, "editor", "ADMIN")) as writer:
        await writer.wait_ready(timeout=300)
        stored = await ok(writer, "upload_to_lightrag", upload(new, workspace="handbook"))
        acknowledged = time.perf_counter()
        for client in readers:
            seen["upload"].append(await until(client, new, True, first["upload"]) - acknowledged)
        document = stored.structured_content["document_id"]
        await ok(writer, "lightrag_delete_documents", {"document_ids": [document], "workspace": "handbook"})
        acknowledged = time.perf_counter()
        for client in readers:
            seen["delete"].append(await until(client, new, False, first["delete"]) - acknowledged)
    return {"readers": len(readers)} | {
        f"{what}_seen_by_all_s": round(max(values), 2) for what, values in seen.items()
    } | {f"{what}_seen_p50_s": round(percentile(sorted(values), 0.5), 2) for what, values in seen.items()} | {
        f"{what}_seen_at_first_question": f"{len(values)}/{len(readers)}" for what, values in first.items()
    } | {f"{what}_first_question_p50_s": round(percentile(sorted(v), 0.5), 2) for what, v in first.items() if v}


def emit(label: str, row: dict[str, Any]) -> None:
    print(json.dumps({"part": label, **row}), flush=True)


async def stdio_part(home: Path, options: argparse.Namespace, book: list[MachineDoc], own: list[list[MachineDoc]], new: MachineDoc) -> None:
    data = home / ".local" / "share" / "lightrag-mcp"
    async with contextlib.AsyncExitStack() as stack:
        clients, curve, questions = await stdio_processes(stack, home, data, options.stdio, book, own, options.questions)
        for row in curve:
            emit("stdio shared: RSS as user processes start", row)
        engine = growth(curve, options.extrapolate, key="engine_pss_mb")
        emit("stdio shared", {"processes": len(clients), **questions.row(), **growth(curve, options.extrapolate),
                              "pss": growth(curve, options.extrapolate, key="pss_total_mb"),
                              "engine_pss_mb": curve[-1]["engine_pss_mb"] if curve else None,
                              "engine_pss_per_user_mb": engine["per_user_mb"],
                              "extrapolated": f"linear in processes, from {len(curve)} measured"})
        if "freshness" in options.only:
            emit("freshness", {**await freshness(home, data, clients, new), "floor_s": READER_CHECK_S})


async def main_async(options: argparse.Namespace) -> None:
    book, new = handbook(options.handbook + 1)[: options.handbook], handbook(options.handbook + 1)[-1]
    mine = private_documents(options.users * options.own)
    own = [mine[index * options.own : (index + 1) * options.own] for index in range(options.users)]
    print(f"machine: {json.dumps(machine_info())}", flush=True)
    print(json.dumps({"handbook_chars_mean": round(sum(len(d.text) for d in book) / len(book)),
                      "own_chars_mean": round(sum(len(d.text) for d in mine) / len(mine))}), flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
        if "shared" in options.only:
            emit("http shared", await team(Path(tmp) / "shared", "shared", options.users, book, own, options.questions))
        if "stdio" in options.only:
            await stdio_part(Path(tmp) / "shared", options, book, own, new)
        if "private" in options.only:
            row = await team(Path(tmp) / "private", "private", options.copies, book, own, options.questions)
            to = options.extrapolate
            emit("http private copies", row)
            emit("http private copies, extrapolated", {
                "measured_copies": options.copies, "rss_after_each_copy": line(list(range(1, options.copies + 1)), row["rss_after_copy_mb"], to),
                f"handbook_indexing_{to}_copies_s": round(sum(row["handbook_indexing_s_per_copy"]) / options.copies * to),
                f"disk_{to}_copies_mb": round(row["disk_mb"] / options.copies * to, 1),
                "extrapolated": "linear in copies"})  # fmt: skip
            if "stdio" in options.only:
                await stdio_private(Path(tmp) / "private", options, book, own)


async def stdio_private(home: Path, options: argparse.Namespace, book: list[MachineDoc], own: list[list[MachineDoc]]) -> None:
    """One stdio process per private copy's user: RSS per process with the handbook copy open."""
    data = home / ".local" / "share" / "lightrag-mcp"
    async with contextlib.AsyncExitStack() as stack:
        _, curve, questions = await stdio_processes(stack, home, data, options.copies, book, own, options.questions)
    for row in curve:
        emit("stdio private copies: RSS as user processes start", row)
    emit("stdio private copies", {"processes": len(curve), **questions.row(), **growth(curve, options.extrapolate),
                                  "extrapolated": f"linear in processes, from {len(curve)} measured"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--handbook", type=int, default=100, help="handbook documents")
    parser.add_argument("--own", type=int, default=2, help="documents of each user's own")
    parser.add_argument("--questions", type=int, default=2, help="rounds of questions (one on the handbook, one on their own)")
    parser.add_argument("--copies", type=int, default=3, help="private copies of the handbook measured")
    parser.add_argument("--stdio", type=int, default=50, help="stdio user processes at most")
    parser.add_argument("--extrapolate", type=int, default=50, help="users the measured growth is extrapolated to")
    parser.add_argument("--only", default="shared,stdio,freshness,private", help="comma list of parts to run")
    options = parser.parse_args()
    options.only = set(options.only.split(","))
    anyio.run(main_async, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
