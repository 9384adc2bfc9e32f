"""The audit log: bounded, content-free argument summaries, newest-first reads, rotation."""

from __future__ import annotations

import base64
from pathlib import Path

import orjson

from rag_worker.operations import audit
from rag_worker.operations.audit import append_entry, read_entries, summarize_arguments


def test_bodies_are_replaced_by_their_size_and_names_are_kept() -> None:
    secret = "TOP-SECRET " * 1000
    summary = summarize_arguments(
        {
            "filename": "report.pdf",
            "content": base64.b64encode(secret.encode()).decode(),
            "metadata": {"tags": ["finance"], "author": "A. Smith"},
            "items": [{"item_type": "text", "content": secret, "title": f"t{i}"} for i in range(15)],
        }
    )
    text = orjson.dumps(summary).decode()
    assert "TOP-SECRET" not in text and "VE9QLVNFQ1JFV" not in text  # neither the text nor its base64
    assert summary["filename"] == "report.pdf" and summary["metadata"]["author"] == "A. Smith"
    assert summary["content"].endswith("chars>")
    assert summary["items"][0] == {"item_type": "text", "content": f"<{len(secret)} chars>", "title": "t0"}
    assert summary["items"][-1] == "+5 more"


def test_a_summary_is_bounded_however_big_the_arguments() -> None:
    summary = summarize_arguments({f"key{i}": ["x" * 150] * 10 for i in range(50)})
    assert len(orjson.dumps(summary)) <= audit.MAX_SUMMARY_CHARS
    assert "note" in summary


def test_entries_are_read_newest_first_within_the_time_range(tmp_path: Path) -> None:
    path = tmp_path / "mcp_audit.jsonl"
    for ts in (100.0, 200.0, 300.0, 400.0):
        append_entry(path, {"ts": ts, "tool": "upload_to_lightrag"})
    entries, matched = read_entries(path, 150.0, 350.0, 10)
    assert [e["ts"] for e in entries] == [300.0, 200.0] and matched == 2
    entries, matched = read_entries(path, None, 1e12, 3)
    assert [e["ts"] for e in entries] == [400.0, 300.0, 200.0] and matched == 4


def test_a_full_log_is_rotated_once_and_both_files_are_read(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(audit, "MAX_FILE_BYTES", 200)
    path = tmp_path / "mcp_audit.jsonl"
    for ts in range(1, 21):
        append_entry(path, {"ts": float(ts), "tool": "lightrag_clear_cache"})
    assert path.with_name("mcp_audit.jsonl.1").exists() and path.stat().st_size <= 200
    entries, _ = read_entries(path, None, 1e12, 5)
    assert [e["ts"] for e in entries] == [20.0, 19.0, 18.0, 17.0, 16.0]
