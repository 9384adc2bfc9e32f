#!/usr/bin/env python3
"""Characters the model reads per chat turn, through LibreChat's code path.

    .venv/bin/python scripts/turn_sizes.py [--show] [--code /path/to/other/checkout]   # needs `npm ci` in tests/clients

Drives the server over stdio with the pinned TypeScript SDK client (tests/clients/ts_client.mjs:
the stack LibreChat builds on) configured as the README's LibreChat block (one user through
LIGHTRAG_MCP_USER_ID, the librechat profile), uploads eight generated two-page reports, then
prints the characters of text `content` (all LibreChat passes to the model) of: the tool
definitions (librechat and default profiles, as LibreChat sends them: name, description,
parameters), the server instructions, an upload, naive and mix queries, a status, a listing and
a health check. `--show` prints the texts; `--code` runs the server from another checkout (PYTHONPATH),
for a before/after comparison.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_worker.storage.catalog import doc_id_for  # noqa: E402
from scripts.corpus import generated_pages  # noqa: E402

CLIENTS = ROOT / "tests" / "clients"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
DOCUMENTS = 8
QUESTION = "Which products did the reports present, and where?"


def _documents() -> list[tuple[str, bytes]]:
    docs = []
    for number in range(DOCUMENTS):
        _title, pages = generated_pages(number, seed=5, markdown=True)
        docs.append((f"report-{number}.md", "\n\n".join(pages).encode()))
    return docs


def _call(label: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"op": "call", "label": label, "name": name, "arguments": arguments}


def _run(home: Path, profile: str, steps: list[dict[str, Any]], code: str | None) -> dict[str, Any]:
    env = {
        "HOME": str(home), "PATH": "/usr/bin:/bin", "WORKING_DIR": str(home / "data"),
        "LIGHTRAG_MCP_USER_ID": "6650f1c2a9b8e7d6c5b4a392", "LIGHTRAG_MCP_TOOLS": profile,
    } | ({"PYTHONPATH": code} if code else {})
    spec = {"server": {"command": PYTHON, "args": ["-m", "mcp_front"], "env": env, "cwd": str(home)},
            "timeout_ms": 60_000, "steps": steps}
    node = shutil.which("node") or "node"
    proc = subprocess.run([node, str(CLIENTS / "ts_client.mjs")], input=json.dumps(spec), cwd=CLIENTS,
                          capture_output=True, text=True, timeout=600)
    if not proc.stdout.strip():
        raise SystemExit(f"ts_client failed: {proc.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _text(step: dict[str, Any]) -> str:
    """What LibreChat hands the model: the text blocks joined with blank lines."""
    blocks = (step.get("result") or {}).get("content") or []
    return "\n\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")


def _definitions(step: dict[str, Any]) -> tuple[int, int]:
    tools = step["result"]["tools"]
    functions = [{"name": t["name"], "description": t.get("description", ""), "parameters": t["inputSchema"]}
                 for t in tools]
    return len(tools), len(json.dumps(functions, separators=(",", ":")))


def main() -> None:
    code = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else None
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        rows: list[tuple[str, int]] = []
        default = _run(home, "default", [{"op": "list_tools"}], code)
        count, size = _definitions(default["steps"][0])
        rows.append((f"tool definitions, default ({count} tools)", size))
        uploads = [_call(f"upload {name}", "upload_to_lightrag",
                         {"filename": name, "content": base64.b64encode(data).decode(), "mimeType": "text/markdown"})
                   for name, data in _documents()]
        steps = [{"op": "list_tools"}, *uploads,
                 _call("query naive", "lightrag_query", {"query": QUESTION, "mode": "naive"}),
                 _call("query mix", "lightrag_query", {"query": QUESTION, "mode": "mix"}),
                 _call("query_lightrag", "query_lightrag", {"query": QUESTION}),
                 _call("status", "lightrag_get_status", {}),
                 _call("status of a document", "lightrag_get_status", {"document_ids": [doc_id_for("report-0.md")]}),
                 _call("list", "lightrag_list_documents", {}),
                 _call("health", "health_check", {})]
        doc = _run(home, "librechat", steps, code)
        count, size = _definitions(doc["steps"][0])
        rows.insert(0, (f"tool definitions, librechat ({count} tools)", size))
        rows.append(("server instructions", len(doc["server"].get("instructions") or "")))
        for step in doc["steps"][1:]:
            if step["label"] == "upload report-0.md" or not step["label"].startswith("upload"):
                rows.append((step["label"].replace(" report-0.md", ""), len(_text(step))))
        for label, chars in rows:
            sys.stdout.write(f"{label:40} {chars:>8,}\n")
        if "--show" in sys.argv:
            for step in doc["steps"][1:]:
                sys.stdout.write(f"\n===== {step['label']}\n{_text(step) or step.get('error')}\n")
            sys.stdout.write(f"\n===== instructions\n{doc['server'].get('instructions')}\n")


if __name__ == "__main__":
    main()
