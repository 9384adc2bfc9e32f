"""Hostile files through the real server (issue 24 items 2, 5, 9): FIFOs, devices and sockets in an
allowed folder are refused instead of blocking the worker, even in a job a previous worker saved;
a page-flood TIFF is refused before it is decoded and another user's upload answers normally;
path refusals never name the server's folders."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rag_worker.operations.jobs import Job, JobItem, JobStore
from tests.fixtures.hostile_files import make_page_flood_tiff, non_regular_files
from tests.integration.harness import error_of, running_server
from tests.integration.test_paths_and_batches import wait_job

pytestmark = pytest.mark.anyio

NOTE = "# Note\n\nThe MARLIN-4 buoy was moored by Esra Kaya.\n"


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Path]:
    """data/ (allowed) holding FIFOs, a device, a socket, a symlink to /dev/zero, and one ordinary note."""
    with non_regular_files(tmp_path / "data") as data:
        (data / "note.md").write_text(NOTE)
        yield data


def upload_args(name: str, data: bytes) -> dict[str, Any]:
    return {"filename": name, "content": base64.b64encode(data).decode()}


async def test_a_fifo_device_or_socket_named_in_a_single_insert_is_refused_at_once(home: Path, hostile: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(hostile)) as client:
        for name, kind in [("pipe-0.md", "a named pipe (FIFO)"), ("zero.md", "a device"), ("sock.md", "a socket")]:
            error = error_of(await client.call("lightrag_insert_file", {"file_path": name}))
            assert error["error_code"] == "UNSUPPORTED_FORMAT", error
            assert error["error_message"] == f"'{name}' is {kind}, not a regular file; only regular files can be indexed."
        linked = error_of(await client.call("lightrag_insert_file", {"file_path": "dev-zero.md"}))
        assert linked["error_code"] == "FORBIDDEN" and "outside the folders this server may read" in linked["error_message"]
        assert ok(await client.call("lightrag_insert_file", {"file_path": "note.md"}))["status"] == "processed"


async def test_a_batch_of_fifos_fails_its_items_while_another_users_upload_answers(home: Path, hostile: Path) -> None:
    items = [{"item_type": "file", "content": f"pipe-{number}.md"} for number in range(5)]
    items += [{"item_type": "file", "content": "zero.md"}, {"item_type": "file", "content": "sock.md"}]
    answers: dict[str, Any] = {}
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(hostile)) as client:
        await client.wait_ready()

        async def hostile_batch() -> None:
            answers["batch"] = await client.call_as("mallory", "lightrag_batch_process", {"items": items, "batch_options": {"max_concurrent": 10}})

        async def small_upload() -> None:
            answers["upload"] = await client.call_as("bob", "upload_to_lightrag", upload_args("note.md", NOTE.encode()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(hostile_batch)
            await anyio.sleep(0.2)
            tg.start_soon(small_upload)
        assert ok(answers["upload"])["status"] == "processed"
        view = ok(answers["batch"])
        assert view["status"] == "failed", view  # every item failed, none is left blocking
        assert [result["error_code"] for result in view["results"]] == ["UNSUPPORTED_FORMAT"] * 7
        assert (await client.health())["status"] == "healthy"


async def test_a_folder_walk_skips_fifos_devices_and_sockets(home: Path, hostile: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(hostile.parent)) as client:
        view = ok(await client.call("lightrag_insert_file", {"file_path": "data"}))
        view = view if view["status"] == "completed" else await wait_job(client, view["batch_id"])
        skipped = {entry["path"]: entry["reason"] for entry in view["summary"]["skipped_files"]}
        for name in ["pipe-0.md", "pipe-4.md", "zero.md", "sock.md"]:
            assert skipped[name] == "not a regular file", skipped
        assert skipped["dev-zero.md"] == "symlink to a file outside the allowed directories"
        assert [item["name"] for item in view["results"]] == [f"{hostile.parent.name}/data/note.md"]


async def test_a_saved_job_naming_fifos_resumes_without_blocking_the_new_worker(home: Path, hostile: Path) -> None:
    """A job an earlier worker saved (as the unfixed worker did before blocking on its first FIFO)."""
    job = Job.new("batch", "default", {"max_concurrent": 5}, [], [
        JobItem(number, "file", f"pipe-{number}.md") for number in range(5)
    ])
    job.status = "processing"
    JobStore(home / ".local" / "share" / "lightrag-mcp" / "default").save(job)
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(hostile)) as client:
        await client.wait_ready()
        done = await wait_job(client, job.id)
        assert done["status"] == "failed"
        assert [result["error_code"] for result in done["results"]] == ["UNSUPPORTED_FORMAT"] * 5
        assert ok(await client.call("upload_to_lightrag", upload_args("note.md", NOTE.encode())))["status"] == "processed"


async def test_page_flood_tiffs_are_refused_before_decoding_and_another_users_upload_answers(home: Path) -> None:
    flood = upload_args("fax.tiff", make_page_flood_tiff(100_000))
    answers: dict[str, Any] = {}
    async with running_server(home) as client:
        await client.wait_ready()

        async def send(key: str, user: str, arguments: dict[str, Any]) -> None:
            answers[key] = await client.call_as(user, "upload_to_lightrag", arguments)

        async with anyio.create_task_group() as tg:
            tg.start_soon(send, "flood-1", "mallory", flood)
            tg.start_soon(send, "flood-2", "mallory", flood)
            await anyio.sleep(0.5)
            tg.start_soon(send, "small", "bob", upload_args("note.md", NOTE.encode()))
        assert ok(answers["small"])["status"] == "processed"
        for key in ("flood-1", "flood-2"):
            error = error_of(answers[key])
            assert error["error_code"] == "FILE_TOO_LARGE"
            assert "more than 2,000 pages" in error["error_message"], error


async def test_over_long_and_outside_paths_never_name_the_servers_folders(home: Path, hostile: Path) -> None:
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(hostile)) as client:
        for path, code in [
            ("a/" * 2048, "INVALID_PARAMETER"),
            ("x" * 4096, "INVALID_PARAMETER"),
            ("/etc/passwd", "FORBIDDEN"),
            ("../outside.md", "FORBIDDEN"),
            ("missing.md", "FILE_NOT_FOUND"),
        ]:
            result = await client.call("lightrag_insert_file", {"file_path": path})
            error = error_of(result)
            assert error["error_code"] == code, (path[:20], error)
            assert error["retryable"] is False
            text = result.content[0].text + repr(result.structured_content)  # type: ignore[union-attr]
            assert str(hostile) not in text and str(home) not in text and len(text) < 2000
