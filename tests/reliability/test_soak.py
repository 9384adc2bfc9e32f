"""Soak (issue 8): many mixed calls from concurrent tasks against one real server whose worker
is recycled every LIGHTRAG_MCP_MAX_REQUESTS calls, measuring what leaks.

Two users (userId beside the call, as patched LibreChat sends it) each have a small corpus;
the tasks mix health, status, queries (naive/local/mix/hybrid and query_lightrag), document
listings, entity searches, small graph reads, small text inserts and occasional deletes.

Checked: no call fails — the graceful recycles included — and none hangs; no result names
another user's file; every document acknowledged is still listed processed at the end and
every acknowledged delete stays deleted; the worker never crashes (restarts 0) and was
recycled; growth stays within loose bounds (SOAK_BOUNDS): RSS of the front, RSS of the last
worker at the end against the first worker after warm-up, the front's open file
descriptors, open LightRAG workspaces. The numbers are recorded (suite "soak").

Default size: 10,000 calls (measured at about 95 calls/s with 4 tasks on 2 shared cores:
under 2 minutes plus start-up); LIGHTRAG_MCP_RELIABILITY_LONG=1 runs 50,000;
LIGHTRAG_MCP_SOAK_CALLS overrides both.
"""

from __future__ import annotations

import base64
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import psutil
import pytest

from tests.integration.harness import Client, running_server
from tests.reliability.recorder import LONG, record

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

CALLS = int(os.environ.get("LIGHTRAG_MCP_SOAK_CALLS") or (50_000 if LONG else 10_000))
MAX_REQUESTS = int(os.environ.get("LIGHTRAG_MCP_SOAK_MAX_REQUESTS") or 2_000)
TASKS = 4
WARM_UP_CALLS = 300
SEED = int(os.environ.get("LIGHTRAG_MCP_RELIABILITY_SEED") or random.SystemRandom().randrange(2**31))
CALL_GUARD_SECONDS = 120.0
SOAK_GUARD_SECONDS = 3_600.0  # the whole soak: a hang fails the test instead of stalling CI
USERS = {"soak-ann": "ann", "soak-bob": "bob"}  # user id -> file name prefix of their documents
# Loose bounds: growth beyond these would be a leak worth a look, not noise.
SOAK_BOUNDS = {"front_rss_mb": 40.0, "worker_rss_mb": 200.0, "front_fds": 8, "workspaces_open": len(USERS)}
# Per kind of call: weight in the mix.
MIX = {
    "health": 10,
    "status": 8,
    "query_naive": 14,
    "query_local": 10,
    "query_mix": 5,
    "query_simple": 8,
    "list_documents": 10,
    "search_entities": 10,
    "get_graph": 8,
    "relationships": 4,
    "insert_text": 3,
    "delete": 1,
}
_CODES = "amber basalt cobalt dune ember fjord garnet harbor indigo jasper kelp lagoon".split()


@dataclass
class UserCorpus:
    user: str
    prefix: str
    documents: dict[str, str] = field(default_factory=dict)  # document id -> file name (acknowledged)
    deletable: list[str] = field(default_factory=list)  # inserted document ids, free to delete
    deleted: set[str] = field(default_factory=set)  # file names whose delete was acknowledged
    codes: list[str] = field(default_factory=list)  # entity names in this corpus
    inserted: int = 0


