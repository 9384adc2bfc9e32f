"""Fault injection with counts (issue 8): N runs of each fault against a real server, each
at a random moment while real calls run, and what the server did about it.

Faults: SIGKILL of the worker during an upload, a query, a delete and a graphml export;
SIGSTOP of the worker (a hang); the worker's protocol output closed while it lives on
(the `close_stdout` debug action); the data directory's disk full (a 64 MB tmpfs, filled
before and during uploads); the LLM endpoint stopped and slow (the local fake server).

After every fault: the call that was in flight answers with its code (WORKER_RESTARTED for
a dead or hung worker; success when it finished first), no call hangs, the worker is
replaced (recovery = fault -> health ready with a new pid), no document stays
pending/processing (lightrag_get_status polled, bounded), and every document acknowledged
before the fault is still listed as processed and found by a query. Each run is recorded
(suite "faults") for scripts/reliability_report.py.

N = 3 runs per fault (LIGHTRAG_MCP_RELIABILITY_LONG=1: 10). The random moments come from
LIGHTRAG_MCP_RELIABILITY_SEED when set (the seed used is recorded), else a fresh seed.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
import psutil
import pytest

from tests.fakes.openai_server import FakeLLMServer
from tests.fixtures.documents import large_pdf_page_text, make_pdf
from tests.integration.harness import Client, process_gone, running_server
from tests.reliability.recorder import LONG, record

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

RUNS = 10 if LONG else 3
SEED = int(os.environ.get("LIGHTRAG_MCP_RELIABILITY_SEED") or random.SystemRandom().randrange(2**31))
SETTLE_SECONDS = 120.0  # a document still pending/processing after this counts as stuck
CALL_GUARD_SECONDS = 180.0  # a call not answered within this counts as unanswered (a hang)
RECOVERY_LIMIT_SECONDS = 120.0
UNFINISHED = ("pending", "parsing", "analyzing", "processing", "preprocessed")
BEING_DELETED = "Being deleted in the background"  # the listing's message while a delete runs
DELETE_SETTLE_S = 120.0  # a delete cut short by a fault is finished in the background within this
# Restarts are what we inject here: keep the circuit closed, it has its own test.
BASE_ENV = {"LIGHTRAG_MCP_DEBUG_METHODS": "1", "LIGHTRAG_MCP_MAX_RESTARTS": "1000"}
DEAD_WORKER = {"WORKER_RESTARTED"}  # what the call in flight gets when its worker dies or hangs

_SYLLABLES = "zor vak quim bel tras nok pel dry wen fax lum gor hib sut rax mol cen yup".split()
_PEOPLE = ["Tamsin Okoro", "Ilse Varga", "Rohan Mehta", "Ana Sousa", "Kofi Mensah", "Mei Tanaka", "Lars Berg"]
_CITIES = ["Tromso", "Valparaiso", "Kigali", "Hobart", "Tartu", "Oaxaca", "Nagpur", "Bergen"]


# ----------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Doc:
    filename: str
    code: str  # a made-up word only this document contains
    person: str

    @property
    def question(self) -> str:
        return f"Who assembled the {self.code} probe?"


@dataclass
class Ledger:
    """What the server has acknowledged, so what must survive a fault."""

    rnd: random.Random
    acknowledged: dict[str, Doc] = field(default_factory=dict)  # filename -> doc (answered processed)
    ids: dict[str, str] = field(default_factory=dict)  # filename -> document id
    deletable: list[Doc] = field(default_factory=list)  # acknowledged, reserved for delete runs
    deleted: set[str] = field(default_factory=set)  # filenames whose delete was acknowledged
    uncertain_uploads: list[Doc] = field(default_factory=list)  # upload in flight at a fault
    uncertain_deletes: list[Doc] = field(default_factory=list)  # delete in flight at a fault
    counter: int = 0

    def new_doc(self, suffix: str = "pdf") -> Doc:
        self.counter += 1
        code = "".join(self.rnd.choice(_SYLLABLES) for _ in range(3)).upper() + f"-{self.counter:03d}"
        return Doc(f"probe-{self.counter:03d}-{code.lower()}.{suffix}", code, self.rnd.choice(_PEOPLE))

    def acknowledge(self, doc: Doc, document_id: str | None) -> None:
        self.acknowledged[doc.filename] = doc
        if document_id:
            self.ids[doc.filename] = document_id


def fact_paragraph(doc: Doc, city: str) -> str:
    """A paragraph about the document's probe, long enough to dominate the chunk it lands in."""
    return (
        f"The {doc.code} probe was assembled by {doc.person} in {city}. {doc.person} assembled the "
        f"{doc.code} probe over three winters. The {doc.code} probe carries a spectrometer built in {city}. "
        f"Engineers in {city} still service the {doc.code} probe, which {doc.person} designed. "
        f"Every {doc.code} probe part was assembled by hand in {city}."
    )


