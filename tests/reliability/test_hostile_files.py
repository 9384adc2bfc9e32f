"""Hostile files, paths and knowledge-base names against the real server (issue 24, worker side).

One server, one attack after another, each a row of the reliability report (suite `hostile`):
attempts, refused, accepted (the server did what the attacker wanted: read a non-regular file,
decoded a page flood, created a knowledge base by reading, named a server folder, or answered a
path with the wrong code), whether the server was still up, and the largest front and worker
RSS seen while it ran.  A job naming FIFOs is saved before the server starts, as an earlier
worker would have left it.  Targets: 0 accepted, the server up, another user's small upload
processed while the hostile files are handled.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from rag_worker.operations.jobs import Job, JobItem, JobStore
from tests.fixtures.documents import make_pdf
from tests.fixtures.hostile_files import FIFOS, make_page_flood_tiff, non_regular_files
from tests.integration.harness import Client, running_server
from tests.reliability import recorder

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

NOTE = "# Note\n\nThe MARLIN-4 buoy was moored by Esra Kaya.\n"
@pytest.fixture
def allowed(tmp_path: Path) -> Iterator[Path]:
    with non_regular_files(tmp_path / "allowed") as folder:
        yield folder


class Attack:
    """Counts of one attack and the largest RSS of both processes while it ran."""

    def __init__(self, client: Client, health: dict[str, Any]) -> None:
        self.client = client
        self.pids = {part: int(health["components"][part]["pid"]) for part in ("front", "worker")}
        self.attempts = self.refused = self.accepted = self.failed_calls = 0
        self.rss = {part: 0.0 for part in self.pids}
        self.notes: list[str] = []

    def sample(self) -> None:
        for part, pid in self.pids.items():
            try:
                self.rss[part] = max(self.rss[part], psutil.Process(pid).memory_info().rss / 2**20)
            except psutil.Error:
                pass

    def judge(self, refused: bool, why: str = "") -> None:
        """One hostile attempt: refused as it should be, or accepted (`why` says how)."""
        self.attempts += 1
        if refused:
            self.refused += 1
        else:
            self.accepted += 1
            self.notes.append(why)

    def breach(self, why: str) -> None:
        """The attacks together achieved something none of the answers showed (a directory made)."""
        self.accepted += 1
        self.notes.append(why)

    def bystander(self, served: bool, why: str) -> None:
        """Another user's ordinary call made meanwhile: it must get its normal answer."""
        self.failed_calls += int(not served)
        if not served:
            self.notes.append(why)


@asynccontextmanager
async def attack(client: Client, case: str) -> AsyncIterator[Attack]:
    """Run one attack while sampling RSS; record its row with whether the server is still up after it."""
    before = await client.wait_ready()
    counts = Attack(client, before)
    async with anyio.create_task_group() as tg:

        async def sample() -> None:
            while True:
                counts.sample()
                await anyio.sleep(0.2)

        tg.start_soon(sample)
        yield counts
        tg.cancel_scope.cancel()
    after = await client.health()
    up = after["status"] in {"healthy", "degraded"} and after["components"]["worker"]["pid"] == counts.pids["worker"]
    recorder.record(
        "hostile",
        case,
        attempts=counts.attempts,
        refused=counts.refused,
        accepted=counts.accepted,
        server_up=up,
        inputs_tried=counts.attempts,
        calls_answered=counts.attempts,
        failed_calls=counts.failed_calls,
        worker_restarts_from_input=0 if up else 1,
        max_rss_front_mb=round(counts.rss["front"], 1),
        max_rss_worker_mb=round(counts.rss["worker"], 1),
    )
    assert up, after
    assert counts.accepted == 0 and counts.failed_calls == 0, counts.notes


def code_of(result: Any) -> str | None:
    return (result.structured_content or {}).get("error_code") if result.is_error else None


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content) + repr(result.structured_content)


def upload(name: str, data: bytes) -> dict[str, Any]:
    return {"filename": name, "content": base64.b64encode(data).decode()}


async def job_results(client: Client, batch_id: str) -> list[dict[str, Any]]:
    with anyio.fail_after(120):
        while True:
            view = (await client.call("lightrag_get_status", {"batch_id": batch_id})).structured_content or {}
            if view.get("status") in {"completed", "failed", "cancelled"}:
                return list(view["results"])
            await anyio.sleep(0.5)


async def concurrently(*calls: Callable[[], Awaitable[Any]]) -> list[Any]:
    answers: list[Any] = [None] * len(calls)

    async def run(index: int) -> None:
        answers[index] = await calls[index]()

    async with anyio.create_task_group() as tg:
        for index in range(len(calls)):
            tg.start_soon(run, index)
    return answers


