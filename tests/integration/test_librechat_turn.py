"""The chat turn as LibreChat drives it: the official TypeScript SDK client with LibreChat's
options (stdio, one server process per user through the env placeholder, 60 s timeout, no
progress token, only the text `content` read), two users on one data directory.

"Add a document, then ask about it" while a large PDF of the same user is still indexing.
"""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PYTHON, client_env
from tests.fixtures.documents import make_large_pdf
from tests.integration.test_real_clients import _step, _text, ts_client

pytestmark = [pytest.mark.slow, pytest.mark.clients]

PLANTED = "The Kestrel footbridge over the Ouse was painted teal in 1987."
QUESTION = "What colour was the Kestrel footbridge painted?"


def _librechat_user(home: Path, user: str) -> dict[str, str]:
    """What LibreChat's `env: {LIGHTRAG_MCP_USER_ID: "{{LIBRECHAT_USER_ID}}"}` becomes for one user."""
    return {"LIGHTRAG_MCP_USER_ID": user, "WORKING_DIR": str(home.parent / "shared-data")}


def _upload(name: str, data: bytes, mime: str, label: str) -> dict[str, object]:
    arguments = {"filename": name, "content": base64.b64encode(data).decode(), "mimeType": mime}
    return {"op": "call", "label": label, "name": "upload_to_lightrag", "arguments": arguments}


def test_a_question_during_a_large_upload_answers_from_the_earlier_document(home: Path) -> None:
    big = make_large_pdf(2.0, seed=11)  # ~200 pages: minutes of indexing on the embedded default
    steps = [
        _upload("bridges.md", f"# Bridges of York\n\n{PLANTED}\n".encode(), "text/markdown", "small"),
        _upload("annual-report.pdf", big, "application/pdf", "large"),
        {"op": "call", "label": "ask", "name": "query_lightrag", "arguments": {"query": QUESTION}},
        {"op": "call", "label": "status", "name": "lightrag_get_status", "arguments": {}},
    ]
    env = _librechat_user(home, "6650f1c2a9b8e7d6c5b4a392") | {"LIGHTRAG_MCP_WAIT_SECONDS": "10"}
    doc, _ = ts_client(home, steps, env=env)

    small = _step(doc, "small")["result"]
    assert small["structuredContent"]["status"] == "processed", _text(small)

    large = _step(doc, "large")
    text = _text(large["result"])
    track_id = large["result"]["structuredContent"]["track_id"]
    assert large["result"]["structuredContent"]["status"] != "processed", text  # still indexing ...
    assert large["elapsed_ms"] < 30_000, large["elapsed_ms"]  # ... yet answered well inside 60 s
    assert track_id in text and "lightrag_get_status" in text and "annual-report.pdf" in text, text

    ask = _step(doc, "ask")
    assert "result" in ask, ask.get("error")  # not a timeout
    answer = _text(ask["result"])
    assert "teal" in answer, answer
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", answer) if len(s.strip()) >= 20]
    assert len(sentences) == len(set(sentences)), answer  # each fact once in what the model reads

    counts = _step(doc, "status")["result"]["structuredContent"]["counts"]
    assert counts["processed"] == 1 and counts["processed"] < sum(counts.values()), counts  # asked mid-indexing


def test_two_librechat_users_on_one_data_directory_see_only_their_own_documents(home: Path) -> None:
    alice = [_upload("bridges.md", f"# Bridges\n\n{PLANTED}\n".encode(), "text/markdown", "upload")]
    ts_client(home, alice, env=_librechat_user(home, "alice-id"))
    bob = [{"op": "call", "label": "ask", "name": "query_lightrag", "arguments": {"query": QUESTION}}]
    doc, _ = ts_client(home, bob, env=_librechat_user(home, "bob-id"))
    assert "teal" not in _text(_step(doc, "ask")["result"])


@pytest.mark.parametrize("placeholder", ["{{LIBRECHAT_USER_ID}}", "${LIBRECHAT_USER_ID}"])
def test_a_launch_with_an_unexpanded_user_placeholder_stops_with_one_line(home: Path, placeholder: str) -> None:
    env = client_env(home, LIGHTRAG_MCP_USER_ID=placeholder)
    proc = subprocess.run(
        [PYTHON, "-m", "mcp_front"], env=env, input="", capture_output=True, text=True, timeout=60, cwd=home
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert "LIGHTRAG_MCP_USER_ID" in proc.stderr and "unexpanded placeholder" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_chat_attachment_is_indexed_by_its_original_name_from_the_users_upload_folder(home: Path) -> None:
    user = "6650f1c2a9b8e7d6c5b4a392"
    uploads = home.parent / "uploads" / user  # LibreChat: uploads/<userId>/<file_id>__<original name>
    uploads.mkdir(parents=True)
    (uploads / "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f__bridges.md").write_text(f"# Bridges\n\n{PLANTED}\n")
    (uploads / "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b__other.md").write_text("# Other\n\nNothing about bridges.\n")
    env = _librechat_user(home, user) | {
        "LIGHTRAG_MCP_ALLOWED_DIRS": str(uploads),  # "/app/uploads/{{LIBRECHAT_USER_ID}}" once LibreChat fills it
        "LIGHTRAG_MCP_TOOLS": "librechat,lightrag_insert_file",
    }
    steps = [
        {"op": "call", "label": "index", "name": "lightrag_insert_file", "arguments": {"file_path": "bridges.md"}},
        {"op": "call", "label": "list", "name": "lightrag_list_documents", "arguments": {}},
        {"op": "call", "label": "ask", "name": "query_lightrag", "arguments": {"query": QUESTION}},
        {"op": "call", "label": "status", "name": "lightrag_get_status", "arguments": {"document_ids": ["bridges.md"]}},
    ]
    doc, _ = ts_client(home, steps, env=env)
    indexed = _step(doc, "index")["result"]["structuredContent"]
    assert indexed["status"] == "processed" and indexed["filename"] == "bridges.md", indexed
    listing = _text(_step(doc, "list")["result"])
    assert "bridges.md" in listing and user not in listing and "__" not in listing, listing
    assert "other.md" not in listing, listing
    answer = _text(_step(doc, "ask")["result"])
    assert "teal" in answer and "bridges.md" in answer and user not in answer, answer
    status = _text(_step(doc, "status")["result"])
    assert "bridges.md" in status and user not in status, status
