"""The server against real MCP clients: the MCP Inspector CLI and the official TypeScript SDK
(`Client` + `StdioClientTransport`, the stack LibreChat and VS Code build on).

Both are pinned in tests/clients/package.json + package-lock.json; `scripts/run_tests.sh`
runs `npm ci` there. Every server gets a private HOME; every client run has a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mcp_front.tools import PROFILE_TOOLS
from tests.conftest import PROJECT_ROOT, PYTHON, client_env

pytestmark = [pytest.mark.slow, pytest.mark.clients]

CLIENTS_DIR = PROJECT_ROOT / "tests" / "clients"
TS_CLIENT = CLIENTS_DIR / "ts_client.mjs"
INSPECTOR_PKG = CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "inspector"
SDK_PKG = CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "sdk"
SERVER = [PYTHON, "-m", "mcp_front"]
RUN_TIMEOUT = 120.0
HEALTH = "lightrag_health_check"

NODE = shutil.which("node")
if NODE is None or shutil.which("npx") is None:
    pytest.skip("node/npx not on PATH: the real-client tests need Node.js", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def _node_modules() -> None:
    missing = [str(p) for p in (INSPECTOR_PKG, SDK_PKG) if not (p / "package.json").is_file()]
    if missing:
        pytest.fail(
            f"npm packages missing ({', '.join(missing)}): run `npm ci` in {CLIENTS_DIR} "
            "(scripts/run_tests.sh does it when package-lock.json is newer than node_modules)",
            pytrace=False,
        )


# --- helpers ---------------------------------------------------------------------


def _inspector_bin() -> Path:
    meta = json.loads((INSPECTOR_PKG / "package.json").read_text())
    return INSPECTOR_PKG / meta["bin"]["mcp-inspector"]


def _node_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(home), NO_UPDATE_NOTIFIER="1", NO_COLOR="1")
    return env


def _describe(proc: subprocess.CompletedProcess[str]) -> str:
    return (
        f"command: {proc.args!r}\nexit code: {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-8000:]}\n--- stderr ---\n{proc.stderr[-8000:]}"
    )


def inspector(
    home: Path, cwd: Path, method: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Run `inspector --cli --format json --method METHOD ... -- PY -m mcp_front` in `cwd`.

    The Inspector passes its own HOME/PATH/... to the server (the SDK's inherited-env
    allow-list); anything else goes as `-e KEY=VALUE`.
    """
    server_env = client_env(home, **(env or {}))
    flags = [
        arg for key, value in server_env.items() if key.startswith("LIGHTRAG_") for arg in ("-e", f"{key}={value}")
    ]
    cmd = [NODE, str(_inspector_bin()), "--cli", "--format", "json", *flags, "--method", method, *extra, "--", *SERVER]
    node_env = {**client_env(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_UPDATE_NOTIFIER": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=node_env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return proc, doc


def ts_client(
    home: Path,
    steps: list[dict[str, Any]],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    expect_ok: bool = True,
    roots: list[Path] | None = None,
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run tests/clients/ts_client.mjs with a server on `client_env(home, **env)`."""
    spec: dict[str, Any] = {
        "server": {"command": SERVER[0], "args": SERVER[1:], "env": client_env(home, **(env or {}))},
        "timeout_ms": 60_000,
        "steps": steps,
    }
    if cwd is not None:
        spec["server"]["cwd"] = str(cwd)
    if roots is not None:
        spec["roots"] = [root.as_uri() for root in roots]
    proc = subprocess.run(
        [NODE, str(TS_CLIENT)],
        input=json.dumps(spec),
        cwd=CLIENTS_DIR,
        env=_node_env(home),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    try:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise AssertionError(f"ts_client printed no JSON document\n{_describe(proc)}") from None
    assert doc.get("connected"), f"ts_client could not connect: {doc.get('error')}\n{_describe(proc)}"
    if expect_ok:
        bad = [step for step in doc["steps"] if not step.get("ok")]
        assert proc.returncode == 0 and not bad, f"unexpected step outcome: {json.dumps(bad)[:4000]}\n{_describe(proc)}"
    return doc, proc


def _step(doc: dict[str, Any], label: str) -> dict[str, Any]:
    for step in doc["steps"]:
        if step["label"] == label:
            return step
    raise AssertionError(f"no step labelled {label!r} in {[s['label'] for s in doc['steps']]}")


def _wait_healthy(label: str = "health", name: str = HEALTH) -> dict[str, Any]:
    """A bounded poll: the worker starts in the background, so health says degraded at first."""
    return {
        "op": "call",
        "label": label,
        "name": name,
        "arguments": {},
        "until": {"path": "structuredContent.status", "equals": "healthy"},
        "attempts": 60,
        "interval_ms": 500,
    }


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")


def _assert_error_envelope(result: dict[str, Any], code: str, *, retryable: bool) -> None:
    assert result.get("isError") is True, result
    sc = result["structuredContent"]
    assert sc["error_code"] == code, sc
    assert sc["retryable"] is retryable, sc
    for key in ("error_message", "suggested_action", "correlation_id"):
        assert isinstance(sc[key], str) and sc[key], sc
    text = _text(result)
    assert code in text and sc["suggested_action"] in text, text  # LibreChat shows only `content`


# --- MCP Inspector CLI --------------------------------------------------------------


def test_inspector_lists_health_tool_with_schemas_and_annotations(home: Path, tmp_path: Path) -> None:
    proc, doc = inspector(home, tmp_path, "tools/list")
    assert proc.returncode == 0 and doc is not None, _describe(proc)
    tools = {tool["name"]: tool for tool in doc["result"]["tools"]}
    assert HEALTH in tools, _describe(proc)
    health = tools[HEALTH]
    assert health["inputSchema"]["type"] == "object"
    assert set(health["inputSchema"]["properties"]) >= {"include_detailed", "check_dependencies"}
    assert health["outputSchema"]["type"] == "object"
    assert "status" in health["outputSchema"]["properties"]
    assert health["annotations"]["readOnlyHint"] is True
    assert "lightrag_debug" not in tools  # test-only tool hidden without LIGHTRAG_MCP_DEBUG_METHODS


def test_inspector_calls_health(home: Path, tmp_path: Path) -> None:
    proc, doc = inspector(home, tmp_path, "tools/call", "--tool-name", HEALTH)
    assert proc.returncode == 0 and doc is not None, _describe(proc)
    result = doc["result"]
    assert result.get("isError") is False, _describe(proc)
    sc = result["structuredContent"]
    assert sc["status"] in {"healthy", "starting"}, sc  # the worker may still be starting
    assert {"front", "worker"} <= set(sc["components"]), sc
    assert "state" in sc["components"]["worker"], sc
    # LibreChat drops structuredContent: the text must carry the same answer.
    assert f"status: {sc['status']}" in _text(result).splitlines()


def test_inspector_unknown_tool_exits_5(home: Path, tmp_path: Path) -> None:
    # The Inspector looks the name up in tools/list itself and never sends the call:
    # exit 5 (TOOL_ERROR) with a `tool_not_found` envelope on stderr.
    proc, _ = inspector(home, tmp_path, "tools/call", "--tool-name", "lightrag_no_such_tool")
    assert proc.returncode == 5, _describe(proc)
    assert "not found" in proc.stderr, _describe(proc)


def test_inspector_invalid_arguments_give_is_error_naming_the_field(home: Path, tmp_path: Path) -> None:
    # A number, not a string: the Inspector coerces *string* values to the schema's type
    # even with --tool-args-json ("yes" for a boolean is sent as false), so a string would
    # never reach the server as invalid.
    proc, doc = inspector(
        home, tmp_path, "tools/call", "--tool-name", HEALTH, "--tool-args-json", '{"include_detailed": 1}'
    )
    assert proc.returncode == 5, _describe(proc)  # isError result -> TOOL_ERROR
    assert doc is not None, _describe(proc)
    result = doc["result"]
    _assert_error_envelope(result, "INVALID_PARAMETER", retryable=False)
    assert "include_detailed" in _text(result), _describe(proc)


# --- the official TypeScript SDK ------------------------------------------------------


def test_ts_sdk_health_alias_schema_and_errors(home: Path) -> None:
    doc, _ = ts_client(
        home,
        [
            {"op": "list_tools"},
            _wait_healthy(),
            {"op": "call", "label": "alias", "name": "health_check", "arguments": {"include_detailed": True}},
            {"op": "call", "label": "bad-args", "name": HEALTH, "arguments": {"include_detailed": "yes"}},
            {"op": "call", "label": "unknown", "name": "lightrag_no_such_tool", "expect_error": True},
            {"op": "ping"},
        ],
    )
    assert doc["server"]["name"] == "lightrag-mcp"
    assert "tools" in doc["server"]["capabilities"]
    assert doc["server"]["instructions"]

    tools = {tool["name"]: tool for tool in _step(doc, "list_tools")["result"]["tools"]}
    schema = tools[HEALTH]["outputSchema"]
    assert tools[HEALTH]["annotations"]["readOnlyHint"] is True

    health = _step(doc, "health")
    # No `error`: the SDK validated structuredContent against the advertised outputSchema
    # (it does so after listTools) and did not throw. Double-check on our side.
    assert "error" not in health and health["result"]["isError"] is False
    sc = health["result"]["structuredContent"]
    jsonschema.validate(sc, schema)
    assert sc["status"] == "healthy" and sc["components"]["worker"]["state"] == "ready", sc

    alias = _step(doc, "alias")
    assert "error" not in alias, alias
    assert alias["result"]["isError"] is False
    jsonschema.validate(alias["result"]["structuredContent"], schema)
    assert alias["result"]["structuredContent"]["status"] == "healthy"

    # isError with structuredContent: the SDK validates it against the outputSchema too
    # (see the report), so it must not throw here.
    bad = _step(doc, "bad-args")
    assert "error" not in bad, f"the TS SDK threw on an isError result: {bad['error']}"
    _assert_error_envelope(bad["result"], "INVALID_PARAMETER", retryable=False)
    assert "include_detailed" in _text(bad["result"])
    jsonschema.validate(bad["result"]["structuredContent"], schema)

    unknown = _step(doc, "unknown")
    assert unknown["error"]["code"] == -32602, unknown
    assert "lightrag_no_such_tool" in unknown["error"]["message"]


def test_ts_sdk_error_results_pass_output_schema_validation(home: Path) -> None:
    """The TS SDK validates structuredContent against outputSchema even on isError results:
    every advertised tool's error envelope must pass its own outputSchema, or LibreChat/VS Code
    get an exception instead of the error text."""
    doc, _ = ts_client(
        home,
        [
            {"op": "list_tools"},
            _wait_healthy("before"),
            {"op": "call_each", "label": "bad-args-everywhere", "arguments": {"__bogus__": 1}},
            {"op": "call", "label": "crash", "name": "lightrag_debug", "arguments": {"action": "crash"}},
            _wait_healthy("after"),
        ],
        env={"LIGHTRAG_MCP_DEBUG_METHODS": "1", "LIGHTRAG_MCP_TOOLS": "all"},
    )
    names = {tool["name"] for tool in _step(doc, "list_tools")["result"]["tools"]}
    assert {HEALTH, "health_check", "lightrag_debug"} <= names

    calls = _step(doc, "bad-args-everywhere")["calls"]
    assert {call["name"] for call in calls} == names
    for call in calls:
        assert "error" not in call, f"{call['name']}: the TS SDK threw: {call['error']}"
        _assert_error_envelope(call["result"], "INVALID_PARAMETER", retryable=False)
        assert "__bogus__" in _text(call["result"]), call

    crash = _step(doc, "crash")
    assert "error" not in crash, f"the TS SDK threw on the crash result: {crash['error']}"
    _assert_error_envelope(crash["result"], "WORKER_RESTARTED", retryable=True)

    after = _step(doc, "after")["result"]["structuredContent"]
    assert after["components"]["worker"]["restarts"] >= 1, after


def test_ts_sdk_progress_notifications(home: Path) -> None:
    doc, _ = ts_client(
        home,
        [
            {"op": "list_tools"},
            {
                "op": "call",
                "label": "sleep",
                "name": "lightrag_debug",
                "arguments": {"action": "sleep", "seconds": 1},
                "progress": True,
            },
        ],
        env={"LIGHTRAG_MCP_DEBUG_METHODS": "1"},
    )
    sleep = _step(doc, "sleep")
    assert sleep["result"]["isError"] is False, sleep
    progress = sleep["progress"]
    assert len(progress) >= 1, sleep
    values = [p["progress"] for p in progress]
    assert values == sorted(values) and len(set(values)) == len(values), progress  # strictly increasing


def test_librechat_launch_shape_writes_nothing_into_cwd(home: Path, tmp_path: Path) -> None:
    """Absolute venv python, `-m mcp_front`, an unrelated cwd and only LibreChat's env."""
    cwd = tmp_path / "unrelated-cwd"
    cwd.mkdir()
    doc, proc = ts_client(
        home,
        [
            {"op": "list_tools"},
            _wait_healthy(),
            {"op": "call", "label": "deps", "name": HEALTH, "arguments": {"check_dependencies": True}},
        ],
        cwd=cwd,
    )
    names = [tool["name"] for tool in _step(doc, "list_tools")["result"]["tools"]]
    from mcp_front.catalogue import TOOLS, Catalogue

    expected = [tool.name for tool in Catalogue(TOOLS).list_tools()]
    assert names == expected and "lightrag_debug" not in names, names  # the default profile
    deps = _step(doc, "deps")["result"]
    assert deps["isError"] is False, deps
    assert deps["structuredContent"]["status"] == "healthy", deps["structuredContent"]

    assert list(cwd.iterdir()) == [], f"the server wrote into its cwd: {list(cwd.iterdir())}\n{_describe(proc)}"
    data = home / ".local" / "share" / "lightrag-mcp"
    assert data.is_dir(), f"no data dir under HOME: {sorted(str(p) for p in home.rglob('*'))}"
    assert any(data.iterdir()), "the data dir is empty"
    assert (data / "default").is_dir(), sorted(str(p.relative_to(home)) for p in data.rglob("*"))


# --- The core job through real clients ------------------------------------------------


def test_ts_sdk_uploads_a_pdf_and_gets_the_fact_and_its_source_back(home: Path) -> None:
    import base64

    from tests.fixtures.documents import make_pdf

    pdf = make_pdf(
        ["Cover page of the fleet report.", "The PELICAN-404 glider was designed by Ines Duarte in Porto."]
    )
    doc, _ = ts_client(
        home,
        [
            _wait_healthy(),
            {
                "op": "call",
                "label": "upload",
                "name": "upload_to_lightrag",
                "progress": True,
                "arguments": {
                    "filename": "fleet-report.pdf",
                    "content": base64.b64encode(pdf).decode(),
                    "mimeType": "application/pdf",
                },
            },
            {"op": "call", "label": "query", "name": "query_lightrag", "arguments": {"query": "Who designed the PELICAN-404 glider?"}},
        ],
    )
    upload = _step(doc, "upload")["result"]
    assert upload["structuredContent"]["status"] == "processed" and upload["structuredContent"]["pages"] == 2
    answer = _text(_step(doc, "query")["result"])
    assert "Ines Duarte" in answer and "fleet-report.pdf" in answer


def test_inspector_uploads_markdown_and_queries_it(home: Path, tmp_path: Path) -> None:
    import base64

    content = base64.b64encode(b"# Notes\n\nThe IBIS-12 buoy records tides near Galway.").decode()
    args = json.dumps({"filename": "notes.md", "content": content, "mimeType": "text/markdown"})
    proc, doc = inspector(home, tmp_path, "tools/call", "--tool-name", "upload_to_lightrag", "--tool-args-json", args)
    assert proc.returncode == 0 and doc is not None, _describe(proc)
    assert doc["result"]["structuredContent"]["status"] == "processed"
    query = json.dumps({"query": "Where does the IBIS-12 buoy record tides?", "mode": "naive"})
    proc, doc = inspector(home, tmp_path, "tools/call", "--tool-name", "lightrag_query", "--tool-args-json", query)
    assert proc.returncode == 0 and doc is not None, _describe(proc)
    assert "Galway" in _text(doc["result"]) and "notes.md" in _text(doc["result"])


def test_vs_code_style_client_indexes_a_folder_lists_deletes_and_the_graph_forgets(home: Path, tmp_path: Path) -> None:
    """The issue-5 'done when': roots + progress like VS Code, folder → list → delete → graph."""
    from rag_worker.storage.catalog import doc_id_for

    workspace = tmp_path / "notes"
    workspace.mkdir()
    (workspace / "gryphon.md").write_text("# Engines\n\nThe GRYPHON-5 engine was designed by Sofia Brandt in Graz.\n")
    (workspace / "harbor.md").write_text("# Harbor\n\nThe harbor crane in Graz was repaired by Lukas Weber.\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "tides.md").write_text("# Tides\n\nTide tables for Graz do not exist; Graz is inland.\n")
    gryphon_id = doc_id_for("notes/gryphon.md")
    exact = {"search_options": {"search_type": "exact"}}
    doc, _ = ts_client(
        home,
        [
            _wait_healthy(),
            {"op": "call", "label": "index", "name": "lightrag_insert_file", "progress": True, "arguments": {"file_path": "."}},
            {"op": "call", "label": "list", "name": "lightrag_list_documents", "arguments": {"sort_by": "title", "sort_order": "asc"}},
            {"op": "call", "label": "before", "name": "lightrag_search_entities", "arguments": {"query": "GRYPHON-5", **exact}},
            {"op": "call", "label": "graz", "name": "lightrag_search_entities", "arguments": {"query": "Graz", **exact}},
            {"op": "call", "label": "delete", "name": "lightrag_delete_documents", "arguments": {"document_ids": [gryphon_id]}},
            {"op": "call", "label": "after", "name": "lightrag_search_entities", "arguments": {"query": "GRYPHON-5", **exact}},
            {"op": "call", "label": "graz-after", "name": "lightrag_get_entity_relationships", "arguments": {"entity_id": "Graz"}},
            {"op": "call", "label": "list-after", "name": "lightrag_list_documents", "arguments": {}},
        ],
        roots=[workspace],
    )
    index = _step(doc, "index")
    summary = index["result"]["structuredContent"]["summary"]
    assert (summary["added"], summary["failed"]) == (3, 0) and index["progress"], index
    listed = _step(doc, "list")["result"]["structuredContent"]
    assert [d["filename"] for d in listed["documents"]] == ["notes/gryphon.md", "notes/harbor.md", "notes/sub/tides.md"]
    assert _step(doc, "before")["result"]["structuredContent"]["total_matches"] == 1
    assert _step(doc, "graz")["result"]["structuredContent"]["total_matches"] == 1
    deleted = _step(doc, "delete")["result"]["structuredContent"]
    assert deleted["deleted_documents"] == [gryphon_id] and not deleted["failed_deletions"]
    assert _step(doc, "after")["result"]["structuredContent"]["total_matches"] == 0  # only that document said it
    graz = _step(doc, "graz-after")["result"]
    assert not graz["isError"] and "GRYPHON-5" not in _text(graz)  # the shared entity stays, without it
    remaining = _step(doc, "list-after")["result"]["structuredContent"]["documents"]
    assert sorted(d["filename"] for d in remaining) == ["notes/harbor.md", "notes/sub/tides.md"]


def test_ts_sdk_lists_the_default_profile_and_every_tool_answers(home: Path, tmp_path: Path) -> None:
    """Every advertised tool, called by the official TypeScript SDK (which checks each result
    against the tool's outputSchema), does its job; the librechat profile lists its seven."""
    import base64

    from mcp_front.catalogue import TOOLS, Catalogue
    from rag_worker.storage.catalog import doc_id_for

    (tmp_path / "shelf").mkdir()
    (tmp_path / "shelf" / "otter.md").write_text("# Otters\n\nThe OTTER-12 buoy was deployed by Mia Lund.\n")
    note = "The WALRUS-3 sled was built by Erik Dahl."
    calls: dict[str, dict[str, Any]] = {
        "upload_to_lightrag": {
            "filename": "zebra.md",
            "content": base64.b64encode(b"# Zebra\n\nThe ZEBRA-7741 project was led by Alice Johnson.\n").decode(),
            "mimeType": "text/markdown",
        },
        "lightrag_insert_text": {"text": note, "title": "walrus"},
        "lightrag_get_status": {},
        "lightrag_query": {"query": "Who led the ZEBRA-7741 project?", "mode": "naive"},
        "lightrag_insert_file": {"file_path": "shelf/otter.md"},
        "lightrag_batch_process": {"items": [{"item_type": "text", "content": "The EMU-9 drone flies.", "title": "emu"}]},
        "lightrag_list_documents": {"workspace": "default"},
        "lightrag_read_document": {"document": "zebra.md"},
        "lightrag_list_knowledge_bases": {},
        "lightrag_delete_documents": {"document_ids": [doc_id_for("walrus.txt")]},
        "lightrag_get_graph": {"output_format": "mermaid", "max_nodes": 20},
        "lightrag_search_entities": {"query": "Alice Jonson"},
        "lightrag_update_entity": {
            "entity_id": "Quokka Station",
            "updates": {"description": "A research station on Rottnest.", "entity_type": "location"},
            "update_options": {"create_if_missing": True},
        },
        "lightrag_get_entity_relationships": {"entity_id": "Quokka Station"},
        "lightrag_clear_cache": {"cache_types": ["query"]},
        "lightrag_get_system_stats": {},
        "lightrag_health_check": {"include_detailed": True},
    }
    default = [tool.name for tool in Catalogue(TOOLS).list_tools()]
    assert sorted(calls) == sorted(default)
    steps: list[dict[str, Any]] = [_wait_healthy(), {"op": "list_tools", "label": "tools"}]
    steps += [{"op": "call", "label": name, "name": name, "arguments": arguments} for name, arguments in calls.items()]
    doc, _ = ts_client(home, steps, env={"LIGHTRAG_MCP_ALLOWED_DIRS": str(tmp_path)})
    assert [tool["name"] for tool in _step(doc, "tools")["result"]["tools"]] == default
    for name in calls:
        result = _step(doc, name)["result"]
        assert not result.get("isError"), (name, _text(result)[:2000])
        assert _text(result).strip(), name  # LibreChat shows only the text
    assert "Alice Johnson" in _text(_step(doc, "lightrag_search_entities")["result"])
    assert _step(doc, "lightrag_delete_documents")["result"]["structuredContent"]["deleted_documents"]
    assert "```mermaid" in _text(_step(doc, "lightrag_get_graph")["result"])
    assert "ZEBRA-7741" in _text(_step(doc, "lightrag_read_document")["result"])

    librechat, _ = ts_client(home, [{"op": "list_tools", "label": "tools"}], env={"LIGHTRAG_MCP_TOOLS": "librechat"})
    # Over the wire, the profile the catalogue declares (test_catalogue pins its names).
    assert [tool["name"] for tool in _step(librechat, "tools")["result"]["tools"]] == list(PROFILE_TOOLS["librechat"])