@dataclass
class Soak:
    client: Client
    rnd: random.Random
    corpora: dict[str, UserCorpus]
    answered: int = 0
    unanswered: int = 0
    failed: Counter[str] = field(default_factory=Counter)  # "kind: CODE"
    leaks: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    done: int = 0

    async def call(self, user: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        try:
            with anyio.fail_after(CALL_GUARD_SECONDS):
                result = await self.client.call_as(user, name, arguments)
        except TimeoutError:
            self.unanswered += 1
            return None
        self.answered += 1
        return result

    def check(self, kind: str, corpus: UserCorpus, result: types.CallToolResult | None) -> dict[str, Any] | None:
        """Count a failure or a file of another user in the result; the data when it succeeded."""
        if result is None:
            self.failed[f"{kind}: unanswered"] += 1
            return None
        data = result.structured_content or {}
        if result.is_error:
            self.failed[f"{kind}: {data.get('error_code', 'MCP_ERROR')}"] += 1
            return None
        for name in file_names(data):
            if not name.startswith(corpus.prefix + "-"):
                self.leaks.append(f"{kind} for {corpus.user} named {name!r}")
        return data

    async def one_call(self) -> None:
        kind = self.rnd.choices(list(MIX), weights=list(MIX.values()))[0]
        corpus = self.rnd.choice(list(self.corpora.values()))
        code = self.rnd.choice(corpus.codes)
        if kind == "delete" and not corpus.deletable:
            kind = "insert_text"  # nothing of this user's to delete: every drawn call is a real call
        self.kinds[kind] += 1
        arguments: dict[str, Any]
        if kind == "health":
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_health_check", {}))
        elif kind == "status":
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_get_status", {}))
        elif kind.startswith("query_") and kind != "query_simple":
            arguments = {"query": f"Who maintains the {code} station?", "mode": kind.removeprefix("query_")}
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_query", arguments))
        elif kind == "query_simple":
            arguments = {"query": f"{code} station", "max_results": 3}
            self.check(kind, corpus, await self.call(corpus.user, "query_lightrag", arguments))
        elif kind == "list_documents":
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_list_documents", {"limit": 20}))
        elif kind == "search_entities":
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_search_entities", {"query": code}))
        elif kind == "get_graph":
            arguments = {"max_nodes": 20, "max_edges": 40}
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_get_graph", arguments))
        elif kind == "relationships":
            arguments = {"entity_id": f"{code.upper()}-{corpus.prefix.upper()}", "limit": 10}
            self.check(kind, corpus, await self.call(corpus.user, "lightrag_get_entity_relationships", arguments))
        elif kind == "insert_text":
            await self.insert(corpus)
        elif kind == "delete":
            await self.delete(corpus)

    async def insert(self, corpus: UserCorpus) -> None:
        corpus.inserted += 1
        title = f"{corpus.prefix}-note-{corpus.inserted:04d}"
        code = self.rnd.choice(_CODES)
        text = f"Note {corpus.inserted}: the {code} station log was checked by {corpus.prefix.title()} Quill."
        data = self.check(
            "insert_text", corpus, await self.call(corpus.user, "lightrag_insert_text", {"text": text, "title": title})
        )
        if data is None:
            return
        if data.get("status") in ("processed", "pending", "processing") and data.get("document_id"):
            corpus.documents[data["document_id"]] = str(data.get("filename") or title)
            corpus.deletable.append(data["document_id"])
        elif data.get("action") != "already_indexed":
            self.failed[f"insert_text: status {data.get('status')}"] += 1

    async def delete(self, corpus: UserCorpus) -> None:
        document_id = corpus.deletable.pop(self.rnd.randrange(len(corpus.deletable)))
        arguments = {"document_ids": [document_id]}
        data = self.check("delete", corpus, await self.call(corpus.user, "lightrag_delete_documents", arguments))
        if data is None:
            corpus.deletable.append(document_id)
        elif document_id in data.get("deleted_documents", []):
            corpus.deleted.add(corpus.documents.pop(document_id))
        else:
            self.failed[f"delete: not deleted ({data.get('failed_deletions')})"] += 1
            corpus.deletable.append(document_id)


def file_names(data: Any) -> list[str]:
    """Every "filename" value anywhere in a result."""
    found: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "filename" and isinstance(value, str):
                    found.append(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return found


def corpus_markdown(corpus: UserCorpus, number: int, code: str) -> str:
    entity = f"{code.upper()}-{corpus.prefix.upper()}"
    return (
        f"# {entity} station\n\nThe {code} station {entity} is maintained by {corpus.prefix.title()} Ortega "
        f"in Lisbon. {entity} records tides every hour, and {corpus.prefix.title()} Ortega reports to Harbor "
        f"Control.\n\nDocument {number} of the {corpus.prefix} corpus.\n"
    )


# ---------------------------------------------------------------------------- measurements
@dataclass
class Sampler:
    """RSS and descriptors of the front and of each worker generation, sampled every second."""

    front: psutil.Process
    worker_peak_mb: dict[int, float] = field(default_factory=dict)  # worker pid -> peak RSS seen
    worker_order: list[int] = field(default_factory=list)

    def worker(self) -> psutil.Process | None:
        children = [child for child in self.front.children() if child.status() != psutil.STATUS_ZOMBIE]
        return children[0] if children else None

    def sample(self) -> None:
        try:
            worker = self.worker()
            if worker is not None:
                rss = worker.memory_info().rss / 2**20
                if worker.pid not in self.worker_peak_mb:
                    self.worker_order.append(worker.pid)
                self.worker_peak_mb[worker.pid] = max(self.worker_peak_mb.get(worker.pid, 0.0), rss)
        except psutil.Error:
            pass  # a worker being swapped

    async def run(self) -> None:
        while True:
            self.sample()
            await anyio.sleep(1.0)


def rss_mb(process: psutil.Process) -> float:
    return float(process.memory_info().rss / 2**20)


async def ready_worker(client: Client) -> psutil.Process:
    return psutil.Process(await client.worker_pid())


# ------------------------------------------------------------------------------------ test
async def test_soak_of_mixed_calls_with_recycling(home: Path) -> None:
    rnd = random.Random(SEED)
    env = {
        "LIGHTRAG_MCP_MAX_REQUESTS": str(MAX_REQUESTS),
        # A loaded shared machine can stall a process for seconds; the soak is about leaks and
        # recycling, so a slow pong must not pass for a hang here (test_faults covers hangs).
        "LIGHTRAG_MCP_PING_TIMEOUT": "10",
    }
    async with running_server(home, None, None, **env) as client:
        health = await client.wait_ready()
        front = psutil.Process(int(health["components"]["front"]["pid"]))
        corpora = {user: UserCorpus(user, prefix) for user, prefix in USERS.items()}
        soak = Soak(client, rnd, corpora)
        for corpus in corpora.values():
            for number, code in enumerate(rnd.sample(_CODES, 4)):
                name = f"{corpus.prefix}-station-{number}.md"
                content = base64.b64encode(corpus_markdown(corpus, number, code).encode()).decode()
                arguments = {"filename": name, "content": content, "mimeType": "text/markdown"}
                result = await client.call_as(corpus.user, "upload_to_lightrag", arguments)
                assert not result.is_error and result.structured_content, result.content
                assert result.structured_content["status"] == "processed", result.content
                corpus.documents[result.structured_content["document_id"]] = name
                corpus.codes.append(code)

        sampler = Sampler(front)
        baseline: dict[str, Any] = {}
        started = time.monotonic()

        async def worker_task() -> None:
            while soak.done < CALLS:
                soak.done += 1
                await soak.one_call()
                if soak.done == WARM_UP_CALLS and not baseline:
                    process = await ready_worker(client)
                    baseline.update(
                        front_rss=rss_mb(front),
                        front_fds=front.num_fds(),
                        worker_pid=process.pid,
                        worker_rss=rss_mb(process),
                        worker_fds=process.num_fds(),
                    )

        with anyio.fail_after(SOAK_GUARD_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sampler.run)
                async with anyio.create_task_group() as workers:
                    for _ in range(TASKS):
                        workers.start_soon(worker_task)
                tg.cancel_scope.cancel()
        elapsed = time.monotonic() - started

        # The end state: same measurements on the (possibly recycled) worker.
        health = await client.wait_ready()
        last = await ready_worker(client)
        worker_state = health["components"]["worker"]
        # As a user: health reports how many knowledge bases the worker holds open (a count, not
        # whose), and a detailed check opens the caller's own, which is already open here.
        detailed = await client.call_as(next(iter(USERS)), "lightrag_health_check", {"include_detailed": True})
        workspaces = int(((detailed.structured_content or {}).get("worker_details") or {})["workspaces_open"])
        end = {
            "front_rss": rss_mb(front),
            "front_fds": front.num_fds(),
            "worker_pid": last.pid,
            "worker_rss": rss_mb(last),
            "worker_fds": last.num_fds(),
        }

        # Nothing acknowledged is lost, nothing deleted comes back.
        lost: list[str] = []
        for corpus in corpora.values():
            result = await client.call_as(corpus.user, "lightrag_list_documents", {"limit": 200})
            data = soak.check("final_listing", corpus, result) or {}
            listed = {item["filename"]: item["status"] for item in data.get("documents", [])}
            assert data.get("pagination", {}).get("has_next") is False, "more than 200 documents: page the check"
            lost += [
                f"{corpus.user}: {name} {listed.get(name, 'missing')}"
                for name in corpus.documents.values()
                if listed.get(name) != "processed"
            ]
            lost += [f"{corpus.user}: deleted {name} is listed again" for name in corpus.deleted if name in listed]

    growth = {
        "front_rss_mb": round(end["front_rss"] - baseline["front_rss"], 1),
        "worker_rss_mb": round(end["worker_rss"] - baseline["worker_rss"], 1),
        "front_fds": end["front_fds"] - baseline["front_fds"],
        "worker_fds": end["worker_fds"] - baseline["worker_fds"],
    }
    failed_calls = sum(soak.failed.values())
    record(
        "soak",
        "mixed_calls",
        seed=SEED,
        inputs_tried=CALLS,
        calls_answered=soak.answered,
        calls_unanswered=soak.unanswered,
        failed_calls=failed_calls,
        failures=dict(soak.failed),
        cross_user_leaks=len(soak.leaks),
        documents_acknowledged=sum(len(corpus.documents) for corpus in corpora.values()),
        documents_deleted=sum(len(corpus.deleted) for corpus in corpora.values()),
        documents_lost=len(lost),
        rss_growth_mb=max(growth["front_rss_mb"], growth["worker_rss_mb"]),
        rss_growth_front_mb=growth["front_rss_mb"],
        rss_growth_worker_mb=growth["worker_rss_mb"],
        fd_growth=growth["front_fds"],
        worker_fd_growth=growth["worker_fds"],
        baseline=baseline,
        end=end,
        worker_peaks_mb=[round(sampler.worker_peak_mb[pid], 1) for pid in sampler.worker_order],
        restarts=worker_state["restarts"],
        recycles=worker_state["recycles"],
        workspaces_open=workspaces,
        max_requests=MAX_REQUESTS,
        tasks=TASKS,
        duration_s=round(elapsed, 1),
        calls_per_s=round(CALLS / elapsed, 1),
        kinds=dict(soak.kinds),
        leaks=soak.leaks[:20],
        lost=lost[:20],
    )
    assert failed_calls == 0 and soak.unanswered == 0, dict(soak.failed)
    assert not soak.leaks, soak.leaks[:20]
    assert not lost, lost
    assert worker_state["restarts"] == 0, worker_state["last_failure"]
    if CALLS >= 2 * MAX_REQUESTS:
        assert worker_state["recycles"] >= 1 and len(sampler.worker_order) >= 2, worker_state
    assert growth["front_rss_mb"] < SOAK_BOUNDS["front_rss_mb"], growth
    assert growth["worker_rss_mb"] < SOAK_BOUNDS["worker_rss_mb"], growth
    assert growth["front_fds"] <= SOAK_BOUNDS["front_fds"], growth
    assert workspaces <= SOAK_BOUNDS["workspaces_open"], workspaces
