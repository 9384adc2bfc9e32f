#!/usr/bin/env python3
"""Shared knowledge bases (issue 29): one shared handbook against a private copy per user.

    .venv/bin/python scripts/bench_shared.py                       # 10 users, 5-document handbook, 3 readers
    .venv/bin/python scripts/bench_shared.py --users 50 --handbook 100 --readers 5

- Memory and query time (one HTTP server, the team deployment; a gateway token names each user,
  X-User-Role carries the admin's role).  *shared*: an admin uploads the handbook once into the
  shared knowledge base; every user uploads one document of their own and asks questions about
  the handbook without `workspace` (it is searched by default).  *private copies*: every user
  uploads the handbook and their document into their own knowledge base and asks the same.
  Printed: indexing time, RSS of the server's process tree, query p50/p95, answers holding the
  handbook fact.
- Freshness (stdio, the LibreChat way: one process per user on one data directory): readers
  that have the handbook open; a writer process uploads a new document, then deletes it; the
  seconds from the writer's acknowledgement until every reader's answer shows (or no longer
  shows) it.
Nothing is asserted: the numbers are printed with their floor (the private copies; one reader).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_multiuser import answer_text, tree_memory  # noqa: E402
from scripts.bench_report import percentile  # noqa: E402
from scripts.bench_support import PRODUCTION_SUPERVISION, machine_info  # noqa: E402
from scripts.corpus import BenchDoc, bench_documents  # noqa: E402
from tests.integration.harness import Client, running_server  # noqa: E402
from tests.integration.http_harness import http_server, mcp_client  # noqa: E402

SHARED = json.dumps({"handbook": {"read": ["*"], "write": ["role:ADMIN"], "search_by_default": True}})
SEEN_TIMEOUT_S = 120.0


def upload(doc: BenchDoc, **extra: Any) -> dict[str, Any]:
    return {"filename": doc.name, "content": base64.b64encode(doc.pdf).decode(), **extra}


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {answer_text(result)[:300]}")
    return result


async def team(home: Path, mode: str, users: int, handbook: list[BenchDoc], own: list[BenchDoc], questions: int) -> dict[str, Any]:
    """One HTTP server, `users` users, the handbook shared or copied: indexing s, RSS, query times."""
    token = secrets.token_urlsafe(32)
    env = {
        **PRODUCTION_SUPERVISION,
        "LIGHTRAG_MCP_HTTP_TOKENS": f"gateway:bench:{hashlib.sha256(token.encode()).hexdigest()}",
        "LIGHTRAG_MCP_HTTP_ROLE_HEADER": "X-User-Role",
        "LIGHTRAG_MCP_SHARED_KBS": SHARED,
        "LIGHTRAG_MCP_MAX_OPEN_WORKSPACES": str(users + 8),
    }

    def headers(user: str, role: str = "USER") -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "X-User-Id": user, "X-User-Role": role}

    times: list[float] = []
    found = asked = 0
    home.mkdir(parents=True, exist_ok=True)
    with http_server(home, **env) as server:
        started = time.perf_counter()
        if mode == "shared":
            async with mcp_client(server.url, headers("admin", "ADMIN")) as admin:
                for doc in handbook:
                    await ok(admin, "upload_to_lightrag", upload(doc, workspace="handbook"))
        for index in range(users):
            async with mcp_client(server.url, headers(f"user-{index:03d}")) as client:
                for doc in ([] if mode == "shared" else handbook) + [own[index]]:
                    await ok(client, "upload_to_lightrag", upload(doc))
        indexing = time.perf_counter() - started
        for round_ in range(questions):
            for index in range(users):
                doc = handbook[(index + round_) % len(handbook)]
                async with mcp_client(server.url, headers(f"user-{index:03d}")) as client:
                    began = time.perf_counter()
                    result = await ok(client, "lightrag_query", {"query": doc.question, "mode": "mix"})
                    times.append(time.perf_counter() - began)
                    asked += 1
                    found += doc.answer in answer_text(result)
        memory = tree_memory(server.process.pid)
    ordered = sorted(times)
    return {
        "mode": mode,
        "indexing_s": round(indexing, 1),
        "rss_mb": memory["total"],
        "pss_mb": memory["pss_total"],
        "query_p50_ms": round(percentile(ordered, 0.5) * 1000, 1),
        "query_p95_ms": round(percentile(ordered, 0.95) * 1000, 1),
        "answers_with_fact": f"{found}/{asked}",
    }


async def until(reader: Client, question: str, answer: str, present: bool) -> float:
    """perf_counter() when `reader`'s answer first does (or no longer does) hold `answer`."""
    with anyio.fail_after(SEEN_TIMEOUT_S):
        while True:
            result = await ok(reader, "lightrag_query", {"query": question, "mode": "mix", "workspace": "handbook"})
            if (answer in answer_text(result)) == present:
                return time.perf_counter()
            await anyio.sleep(0.1)


