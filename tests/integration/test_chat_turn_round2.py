"""The chat turn, round 2 (issue 26), through LibreChat's code path: the pinned TypeScript SDK
client, one stdio server per user (LIGHTRAG_MCP_USER_ID), the librechat profile, only the text
`content` read — what the model reads, asserted.

Bad inputs and what they get: `null` for an optional argument and `{"input": ""}` on a tool
called without arguments are "not given" (accepted); a document name where an id is expected is
resolved (status); an unknown name → DOCUMENT_NOT_FOUND naming the way to list names.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from scripts.corpus import generated_pages
from tests.fixtures.documents import make_large_pdf
from tests.integration.test_real_clients import _step, _text, ts_client

pytestmark = [pytest.mark.slow, pytest.mark.clients]

USER = "6650f1c2a9b8e7d6c5b4a392"
PLANTED = "The Kestrel footbridge over the Ouse was painted teal in 1987."
TITLE, PAGES = generated_pages(4, seed=9, markdown=True)
REPORT = "\n\n".join(PAGES)  # "# <title>", "## <section>" headings, ~5,600 characters
LONG_REPORT = "\n\n".join([REPORT, *generated_pages(5, seed=9, markdown=True)[1]])  # more than one page


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {"LIGHTRAG_MCP_USER_ID": USER, "LIGHTRAG_MCP_TOOLS": "librechat", **extra}


def _upload(name: str, data: bytes, mime: str = "text/markdown", label: str = "upload") -> dict[str, Any]:
    arguments = {"filename": name, "content": base64.b64encode(data).decode(), "mimeType": mime}
    return {"op": "call", "label": label, "name": "upload_to_lightrag", "arguments": arguments}


def _call(label: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"op": "call", "label": label, "name": name, "arguments": arguments}


def _flat(text: str) -> str:
    """Text with whitespace collapsed (indexing normalises a document's spacing)."""
    return " ".join(text.split())


def _read(doc: dict[str, Any], label: str) -> str:
    return _text(_step(doc, label)["result"])


# --- 9: whole-document requests ---------------------------------------------------------------


def test_a_summary_request_after_one_upload_gets_the_documents_opening_and_outline(home: Path) -> None:
    steps = [_upload("report.md", LONG_REPORT.encode()),
             _call("summary", "query_lightrag", {"query": "Give me a summary"}),
             _call("naive", "lightrag_query", {"query": "What is this document about?", "mode": "naive"})]
    doc, _ = ts_client(home, steps, env=_env(home))
    for label in ("summary", "naive"):
        text = _read(doc, label)
        assert "NO_RESULTS_FOUND" not in text, text
        assert TITLE in text and "Outline:" in text, text  # the opening, and the headings
        headings = re.findall(r"^## (.+)$", REPORT, flags=re.MULTILINE)
        assert all(heading in text for heading in headings[:3]), text
        assert "lightrag_read_document" in text and '"document": "report.md"' in text, text  # how to read on


def test_a_document_is_read_by_name_a_page_at_a_time(home: Path) -> None:
    long_text = LONG_REPORT  # over one page (LIGHTRAG_MCP_RESULT_CHARS)
    steps = [_upload("long-report.md", long_text.encode()),
             _call("first", "lightrag_read_document", {"document": "long-report.md"}),
             _call("newest", "lightrag_read_document", {}),
             _call("missing", "lightrag_read_document", {"document": "nope.pdf"})]
    doc, _ = ts_client(home, steps, env=_env(home, LIGHTRAG_MCP_RESULT_CHARS="4000"))
    first = _step(doc, "first")["result"]
    page = first["structuredContent"]
    assert page["filename"] == "long-report.md" and page["offset"] == 0 and page["next_offset"], page
    assert len(page["text"]) <= 4000 and _flat(long_text).startswith(_flat(page["text"])), page["text"][:200]
    assert f"next page: offset {page['next_offset']}" in _text(first) and "Outline:" in _text(first)
    assert _step(doc, "newest")["result"]["structuredContent"]["document_id"] == page["document_id"]
    missing = _step(doc, "missing")["result"]
    assert missing["isError"] and missing["structuredContent"]["error_code"] == "DOCUMENT_NOT_FOUND"
    assert "lightrag_list_documents" in _text(missing)


def test_reading_on_from_next_offset_continues_the_text(home: Path) -> None:
    steps = [_upload("long-report.md", LONG_REPORT.encode()),
             _call("first", "lightrag_read_document", {"document": "long-report.md"})]
    doc, _ = ts_client(home, steps, env=_env(home, LIGHTRAG_MCP_RESULT_CHARS="4000"))
    first = _step(doc, "first")["result"]["structuredContent"]
    steps = [_call("second", "lightrag_read_document", {"document": "long-report.md", "offset": first["next_offset"]})]
    doc, _ = ts_client(home, steps, env=_env(home, LIGHTRAG_MCP_RESULT_CHARS="4000"))
    second = _step(doc, "second")["result"]["structuredContent"]
    assert second["offset"] == first["next_offset"] and _flat(second["text"]) in _flat(LONG_REPORT)
    assert _flat(first["text"] + second["text"]) in _flat(LONG_REPORT)  # the second page goes on from the first


# --- 10: the result budget ----------------------------------------------------------------------


def test_a_mix_query_fits_the_result_budget_and_still_carries_the_fact(home: Path) -> None:
    steps = [_upload(f"report-{n}.md", "\n\n".join(generated_pages(n, seed=9, markdown=True)[1]).encode(),
                     label=f"u{n}") for n in range(6)]
    planted = REPORT.replace("\n\n## ", f"\n\n{PLANTED}\n\n## ", 1)
    steps += [_upload("bridges.md", planted.encode(), label="planted"),
              _call("ask", "lightrag_query", {"query": "What colour was the Kestrel footbridge painted?",
                                              "mode": "mix"})]
    doc, _ = ts_client(home, steps, env=_env(home))
    text = _read(doc, "ask")
    assert "teal" in text and "bridges.md" in text, text
    assert len(text) <= 6000 + 600, len(text)  # the budget, plus each passage's source label


# --- 2, 3: names wherever ids, and a retry while indexing ------------------------------------------


def test_the_status_of_a_document_is_asked_by_its_name(home: Path) -> None:
    steps = [_upload("report.md", REPORT.encode()),
             _call("status", "lightrag_get_status", {"document_ids": ["report.md"]}),
             _call("unknown", "lightrag_get_status", {"document_ids": ["nope.md"]})]
    doc, _ = ts_client(home, steps, env=_env(home))
    status = _step(doc, "status")["result"]
    assert status["structuredContent"]["status"] == "processed", _text(status)
    assert "'report.md' is indexed" in _text(status)
    unknown = _step(doc, "unknown")["result"]
    assert unknown["structuredContent"]["error_code"] == "DOCUMENT_NOT_FOUND"
    assert "lightrag_list_documents" in _text(unknown)


def test_a_retry_while_the_document_is_indexing_says_it_is_being_indexed(home: Path) -> None:
    big = make_large_pdf(1.0, seed=13)  # ~100 pages: still indexing when the retry comes
    steps = [_upload("annual-report.pdf", big, "application/pdf", "first"),
             _upload("annual-report.pdf", big, "application/pdf", "retry"),
             _call("by-name", "lightrag_get_status", {"document_ids": ["annual-report.pdf"]})]
    doc, _ = ts_client(home, steps, env=_env(home, LIGHTRAG_MCP_WAIT_SECONDS="2"))
    retry = _step(doc, "retry")["result"]
    state = retry["structuredContent"]["status"]
    assert state != "processed", _text(retry)
    text = _text(retry)
    assert "already indexed" not in text and "nothing was added." not in text, text
    assert "still being indexed" in text and f"state {state}" in text, text
    assert retry["structuredContent"]["track_id"] in text, text
    assert _step(doc, "by-name")["result"]["structuredContent"]["documents"][0]["filename"] == "annual-report.pdf"


# --- 4: each fact once ----------------------------------------------------------------------------


def test_upload_status_and_health_texts_state_each_fact_once(home: Path) -> None:
    steps = [_upload("report.md", REPORT.encode()),
             _call("status", "lightrag_get_status", {"document_ids": ["report.md"]}),
             _call("health", "health_check", {"include_detailed": True})]
    doc, _ = ts_client(home, steps, env=_env(home))
    upload = _read(doc, "upload")
    for count in ("words", "chunks", "entities", "relations", "pages"):
        assert not re.search(rf"^{count}: ", upload, flags=re.MULTILINE), upload  # said in the sentence
    status = _read(doc, "status")
    assert "counts:" not in status and "pipeline:" not in status and status.count("report.md") == 1, status
    health = _read(doc, "health")
    assert health.count("versions:") == 1 and health.count("storages: kv=") == 1, health
    assert health.count("rss_mb") + health.count("worker_rss_mb") == 2, health  # front and worker, once each


# --- 7: what "not given" looks like on the wire ------------------------------------------------------


def test_null_optionals_and_an_empty_input_are_taken_as_not_given(home: Path) -> None:
    steps = [_call("nulls", "lightrag_list_documents", {"limit": None, "status_filter": None, "workspace": None}),
             _call("input", "health_check", {"input": ""}),
             _call("status", "lightrag_get_status", {"track_id": None, "document_ids": None})]
    doc, _ = ts_client(home, steps, env=_env(home))
    for label in ("nulls", "input", "status"):
        result = _step(doc, label)["result"]
        assert not result.get("isError"), _text(result)


# --- 11: the instructions LibreChat puts in the system prompt --------------------------------------


def test_the_instructions_name_only_tools_the_librechat_profile_advertises(home: Path) -> None:
    doc, _ = ts_client(home, [{"op": "list_tools", "label": "tools"}], env=_env(home))
    advertised = {tool["name"] for tool in _step(doc, "tools")["result"]["tools"]}
    instructions = doc["server"]["instructions"]
    named = set(re.findall(r"\b(?:lightrag|upload|query|health)_[a-z_]+\b", instructions))
    assert named and named <= advertised, (named - advertised, instructions)
    assert "by path" not in instructions  # the librechat profile cannot index a path