def pdf_bytes(doc: Doc, rnd: random.Random) -> bytes:
    """Three pages: filler, the fact paragraph with filler, filler."""
    pages = ["\n".join(large_pdf_page_text(rnd, number)[:18]) for number in range(3)]
    pages[1] = fact_paragraph(doc, rnd.choice(_CITIES)) + "\n" + "\n".join(large_pdf_page_text(rnd, 1)[:8])
    return make_pdf(pages, title=doc.code)


def markdown_text(doc: Doc) -> str:
    return f"# {doc.code}\n\n{fact_paragraph(doc, 'Tromso')}\n"


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


# -------------------------------------------------------------------------------- tallies
@dataclass
class Tally:
    """One fault run's numbers."""

    answered: int = 0
    unanswered: int = 0
    wrong: list[str] = field(default_factory=list)  # "tool: CODE" answered with a code not allowed here
    outcomes: Counter[str] = field(default_factory=Counter)  # what the call in flight got
    lost: list[str] = field(default_factory=list)
    stuck: int = 0
    recovery_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def code_of(result: types.CallToolResult) -> str:
    if not result.is_error:
        return "ok"
    data = result.structured_content or {}
    return str(data.get("error_code") or "MCP_ERROR")


async def guarded(client: Client, tally: Tally, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
    """The call, or None (counted unanswered) when it hangs past CALL_GUARD_SECONDS."""
    try:
        with anyio.fail_after(CALL_GUARD_SECONDS):
            result = await client.call(name, arguments)
    except TimeoutError:
        tally.unanswered += 1
        tally.notes.append(f"{name} was not answered within {CALL_GUARD_SECONDS:g}s")
        return None
    tally.answered += 1
    return result


# ------------------------------------------------------------------------------- the bench
@dataclass
class Bench:
    """One real server and what it acknowledged."""

    client: Client
    ledger: Ledger
    rnd: random.Random
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # filename -> upload arguments
    failed_uploads: list[Doc] = field(default_factory=list)  # interrupted uploads that ended failed

    async def upload_pdf(self, tally: Tally) -> str:
        doc = self.ledger.new_doc()
        arguments = {"filename": doc.filename, "content": b64(pdf_bytes(doc, self.rnd)), "mimeType": "application/pdf"}
        self.payloads[doc.filename] = arguments
        self.ledger.uncertain_uploads.append(doc)
        return await self.send_upload(tally, doc)

    async def send_upload(self, tally: Tally, doc: Doc) -> str:
        result = await guarded(self.client, tally, "upload_to_lightrag", self.payloads[doc.filename])
        if result is None:
            return "unanswered"
        code = code_of(result)
        data = result.structured_content or {}
        if code == "ok" and data.get("status") in ("processed", *UNFINISHED):
            # Processed, or queued with a track id: acknowledged either way, so never to be lost.
            if doc in self.ledger.uncertain_uploads:
                self.ledger.uncertain_uploads.remove(doc)
            self.ledger.acknowledge(doc, data.get("document_id"))
        elif code == "ok":
            code = f"ok:{data.get('status')}"  # e.g. ok:failed, with the reason in the listing
        return code

    async def upload_small(self, tally: Tally) -> Doc:
        """A small Markdown document that must be acknowledged now (set-up, not under a fault)."""
        doc = self.ledger.new_doc("md")
        arguments = {"filename": doc.filename, "content": b64(markdown_text(doc)), "mimeType": "text/markdown"}
        result = await guarded(self.client, tally, "upload_to_lightrag", arguments)
        assert result is not None and not result.is_error, result and result.content
        assert result.structured_content and result.structured_content["status"] == "processed", result.content
        self.ledger.acknowledge(doc, result.structured_content["document_id"])
        return doc

    async def query(self, tally: Tally) -> str:
        doc = self.rnd.choice(list(self.ledger.acknowledged.values()))
        mode = self.rnd.choice(["naive", "local", "hybrid", "mix"])
        result = await guarded(self.client, tally, "lightrag_query", {"query": doc.question, "mode": mode})
        return "unanswered" if result is None else code_of(result)

    async def export_graph(self, tally: Tally) -> str:
        arguments = {"output_format": "graphml", "max_nodes": 1000, "max_edges": 2000}
        result = await guarded(self.client, tally, "lightrag_get_graph", arguments)
        if result is not None and not result.is_error:
            assert "<graphml" in str((result.structured_content or {}).get("export", "")), "graphml export"
        return "unanswered" if result is None else code_of(result)

    async def delete_one(self, tally: Tally) -> str:
        if not self.ledger.deletable:
            return "idle"
        doc = self.ledger.deletable.pop()
        self.ledger.uncertain_deletes.append(doc)
        document_id = self.ledger.ids[doc.filename]
        result = await guarded(self.client, tally, "lightrag_delete_documents", {"document_ids": [document_id]})
        if result is None:
            return "unanswered"
        code = code_of(result)
        data = result.structured_content or {}
        if code == "ok" and document_id in data.get("deleted_documents", []):
            self.ledger.uncertain_deletes.remove(doc)
            self.ledger.acknowledged.pop(doc.filename)
            self.ledger.deleted.add(doc.filename)
        elif code == "ok":
            code = "ok:not_deleted"
        return code

    async def worker_pid(self) -> int:
        return await self.client.worker_pid()

    async def recover(self, tally: Tally, old_pid: int, fault_at: float) -> int:
        """Wait for a ready worker with a new pid; records fault -> ready."""
        health = await self.client.wait_ready(timeout=RECOVERY_LIMIT_SECONDS, not_pid=old_pid)
        tally.recovery_s.append(round(time.monotonic() - fault_at, 3))
        return int(health["components"]["worker"]["pid"])

    async def settle(self, tally: Tally) -> dict[str, int]:
        """Poll the workspace's counts until nothing is pending/processing (bounded)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        counts: dict[str, int] = {}
        while True:
            result = await guarded(self.client, tally, "lightrag_get_status", {})
            if result is not None and not result.is_error:
                counts = {key: int(value) for key, value in (result.structured_content or {})["counts"].items()}
                if not sum(counts.get(state, 0) for state in UNFINISHED):
                    return counts
            if time.monotonic() > deadline:
                tally.stuck += sum(counts.get(state, 0) for state in UNFINISHED)
                tally.notes.append(f"still unfinished after {SETTLE_SECONDS:g}s: {counts}")
                return counts
            await anyio.sleep(0.5)

    async def listing(self, tally: Tally) -> dict[str, dict[str, Any]]:
        """Every listed document by filename, once no delete runs in the background (a delete the
        fault cut short is finished after the restart; the listing's message names it until then)."""
        documents: dict[str, dict[str, Any]] = {}
        offset = 0
        settles_by = time.monotonic() + DELETE_SETTLE_S
        while True:
            result = await guarded(self.client, tally, "lightrag_list_documents", {"limit": 200, "offset": offset})
            assert result is not None and not result.is_error, result and result.content
            data = result.structured_content or {}
            if BEING_DELETED in data["message"] and time.monotonic() < settles_by:
                await anyio.sleep(0.5)
                documents, offset = {}, 0
                continue
            for item in data["documents"]:
                documents[item["filename"]] = item
            if not data["pagination"]["has_next"]:
                return documents
            offset += 200

    async def findable(self, tally: Tally, doc: Doc) -> bool:
        """A query finds a passage of `doc` holding its code, by vectors (naive) or through the
        graph (local: the code is an entity). The widest chunk_top_k: this checks that the
        document's chunks and vectors are there, not how well MiniLM ranks them."""
        for mode in ("naive", "local"):
            arguments = {"query": doc.question, "mode": mode, "chunk_top_k": 100}
            result = await guarded(self.client, tally, "lightrag_query", arguments)
            if result is None or result.is_error:
                continue
            sources = (result.structured_content or {}).get("sources") or []
            if any(s.get("filename") == doc.filename and doc.code in str(s.get("content")) for s in sources):
                return True
        return False

    async def verify(self, tally: Tally) -> None:
        """Every acknowledged document present, processed and found; deleted ones gone;
        documents whose upload or delete was in flight in a consistent state."""
        listed = await self.listing(tally)
        for doc in list(self.ledger.uncertain_uploads):
            self.ledger.uncertain_uploads.remove(doc)
            item = listed.get(doc.filename)
            state = item["status"] if item else "absent"
            tally.notes.append(f"upload in flight at the fault: {state}")
            if state == "processed":
                self.ledger.acknowledge(doc, item["id"] if item else None)  # now it must survive later faults
            elif state == "failed":
                tally.notes.append(f"the interrupted upload ended failed: {item and item.get('error_message')}")
                self.failed_uploads.append(doc)
        for doc in list(self.ledger.uncertain_deletes):
            self.ledger.uncertain_deletes.remove(doc)
            if doc.filename in listed:
                tally.notes.append("delete in flight at the fault: document kept")
            else:
                tally.notes.append("delete in flight at the fault: document gone")
                self.ledger.acknowledged.pop(doc.filename, None)
                self.ledger.deleted.add(doc.filename)
        for name in sorted(self.ledger.deleted & set(listed)):
            tally.lost.append(f"{name}: deleted (acknowledged) but listed again")
        for doc in self.ledger.acknowledged.values():
            item = listed.get(doc.filename)
            if item is None:
                tally.lost.append(f"{doc.filename}: missing from the listing")
            elif item["status"] != "processed":
                tally.lost.append(f"{doc.filename}: {item['status']} ({item.get('error_message')})")
            elif not await self.findable(tally, doc):
                tally.lost.append(f"{doc.filename}: listed as processed but a query does not find it")


# ------------------------------------------------------------------------------ fault runs
Fault = Callable[[anyio.abc.TaskGroup], None]


@contextlib.asynccontextmanager
async def bench_server(home: Path, seed_offset: int, base_pdfs: int = 2, **env: str) -> AsyncIterator[Bench]:
    """A real server with `base_pdfs` acknowledged PDFs."""
    rnd = random.Random(SEED + seed_offset)
    async with running_server(home, None, None, **{**BASE_ENV, **env}) as client:
        bench = Bench(client, Ledger(rnd), rnd)
        await client.wait_ready()
        setup = Tally()
        for _ in range(base_pdfs):
            outcome = await bench.upload_pdf(setup)
            assert outcome == "ok", outcome
        yield bench


async def run_with_fault(tally: Tally, op: Callable[[Tally], Awaitable[str]], fault: Fault, delay: float) -> float:
    """Run `op` back to back; after `delay` seconds inject `fault`; returns when the call that was
    in flight has answered (its outcome goes to tally.outcomes). Returns the fault's time."""
    fired = anyio.Event()

    async def loop() -> None:
        while True:
            outcome = await op(tally)
            if fired.is_set():
                tally.outcomes[outcome] += 1
                return
            if outcome == "idle":  # nothing left to do: the fault hits an idle worker
                await fired.wait()
                tally.outcomes[outcome] += 1
                return
            if outcome != "ok":
                tally.wrong.append(f"before the fault: {outcome}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(loop)
        await anyio.sleep(delay)
        fault_at = time.monotonic()
        fault(tg)
        fired.set()
    return fault_at


def finish_run(case: str, run: int, bench: Bench, tally: Tally, allowed: set[str], problems: list[str]) -> None:
    """Check the in-flight outcomes against `allowed`, record the run, collect problems."""
    for outcome, count in tally.outcomes.items():
        if outcome not in allowed | {"ok", "idle"}:
            tally.wrong.extend([f"in flight: {outcome}"] * count)
    record(
        "faults",
        case,
        run=run,
        seed=SEED,
        faults_injected=1,
        calls_answered=tally.answered,
        calls_unanswered=tally.unanswered,
        documents_acknowledged=len(bench.ledger.acknowledged),
        documents_lost=len(tally.lost),
        documents_stuck=tally.stuck,
        recovery_s=tally.recovery_s,
        failed_calls=len(tally.wrong),
        in_flight=dict(tally.outcomes),
        wrong=tally.wrong[:20],
        lost=tally.lost[:20],
        notes=tally.notes[:20],
    )
    label = f"{case} run {run} (seed {SEED})"
    problems += [f"{label}: {item}" for item in tally.wrong]
    problems += [f"{label}: lost {item}" for item in tally.lost]
    if tally.stuck:
        problems.append(f"{label}: {tally.stuck} document(s) stuck: {tally.notes}")
    if tally.unanswered:
        problems.append(f"{label}: {tally.unanswered} call(s) unanswered")


def kill_worker(pid: int, tally: Tally) -> Fault:
    return lambda tg: os.kill(pid, signal.SIGKILL)


def stop_worker(pid: int, tally: Tally) -> Fault:
    return lambda tg: os.kill(pid, signal.SIGSTOP)


def reap(pid: int, created: float) -> None:
    """Leave no stopped worker behind (the supervisor normally SIGKILLs it); `created` makes
    sure the pid is still that worker and not a process that reused the number."""
    try:
        process = psutil.Process(pid)
        if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass


# Seconds after the start of back-to-back calls within which the fault lands (uniformly).
KILL_WINDOWS = {"upload": 3.0, "query": 1.0, "delete": 0.8, "graph_export": 1.0}
DELETES_PER_RUN = 6


def operation(bench: Bench, name: str) -> Callable[[Tally], Awaitable[str]]:
    return {
        "upload": bench.upload_pdf,
        "query": bench.query,
        "delete": bench.delete_one,
        "graph_export": bench.export_graph,
    }[name]


# ----------------------------------------------------------------------------------- tests
async def dead_worker_run(
    bench: Bench,
    case: str,
    run: int,
    name: str,
    window: float,
    make_fault: Callable[[int, Tally], Fault],
    problems: list[str],
    *,
    last_failure: str | None = None,
    allowed: set[str] = DEAD_WORKER,
) -> None:
    """One run: `name` calls back to back, the fault at a random moment within `window` seconds,
    then recovery (a new worker pid), settling and the check of every acknowledged document."""
    tally = Tally()
    pid = await bench.worker_pid()
    created = psutil.Process(pid).create_time()
    try:
        delay = bench.rnd.uniform(0.02, window)
        fault_at = await run_with_fault(tally, operation(bench, name), make_fault(pid, tally), delay)
        await bench.recover(tally, pid, fault_at)
    finally:
        reap(pid, created)
    assert process_gone(pid)
    if last_failure is not None:
        health = await bench.client.health()
        assert last_failure in health["components"]["worker"]["last_failure"], health["components"]["worker"]
    await bench.settle(tally)
    await bench.verify(tally)
    finish_run(case, run, bench, tally, allowed, problems)


async def alternating_runs(
    bench: Bench,
    label: str,
    make_fault: Callable[[int, Tally], Fault],
    problems: list[str],
    *,
    last_failure: str,
    allowed: set[str] = DEAD_WORKER,
) -> None:
    """RUNS dead-worker runs, uploads and queries in turn, each hit by the fault."""
    for run in range(RUNS):
        name = "upload" if run % 2 == 0 else "query"
        window = KILL_WINDOWS[name]
        await dead_worker_run(
            bench, f"{label}_{name}", run, name, window, make_fault, problems, last_failure=last_failure, allowed=allowed
        )


@pytest.mark.parametrize("name", list(KILL_WINDOWS))
async def test_sigkill_of_the_worker_during(name: str, home: Path) -> None:
    """SIGKILL at a random moment of back-to-back calls: the call in flight answers
    WORKER_RESTARTED (or finished first), a new worker comes up, nothing acknowledged is lost,
    nothing stays pending/processing (an interrupted upload is resumed or absent)."""
    problems: list[str] = []
    async with bench_server(home, list(KILL_WINDOWS).index(name)) as bench:
        window = KILL_WINDOWS[name]
        if name == "delete":  # deletes are quick: aim the kill inside a run of DELETES_PER_RUN of them
            bench.ledger.deletable = [await bench.upload_small(Tally())]
            started = time.monotonic()
            assert await bench.delete_one(Tally()) == "ok"
            window = max(0.05, 0.8 * DELETES_PER_RUN * (time.monotonic() - started))
        for run in range(RUNS):
            if name == "delete":
                bench.ledger.deletable = [await bench.upload_small(Tally()) for _ in range(DELETES_PER_RUN)]
            await dead_worker_run(bench, f"sigkill_{name}", run, name, window, kill_worker, problems)
    assert not problems, problems


async def test_sigstop_of_the_worker_is_detected_and_replaced(home: Path) -> None:
    """A frozen worker (SIGSTOP) during an upload or a query: the ping misses, the worker is
    killed and replaced, the call in flight answers WORKER_RESTARTED, nothing is lost."""
    problems: list[str] = []
    async with bench_server(home, 10) as bench:
        await alternating_runs(bench, "sigstop", stop_worker, problems, last_failure="did not answer a ping")
    assert not problems, problems


def close_output(bench: Bench) -> Callable[[int, Tally], Fault]:
    """The debug action close_stdout, called beside the calls in flight (it never answers itself)."""

    def make(pid: int, tally: Tally) -> Fault:
        def fault(tg: anyio.abc.TaskGroup) -> None:
            async def call() -> None:
                result = await guarded(bench.client, tally, "lightrag_debug", {"action": "close_stdout"})
                tally.outcomes["close_stdout:" + ("unanswered" if result is None else code_of(result))] += 1

            tg.start_soon(call)

        return fault

    return make


async def test_the_worker_closing_its_output_is_a_dead_worker(home: Path) -> None:
    """The worker's protocol output closes while the process lives on (debug action
    close_stdout): the front reads EOF, kills and replaces it; the calls in flight, the
    close_stdout call included, answer WORKER_RESTARTED."""
    problems: list[str] = []
    async with bench_server(home, 20) as bench:
        await alternating_runs(
            bench,
            "stdout_closed",
            close_output(bench),
            problems,
            last_failure="closed its output",
            allowed=DEAD_WORKER | {"close_stdout:WORKER_RESTARTED"},
        )
    assert not problems, problems


# ------------------------------------------------------------------------------- disk full
DISK_MB = 64
FULL_DISK_CODES = {"STORAGE_ERROR", "PROCESSING_FAILED", "RESOURCE_LIMIT_EXCEEDED"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MB tmpfs for WORKING_DIR (needs root or CAP_SYS_ADMIN); skipped, with the reason
    recorded, where mounting is not permitted."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a {DISK_MB} MB tmpfs: {done.stderr.strip() or done.returncode}"
        record("faults", "disk_full", skipped=reason)
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def fill_disk(directory: Path) -> None:
    """Write zeros until the file system says ENOSPC."""
    chunk = bytes(1 << 20)
    with (directory / "filler.bin").open("ab", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise


async def test_disk_full_on_the_data_directory(home: Path, small_disk: Path) -> None:
    """WORKING_DIR on a 64 MB tmpfs, filled before an upload (run 0) or at a random moment
    during uploads (later runs): uploads answer STORAGE_ERROR ("disk is full") or end failed,
    never hang or INTERNAL_ERROR; queries keep working; in run 0 the worker is also killed
    while the disk is full (it cannot start until there is space); after the space is freed
    a worker is ready, nothing acknowledged is lost, nothing is stuck, uploads work again and
    an upload that failed on the full disk succeeds when sent again."""
    problems: list[str] = []
    async with bench_server(home, 30, WORKING_DIR=str(small_disk)) as bench:
        for run in range(RUNS):
            tally = Tally()
            pid = await bench.worker_pid()
            if run == 0:
                fill_disk(small_disk)
                full = await guarded(
                    bench.client,
                    tally,
                    "upload_to_lightrag",
                    {
                        "filename": "while-full.md",
                        "content": b64("# Full\n\nWritten while the disk is full."),
                        "mimeType": "text/markdown",
                    },
                )
                assert full is not None
                tally.outcomes[f"upload:{code_of(full)}"] += 1
                if full.is_error:
                    data = full.structured_content or {}
                    tally.notes.append(f"upload on a full disk: {data.get('error_code')}: {data.get('error_message')}")
                    assert data["error_code"] == "STORAGE_ERROR" and "disk is full" in data["error_message"], data
            else:
                delay = bench.rnd.uniform(0.05, KILL_WINDOWS["upload"])
                await run_with_fault(tally, bench.upload_pdf, lambda tg: fill_disk(small_disk), delay)
                more = await bench.upload_pdf(tally)
                tally.outcomes[f"upload_while_full:{more}"] += 1
            text = {"text": f"Run {run}: a note written while the disk is full.", "title": f"full-{run}"}
            inserted = await guarded(bench.client, tally, "lightrag_insert_text", text)
            tally.outcomes["insert_while_full:" + ("unanswered" if inserted is None else code_of(inserted))] += 1
            query = await bench.query(tally)
            tally.outcomes[f"query_while_full:{query}"] += 1
            if query != "ok":
                tally.wrong.append(f"a query on a full disk answered {query}")
            if run == 0:
                # A worker that dies while the disk is full cannot start again (its start-up write
                # probe fails) until there is space; then it must come back by itself.
                os.kill(pid, signal.SIGKILL)
                await anyio.sleep(3)
                worker = (await bench.client.health())["components"]["worker"]
                tally.notes.append(
                    f"worker killed on the full disk, 3 s later: {worker['state']}, {worker['restarts']} restart(s), "
                    f"last failure: {worker['last_failure']}"
                )
            (small_disk / "filler.bin").unlink()
            freed_at = time.monotonic()
            health = await bench.client.wait_ready(timeout=RECOVERY_LIMIT_SECONDS, not_pid=pid if run == 0 else None)
            if run and health["components"]["worker"]["pid"] != pid:
                tally.notes.append("the worker was replaced during the disk-full fault")
            await bench.settle(tally)
            await bench.verify(tally)
            again = await bench.upload_pdf(tally)
            tally.recovery_s.append(round(time.monotonic() - freed_at, 3))
            if again != "ok":
                tally.wrong.append(f"an upload after freeing the space answered {again}")
            while bench.failed_uploads:  # the same file again, as a user would retry it
                retried = await bench.send_upload(tally, bench.failed_uploads.pop())
                tally.outcomes[f"retry_failed_upload:{retried}"] += 1
                if retried != "ok":
                    tally.wrong.append(f"retrying an upload that failed on the full disk answered {retried}")
            allowed = (
                {
                    f"{kind}:{code}"
                    for kind in ("upload", "upload_while_full", "insert_while_full")
                    for code in (*FULL_DISK_CODES, "ok", "ok:failed")
                }
                | FULL_DISK_CODES
                | {"ok:failed", "query_while_full:ok", "retry_failed_upload:ok"}
            )
            finish_run("disk_full" if run == 0 else "disk_full_during_upload", run, bench, tally, allowed, problems)
    assert not problems, problems


# ---------------------------------------------------------------------------- LLM outages
LLM_TIMEOUT = 1  # seconds per LLM call; LightRAG gives a call twice that before failing it
LLM_DOWN_CODES = {"PROCESSING_FAILED", "PROCESSING_TIMEOUT", "SERVICE_UNAVAILABLE"}


def llm_env(fake: FakeLLMServer) -> dict[str, str]:
    return {
        "LLM_BINDING": "openai",
        "LLM_MODEL": "fake-chat",
        "LLM_BINDING_HOST": fake.openai_base_url,
        "LLM_BINDING_API_KEY": "sk-reliability",
        "LLM_TIMEOUT": str(LLM_TIMEOUT),
    }


@pytest.fixture
def fake_llm() -> Iterator[dict[str, Any]]:
    """The fake LLM in a box, so a test can stop it and start it again on the same port."""
    box: dict[str, Any] = {"server": FakeLLMServer().start()}
    box["port"] = box["server"].port
    try:
        yield box
    finally:
        if box["server"] is not None:
            box["server"].stop()


async def test_llm_endpoint_down_or_slow(home: Path, fake_llm: dict[str, Any]) -> None:
    """LLM_BINDING=openai against the local fake, stopped (connection refused) or slower than
    LLM_TIMEOUT: an upload ends failed with its reason (not stuck), queries answer a clear code
    (or context), health stays up on the same worker; once the LLM is back the same document
    uploads and processes."""
    problems: list[str] = []
    async with bench_server(home, 40, base_pdfs=0, **llm_env(fake_llm["server"])) as bench:
        await bench.upload_small(Tally())  # through the LLM while it works
        for run in range(RUNS):
            for mode in ("down", "slow"):
                tally = Tally()
                pid = await bench.worker_pid()
                if mode == "down":
                    fake_llm["server"].stop()
                    fake_llm["server"] = None
                else:
                    fake_llm["server"].delay(LLM_TIMEOUT * 3)
                doc = bench.ledger.new_doc("md")
                upload = {"filename": doc.filename, "content": b64(markdown_text(doc)), "mimeType": "text/markdown"}
                result = await guarded(bench.client, tally, "upload_to_lightrag", upload)
                data = (result.structured_content or {}) if result is not None else {}
                outcome = "unanswered" if result is None else code_of(result)
                if outcome == "ok":
                    outcome = f"ok:{data.get('status')}"
                    if data.get("status") == "failed" and not data.get("error"):
                        tally.wrong.append("the failed upload carries no error message")
                tally.outcomes[f"upload:{outcome}"] += 1
                for query_mode in ("naive", "hybrid"):
                    question = next(iter(bench.ledger.acknowledged.values())).question
                    answer = await guarded(
                        bench.client, tally, "lightrag_query", {"query": question, "mode": query_mode}
                    )
                    answered = "unanswered" if answer is None else code_of(answer)
                    if answered == "ok":
                        answered = f"ok:{(answer.structured_content or {}).get('status')}" if answer else answered
                    tally.outcomes[f"query_{query_mode}:{answered}"] += 1
                health = await bench.client.health()
                worker = health["components"]["worker"]
                if worker["pid"] != pid or worker["state"] != "ready" or health["status"] == "unhealthy":
                    tally.wrong.append(f"health with the LLM {mode}: {health['status']}, worker {worker['state']}")
                probed = await bench.client.health(check_dependencies=True)
                llm = probed["components"].get("llm") or {}
                tally.notes.append(f"health check_dependencies with the LLM {mode}: {probed['status']}, llm {llm}")
                if mode == "down" and (probed["status"] != "degraded" or llm.get("status") != "unreachable"):
                    tally.wrong.append(f"health does not show the stopped LLM: {probed['status']}, {llm}")
                await bench.settle(tally)
                listed = await bench.listing(tally)
                item = listed.get(doc.filename)
                tally.notes.append(
                    f"upload with the LLM {mode}: {item and item['status']}: "
                    f"{item and (item.get('error_message') or '')[:200]}"
                )
                if item is not None and item["status"] != "failed":
                    tally.wrong.append(f"the upload with the LLM {mode} ended {item['status']}, not failed")
                restored_at = time.monotonic()
                if mode == "down":
                    fake_llm["server"] = FakeLLMServer(port=fake_llm["port"]).start()
                else:
                    fake_llm["server"].delay(0)
                again = await guarded(bench.client, tally, "upload_to_lightrag", upload)
                status = (again.structured_content or {}).get("status") if again is not None else None
                tally.recovery_s.append(round(time.monotonic() - restored_at, 3))
                if again is None or again.is_error or status != "processed":
                    tally.wrong.append(f"the same upload after the LLM came back: {again and again.content}")
                else:
                    bench.ledger.acknowledge(doc, (again.structured_content or {}).get("document_id"))
                await bench.verify(tally)
                allowed = {f"upload:{code}" for code in (*LLM_DOWN_CODES, "ok:failed")}
                allowed |= {
                    f"query_{m}:{code}"
                    for m in ("naive", "hybrid")
                    for code in (*LLM_DOWN_CODES, "ok:context_only", "ok:answered", "ok:no_results")
                }
                finish_run(f"llm_{mode}", run, bench, tally, allowed, problems)
    assert not problems, problems
