"""Hybrid retrieval through the real server (issue 28): what a user quotes exactly — a part number,
an e-mail address, a fault code, a firmware version, an amount — comes back in the top 3 passages
among similar reports; deleting a document removes its lexical entries; a knowledge base indexed
before the lexical index existed gets one when it opens; FTS syntax in a question is harmless."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from rag_worker.storage.lexical_index import FILE_NAME
from scripts.corpus import MAINTENANCE_QUESTIONS, MaintenanceReport, maintenance_reports
from tests.integration.harness import Client, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REPORTS = maintenance_reports(16)


async def insert_reports(client: Client, reports: list[MaintenanceReport]) -> dict[str, str]:
    """Index the reports; their document ids by file name."""
    ids = {}
    for report in reports:
        result = await client.call("lightrag_insert_text", {"text": report.text, "title": report.name})
        assert not result.is_error and result.structured_content["status"] == "processed", result.content
        ids[report.name] = result.structured_content["document_id"]
    return ids


async def top_three(client: Client, question: str, mode: str) -> list[str]:
    result = await client.call("lightrag_query", {"query": question, "mode": mode, "chunk_top_k": 3})
    assert not result.is_error, result.content
    return [" ".join(s["content"].split()) for s in result.structured_content["sources"]]


async def lexical_status(client: Client) -> dict[str, Any]:
    health = await client.health(include_detailed=True)
    return health["statistics"]["lexical_index"]  # type: ignore[no-any-return]


def lexical_keys(data_dir: Path) -> list[str]:
    with sqlite3.connect(data_dir / "default" / FILE_NAME) as db:
        return [key for (key,) in db.execute("SELECT key FROM entries WHERE kind = 'passage'")]


async def test_quoted_codes_addresses_versions_and_amounts_come_back_in_the_top_three(home: Path) -> None:
    async with running_server(home) as client:
        await insert_reports(client, REPORTS)
        for mode in ("naive", "mix"):
            for number, kind in enumerate(MAINTENANCE_QUESTIONS):
                value = REPORTS[3 * number + 1].values[kind]
                passages = await top_three(client, MAINTENANCE_QUESTIONS[kind].format(value), mode)
                assert any(value in p for p in passages), (mode, kind, value, passages)


async def test_deleting_a_document_removes_its_lexical_entries(home: Path) -> None:
    data_dir = home / "data"
    async with running_server(home, WORKING_DIR=str(data_dir)) as client:
        ids = await insert_reports(client, REPORTS[:4])
        gone = ids[REPORTS[0].name]
        before = await lexical_status(client)
        assert any(key.startswith(gone) for key in lexical_keys(data_dir))
        result = await client.call("lightrag_delete_documents", {"document_ids": [gone]})
        assert not result.is_error, result.content
        assert not any(key.startswith(gone) for key in lexical_keys(data_dir))
        assert (await lexical_status(client))["entries"] < before["entries"]
        part = REPORTS[0].values["part"]
        assert not any(part in p for p in await top_three(client, f"Which report lists part {part}?", "naive"))


def remove_the_index(index_file: Path) -> None:
    """As a knowledge base indexed before the lexical index existed."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index_file}{suffix}").unlink(missing_ok=True)


def forget_a_document(index_file: Path) -> None:
    """As a document another replica indexed (its WORKING_DIR holds its own index file)."""
    with sqlite3.connect(index_file) as db:
        [(doc,)] = db.execute("SELECT src FROM entries WHERE kind = 'passage' ORDER BY id LIMIT 1").fetchall()
        rows = [row for (row,) in db.execute("SELECT id FROM entries WHERE src = ?", (doc,))]
        db.executemany("DELETE FROM fts_passage WHERE rowid = ?", [(row,) for row in rows])
        db.executemany("DELETE FROM entries WHERE id = ?", [(row,) for row in rows])


@pytest.mark.parametrize("lose", [remove_the_index, forget_a_document])
async def test_a_knowledge_base_whose_lexical_index_misses_documents_gets_it_built_when_it_opens(
        home: Path, lose: Any) -> None:
    data_dir = home / "data"
    async with running_server(home, WORKING_DIR=str(data_dir)) as client:
        await insert_reports(client, REPORTS[:6])
        entries = (await lexical_status(client))["entries"]
    lose(data_dir / "default" / FILE_NAME)
    async with running_server(home, WORKING_DIR=str(data_dir)) as client:
        await client.wait_ready()
        with anyio.fail_after(60):
            while (status := await lexical_status(client))["state"] != "ready":
                await anyio.sleep(0.2)
        assert status["entries"] == entries
        for report in REPORTS[:6]:
            email = report.values["email"]
            assert any(email in p for p in await top_three(client, f"Which report was sent by {email}?", "naive"))


@pytest.mark.parametrize("question", [
    'part NEAR("PX" KQ) OR * AND NOT "', "entries: DROP TABLE entries; --", "{name body}: ^E4* )(",
])
async def test_fts_syntax_in_a_question_is_harmless(home: Path, question: str) -> None:
    async with running_server(home) as client:
        await insert_reports(client, REPORTS[:2])
        result = await client.call("lightrag_query", {"query": question, "mode": "mix"})
        assert not result.is_error, result.content
        fault = REPORTS[1].values["fault"]
        assert any(fault in p for p in await top_three(client, f"Where was fault code {fault} logged?", "mix"))
