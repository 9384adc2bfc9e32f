"""The delete journal: ids written down before LightRAG deletes, crossed out after."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rag_worker.storage.journals import JOURNAL_FILE, DeleteJournal


def test_begin_and_end_keep_the_started_deletes_in_order_and_survive_a_new_reader(tmp_path: Path) -> None:
    journal = DeleteJournal(tmp_path)
    assert journal.pending() == [] and not (tmp_path / JOURNAL_FILE).exists()
    journal.begin("doc-a")
    journal.begin("doc-b")
    journal.begin("doc-a")  # twice: written down once
    assert DeleteJournal(tmp_path).pending() == ["doc-a", "doc-b"]  # what a restarted worker reads
    journal.end("doc-a")
    journal.end("doc-unknown")
    assert DeleteJournal(tmp_path).pending() == ["doc-b"]
    journal.end("doc-b")
    assert not (tmp_path / JOURNAL_FILE).exists()  # nothing pending: no file
    assert [p.name for p in tmp_path.iterdir()] == []  # and no temporary file left behind


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_an_unreadable_journal_is_reported_and_resumes_nothing(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / JOURNAL_FILE).write_bytes(content)
    with caplog.at_level(logging.ERROR, logger="rag_worker.operations.deletion"):
        assert DeleteJournal(tmp_path).pending() == []
    assert "unreadable" in caplog.text and str(tmp_path) not in caplog.text
