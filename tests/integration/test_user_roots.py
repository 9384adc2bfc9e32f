"""One server for many users: `LIGHTRAG_MCP_ALLOWED_DIRS=<uploads>/{user}` lets each caller index
their own LibreChat attachments by path, never another user's (over stdio, the user named by
patched LibreChat's `userId`; over HTTP the gateway's user header — tests/integration/test_deploy_config.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.integration.harness import Client, error_of, running_server

pytestmark = pytest.mark.anyio

ALICE = "6650f1c2a9b8e7d6c5b4a392"
BOB = "6650f1c2a9b8e7d6c5b4a393"
FILE_ID = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"


@pytest.fixture
def uploads(tmp_path: Path) -> Path:
    root = tmp_path / "uploads"
    facts = {ALICE: "The HERON-12 drone was built by Alice Moreau.", BOB: "The LYNX-40 rover was built by Bob Novak."}
    for user, fact in facts.items():
        (root / user).mkdir(parents=True)
        (root / user / f"{FILE_ID}__{user[-3:]}-notes.md").write_text(f"# Notes\n\n{fact}\n")
    return root


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def test_each_user_indexes_only_their_own_upload_folder(home: Path, uploads: Path) -> None:
    alices = uploads / ALICE / f"{FILE_ID}__392-notes.md"
    bobs = uploads / BOB / f"{FILE_ID}__393-notes.md"
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(uploads / "{user}")) as client:
        own = ok(await client.call_as(ALICE, "lightrag_insert_file", {"file_path": "392-notes.md"}))
        assert (own["filename"], own["status"]) == ("392-notes.md", "processed")  # as the user knows it
        by_path = ok(await client.call_as(ALICE, "lightrag_insert_file", {"file_path": str(alices)}))
        assert by_path["document_id"] == own["document_id"]

        other = error_of(await client.call_as(ALICE, "lightrag_insert_file", {"file_path": str(bobs)}))
        assert other["error_code"] == "FORBIDDEN" and "outside the folders this server may read" in other["error_message"]
        assert str(uploads.resolve() / ALICE) not in other["error_message"]  # echoes only bob's path she sent
        by_name = error_of(await client.call_as(ALICE, "lightrag_insert_file", {"file_path": "393-notes.md"}))
        assert by_name["error_code"] == "FILE_NOT_FOUND"

        anonymous = error_of(await client.call("lightrag_insert_file", {"file_path": str(alices)}))
        assert anonymous["error_code"] == "FORBIDDEN"
        assert "LIGHTRAG_MCP_ALLOWED_DIRS" in anonymous["suggested_action"]

        answer = ok(await client.call_as(BOB, "lightrag_query", {"query": "Who built the HERON-12 drone?"}))
        assert "Alice Moreau" not in str(answer)  # nothing of hers reached his knowledge base


async def test_a_batch_reads_files_as_the_user_who_started_it(home: Path, uploads: Path) -> None:
    items = [
        {"item_type": "file", "content": str(uploads / ALICE / f"{FILE_ID}__392-notes.md")},
        {"item_type": "file", "content": str(uploads / BOB / f"{FILE_ID}__393-notes.md")},
    ]
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(uploads / "{user}")) as client:
        view = ok(await client.call_as(ALICE, "lightrag_batch_process", {"items": items}))
        view = await finished(client, ALICE, view)
        statuses = {r["item_index"]: (r["status"], r.get("error_code")) for r in view["results"]}
        assert statuses == {0: ("processed", None), 1: ("failed", "FORBIDDEN")}


async def finished(client: Client, user: str, view: dict[str, Any], timeout: float = 240) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        while view["status"] not in {"completed", "failed", "cancelled"}:
            await anyio.sleep(0.5)
            view = ok(await client.call_as(user, "lightrag_get_status", {"batch_id": view["batch_id"]}))
    return view