async def freshness(home: Path, readers: int, handbook: list[BenchDoc], new: BenchDoc) -> dict[str, Any]:
    """Writer and reader processes on one data directory: seconds until every reader sees a write."""
    home.mkdir(parents=True, exist_ok=True)
    data = str(home / "data")

    def env(user: str, role: str = "USER") -> dict[str, str]:
        return {**PRODUCTION_SUPERVISION, "LIGHTRAG_MCP_USER_ID": user, "LIGHTRAG_MCP_USER_ROLE": role,
                "LIGHTRAG_MCP_SHARED_KBS": SHARED, "WORKING_DIR": data}  # fmt: skip

    seen: dict[str, list[float]] = {"upload": [], "delete": []}
    async with running_server(home, **env("editor", "ADMIN")) as writer:
        await writer.wait_ready()
        for doc in handbook:
            await ok(writer, "upload_to_lightrag", upload(doc, workspace="handbook"))
        async with anyio.create_task_group() as tg:
            clients: list[Client] = []

            async def reader(index: int, opened: anyio.Event, done: anyio.Event) -> None:
                async with running_server(home, **env(f"reader-{index}")) as client:
                    await client.wait_ready()
                    await ok(client, "lightrag_query", {"query": handbook[0].question, "mode": "mix"})
                    clients.append(client)
                    opened.set()
                    await done.wait()

            done = anyio.Event()
            for index in range(readers):
                opened = anyio.Event()
                tg.start_soon(reader, index, opened, done)
                await opened.wait()
            stored = await ok(writer, "upload_to_lightrag", upload(new, workspace="handbook"))
            acknowledged = time.perf_counter()
            for client in clients:
                seen["upload"].append(await until(client, new.question, new.answer, True) - acknowledged)
            document = stored.structured_content["document_id"]
            await ok(writer, "lightrag_delete_documents", {"document_ids": [document], "workspace": "handbook"})
            acknowledged = time.perf_counter()
            for client in clients:
                seen["delete"].append(await until(client, new.question, new.answer, False) - acknowledged)
            done.set()
    return {f"{what}_seen_by_all_s": round(max(values), 2) for what, values in seen.items()} | {"readers": readers}


async def main_async(options: argparse.Namespace) -> None:
    docs = bench_documents(options.handbook + options.users + 1, seed=29)
    handbook, own, new = docs[: options.handbook], docs[options.handbook : -1], docs[-1]
    print(f"machine: {json.dumps(machine_info())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
        for mode in [mode for mode in ("shared", "private") if mode in options.only]:
            row = await team(Path(tmp) / mode, mode, options.users, handbook, own, options.questions)
            print(json.dumps({"users": options.users, "handbook_documents": options.handbook, **row}), flush=True)
        if "freshness" in options.only:
            row = await freshness(Path(tmp) / "fresh", options.readers, handbook, new)
            print(json.dumps({"freshness": row, "floor": "CHECK_S 1.0 s + reload"}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--handbook", type=int, default=5, help="handbook documents")
    parser.add_argument("--questions", type=int, default=3, help="questions per user")
    parser.add_argument("--readers", type=int, default=3, help="reader processes in the freshness run")
    parser.add_argument("--only", default="shared,private,freshness", help="comma list of parts to run")
    options = parser.parse_args()
    options.only = set(options.only.split(","))
    anyio.run(main_async, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