async def test_hostile_files_paths_and_names_are_refused_and_counted(home: Path, allowed: Path) -> None:
    saved = Job.new("batch", "default", {"max_concurrent": 5}, [], [
        JobItem(number, "file", f"pipe-{number}.md") for number in range(FIFOS)
    ])
    saved.status = "processing"  # what a worker that blocked on its first FIFO left behind
    JobStore(home / ".local" / "share" / "lightrag-mcp" / "default").save(saved)
    secret_paths = [str(allowed), str(home)]
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(allowed), LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES="3") as client:
        async with attack(client, "saved job naming FIFOs, resumed by a new worker") as counts:
            for item in await job_results(client, saved.id):
                counts.judge(item.get("error_code") == "UNSUPPORTED_FORMAT", str(item))

        async with attack(client, "FIFO, device, socket, link to /dev/zero by path") as counts:
            for name in ["pipe-0.md", "zero.md", "sock.md", "dev-zero.md"]:
                result = await client.call("lightrag_insert_file", {"file_path": name})
                counts.judge(code_of(result) in {"UNSUPPORTED_FORMAT", "FORBIDDEN"}, f"{name}: {text_of(result)[:200]}")

        async with attack(client, f"batch of {FIFOS} FIFOs + another user's 50-byte upload") as counts:
            items = [{"item_type": "file", "content": f"pipe-{number}.md"} for number in range(FIFOS)]
            batch, small = await concurrently(
                lambda: client.call_as("mallory", "lightrag_batch_process", {"items": items, "batch_options": {"max_concurrent": 10}}),
                lambda: client.call_as("bob", "upload_to_lightrag", upload("note.md", NOTE.encode())),
            )
            results = (batch.structured_content or {}).get("results") or []
            for item in results:
                counts.judge(item.get("error_code") == "UNSUPPORTED_FORMAT", str(item))
            counts.bystander(small.structured_content.get("status") == "processed", f"the other upload: {text_of(small)[:300]}")

        async with attack(client, "two 100,000-page TIFFs + another user's 50-byte upload") as counts:
            flood = upload("fax.tiff", make_page_flood_tiff(100_000))
            first, second, small = await concurrently(
                lambda: client.call_as("mallory", "upload_to_lightrag", flood),
                lambda: client.call_as("mallory", "upload_to_lightrag", flood),
                lambda: client.call_as("bob", "upload_to_lightrag", upload("note-2.md", NOTE.encode() + b"Second.\n")),
            )
            for result in (first, second):
                counts.judge(code_of(result) == "FILE_TOO_LARGE", text_of(result)[:300])
            counts.bystander(small.structured_content.get("status") == "processed", f"the other upload: {text_of(small)[:300]}")

        async with attack(client, "PDF whose page tree declares 900,000 pages") as counts:
            lying = make_pdf(["First page.", "Second page."]).replace(b"/Count 2", b"/Count 900000")
            result = await client.call("upload_to_lightrag", upload("lying.pdf", lying))
            counts.judge(code_of(result) == "FILE_TOO_LARGE", text_of(result)[:300])

        async with attack(client, "read-only calls naming 30 new knowledge bases") as counts:
            tools = [("lightrag_list_documents", {}), ("lightrag_query", {"query": "x"}), ("lightrag_get_graph", {})]
            for number in range(30):
                tool, arguments = tools[number % len(tools)]
                result = await client.call_as("mallory", tool, {**arguments, "workspace": f"rnd-{number}"})
                counts.judge(code_of(result) == "INVALID_PARAMETER", f"{tool}: {text_of(result)[:200]}")
            created = [path for path in home.rglob("*__kb_*") if path.is_dir()]
            if created:
                counts.breach(f"{len(created)} knowledge bases created by reading")

        async with attack(client, "writing calls past 3 knowledge bases per user") as counts:
            for number in range(6):
                arguments = {"text": f"Note {number}.", "workspace": f"kb-{number}"}
                result = await client.call_as("mallory", "lightrag_insert_text", arguments)
                counts.judge((code_of(result) == "QUOTA_EXCEEDED") == (number >= 3), text_of(result)[:200])

        async with attack(client, "over-long, outside and missing paths (codes, no server path)") as counts:
            for path, code in [
                ("a/" * 2048, "INVALID_PARAMETER"),
                ("x" * 4096, "INVALID_PARAMETER"),
                ("n" * 300 + ".md", "INVALID_PARAMETER"),
                ("/etc/ld.so.conf", "FORBIDDEN"),
                ("../../../../etc/passwd", "FORBIDDEN"),
                ("missing.md", "FILE_NOT_FOUND"),
            ]:
                result = await client.call("lightrag_insert_file", {"file_path": path})
                text = text_of(result).replace(path[:60], "")  # the client's own path may be echoed
                leaked = [secret for secret in secret_paths if secret in text]
                counts.judge(code_of(result) == code and not leaked, f"{path[:30]}: {code_of(result)} {leaked}")
