"""Raw protocol abuse against `python -m mcp_front` (issue 8, item 1, second half).

Newline-delimited JSON-RPC written straight to the front's stdin: requests before
`initialize`, malformed JSON, JSON that is not JSON-RPC, unknown methods, bad params,
notifications with bad params, duplicate ids in flight, JSON-RPC batches, a ~50 MB valid
tools/call line and a 50 MB line of garbage. Whatever the front answers is recorded; the
front must keep serving afterwards (initialize, tools/list, tools/call), write nothing but
JSON-RPC on stdout and keep its memory bounded.

What the MCP SDK (mcp 2.3.0) does with lines it cannot parse or validate as JSON-RPC is
to drop them without an answer (its stdio reader hands the error to a dispatcher that only
logs it). JSON-RPC 2.0 asks for a -32700 / -32600 error, and a client that sent an id then
waits for its own timeout: `test_unparseable_lines_get_a_json_rpc_error` pins that as an
expected failure, so it turns red (XPASS, strict) the day the front answers them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.reliability import recorder
from tests.reliability.conftest import PROTOCOL_VERSION, RawServer, raw_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HUGE = 50_000_000
RSS_GROWTH_BOUND_MB = 400.0  # the front holds a 50 MB line a few times over while parsing it, then frees it


def request(request_id: Any, method: Any, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


INITIALIZE_PARAMS = {
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "abuse", "version": "1"},
}
MALFORMED: list[tuple[str, str | bytes]] = [
    ("empty line", ""),
    ("blank line", "   \t "),
    ("not json", "{not json"),
    ("truncated request", '{"jsonrpc": "2.0", "id": 901, "method": "tools/list"'),
    ("trailing garbage", '{"jsonrpc": "2.0", "id": 902, "method": "ping"} xyz'),
    ("invalid utf-8", b'\xff\xfe\xfd{"jsonrpc": "2.0", "id": 903, "method": "ping"}'),
    ("control bytes", b"\x00\x01\x02\x1b[2J"),
    ("single quotes", "{'jsonrpc': '2.0', 'id': 904, 'method': 'ping'}"),
    (
        "lone surrogate escape",
        '{"jsonrpc": "2.0", "id": 905, "method": "tools/call", "params": '
        '{"name": "lightrag_query", "arguments": {"query": "\\ud800 lone"}}}',
    ),
    (
        "nesting over the parser limit",
        '{"jsonrpc": "2.0", "id": 906, "method": "tools/call", "params": '
        '{"name": "lightrag_query", "arguments": {"query": "abc", "deep": ' + "[" * 5000 + "]" * 5000 + "}}}",
    ),
]
NOT_JSON_RPC: list[tuple[str, str | bytes]] = [
    ("array of numbers", "[1, 2, 3]"),
    ("number", "42"),
    ("string", '"tools/list"'),
    ("null", "null"),
    ("true", "true"),
    ("empty object", "{}"),
    ("object without method", '{"jsonrpc": "2.0", "id": 911}'),
    ("jsonrpc 1.0", '{"jsonrpc": "1.0", "id": 912, "method": "ping"}'),
    ("no jsonrpc member", '{"id": 913, "method": "ping"}'),
    ("id is an object", '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}'),
    ("id is a float", '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}'),
    ("id is true", '{"jsonrpc": "2.0", "id": true, "method": "ping"}'),
    ("method is a number", '{"jsonrpc": "2.0", "id": 914, "method": 42}'),
    ("params is an array", request(915, "tools/call", [1, 2])),
    ("params is a string", request(916, "tools/list", "all")),
    ("response to nothing", '{"jsonrpc": "2.0", "id": 917, "result": {}}'),
    ("error to nothing", '{"jsonrpc": "2.0", "id": 918, "error": {"code": 1, "message": "x"}}'),
]
UNKNOWN_METHODS = ["nope", "tools/nope", "", "rpc.discover", "resources/nope", "prompts/list", "m" * 100_000]
BAD_PARAMS = [
    ("tools/call without params", request(931, "tools/call")),
    ("tools/call name is a number", request(932, "tools/call", {"name": 5, "arguments": {}})),
    ("tools/call arguments is a list", request(933, "tools/call", {"name": "lightrag_health_check", "arguments": [1]})),
    ("tools/call unknown tool", request(934, "tools/call", {"name": "rm -rf /", "arguments": {}})),
    ("tools/call 1 MB tool name", request(935, "tools/call", {"name": "x" * 1_000_000, "arguments": {}})),
    ("initialize again with bad params", request(936, "initialize", {"protocolVersion": 42})),
    ("tools/list with a bad cursor", request(937, "tools/list", {"cursor": {"a": 1}})),
    ("resources/read without params", request(943, "resources/read")),
    ("resources/read uri is a number", request(944, "resources/read", {"uri": 5})),
    ("resources/read of a path", request(945, "resources/read", {"uri": "lightrag://documents/../../etc/passwd"})),
    ("resources/list with a forged cursor", request(946, "resources/list", {"cursor": "offset:-1"})),
]
BAD_NOTIFICATIONS: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "never-sent"}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}, "reason": 5}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 42},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": {}, "progress": "half"}},
    {"jsonrpc": "2.0", "method": "notifications/initialized", "params": "again"},
    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": [1, 2]},
    {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": "y" * 100_000}},
]
BATCHES: list[tuple[str, str | bytes]] = [
    ("batch of requests", json.dumps([json.loads(request(941, "ping")), json.loads(request(942, "tools/list"))])),
    ("empty batch", "[]"),
    ("batch of garbage", "[1, {}, null]"),
]


async def barrier(server: RawServer) -> None:
    """Return once the front has read every line sent so far (it answers a ping after them)."""
    answer = await server.request("ping", timeout=120)
    assert answer is not None and answer.get("result") == {}, answer


async def answers_to(server: RawServer, line: str | bytes, settle: float = 0.3) -> list[dict[str, Any]]:
    """Send one line; the messages the front wrote in reply (read after a ping barrier)."""
    start = len(server.messages)
    await server.send(line)
    await barrier(server)
    await anyio.sleep(settle)  # replies to requests handled concurrently with the ping
    return [
        m
        for m in server.messages[start:]
        if not (m.get("result") == {} and isinstance(m.get("id"), int) and m["id"] > 10**6)
    ]


def summary(replies: list[dict[str, Any]]) -> str:
    if not replies:
        return "no answer"
    return ", ".join(f"error {r['error']['code']}" if "error" in r else "result" for r in replies)


def silent_is_right(label: str) -> bool:
    """Lines that must get no answer: notifications, responses to nothing, blank lines."""
    return label.startswith("notification ") or label in {
        "response to nothing",
        "error to nothing",
        "empty line",
        "blank line",
    }


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1e6


def worker_pid_of(health: dict[str, Any]) -> int:
    return int(health["components"]["worker"]["pid"])


async def test_abusive_lines_are_answered_or_ignored_and_the_front_keeps_serving(home: Path) -> None:
    observed: dict[str, str] = {}
    tried = 0
    async with raw_server(home, LIGHTRAG_MCP_MAX_REQUESTS="0") as server:
        # Before initialize: ping is allowed, an unknown method is -32601, the rest is refused.
        for label, line in [
            ("ping before initialize", request(1, "ping")),
            ("unknown method before initialize", request(2, "nope")),
            ("tools/list before initialize", request(3, "tools/list")),
            ("tools/call before initialize", request(4, "tools/call", {"name": "lightrag_health_check"})),
        ]:
            tried += 1
            replies = await answers_to(server, line)
            observed[label] = summary(replies)
            assert len(replies) == 1, (label, replies)
        assert observed["ping before initialize"] == "result"
        assert observed["unknown method before initialize"] == f"error {METHOD_NOT_FOUND}"
        assert observed["tools/list before initialize"].startswith("error")

        await server.initialize()
        ready = await server.wait_ready()
        worker_pid = worker_pid_of(ready)
        tried += 1
        again = await answers_to(server, request(5, "initialize", INITIALIZE_PARAMS))
        observed["initialize twice"] = summary(again)

        for label, raw in MALFORMED + NOT_JSON_RPC + BATCHES:
            tried += 1
            observed[label] = summary(await answers_to(server, raw))
            assert server.alive(), label
        # JSON-RPC responses the front never asked for must not be answered
        assert observed["response to nothing"] == observed["error to nothing"] == "no answer"

        for method in UNKNOWN_METHODS:
            tried += 1
            replies = await answers_to(server, request(920, method))
            observed[f"unknown method {method[:20]!r}"] = summary(replies)
            assert [r.get("error", {}).get("code") for r in replies] == [METHOD_NOT_FOUND], (method[:50], replies)
            assert len(json.dumps(replies)) < 300_000  # the SDK echoes the method name in `data`

        for label, line in BAD_PARAMS:
            tried += 1
            replies = await answers_to(server, line)
            observed[label] = summary(replies)
            assert len(replies) == 1 and ("error" in replies[0] or replies[0]["result"].get("isError")), (
                label,
                replies,
            )

        # Notifications are never answered, whatever their params.
        for index, notification in enumerate(BAD_NOTIFICATIONS):
            tried += 1
            replies = await answers_to(server, json.dumps(notification))
            observed[f"notification {index} {notification['method']}"] = summary(replies)
            assert replies == [], (notification["method"], replies)

        # Two requests in flight with one id: a slow ingestion and a fast health check.
        tried += 2
        slow = request(
            950,
            "tools/call",
            {"name": "lightrag_insert_text", "arguments": {"text": "Ilse Marwick charts the Tarn Reservoir."}},
        )
        fast = request(950, "tools/call", {"name": "lightrag_health_check", "arguments": {}})
        await server.send(slow)
        await server.send(fast)
        duplicates = await server.responses(950, count=2, timeout=120)
        observed["duplicate id in flight"] = summary(duplicates)
        assert len(duplicates) >= 1, duplicates
        # The ids the front answered later are its own again: a third use of the id is served.
        tried += 1
        reuse = await answers_to(server, request(950, "ping"))
        assert any(r.get("result") == {} for r in reuse), reuse

        # 50 MB lines: a valid call with a 50 MB argument, a valid 50 MB upload, 50 MB of garbage.
        front_before = server.rss_mb()
        worker_before = rss_mb(worker_pid)
        huge_query = request(960, "tools/call", {"name": "lightrag_query", "arguments": {"query": "A" * HUGE}})
        huge_upload = request(
            961,
            "tools/call",
            {
                "name": "upload_to_lightrag",
                "arguments": {
                    "filename": "huge.txt",
                    "content": base64.b64encode(b"a" * (HUGE * 3 // 4)).decode(),
                    "mimeType": "text/plain",
                },
            },
        )
        tried += 3
        for label, line in [
            ("50 MB query", huge_query),
            ("50 MB upload", huge_upload),
            ("50 MB garbage line", "x" * HUGE),
        ]:
            replies = await answers_to(server, line, settle=1.0)
            if label != "50 MB garbage line":
                assert len(replies) == 1 and replies[0]["result"]["isError"], (label, str(replies)[:500])
                observed[label] = replies[0]["result"]["structuredContent"]["error_code"]
                assert len(json.dumps(replies)) < 100_000  # the error does not echo the 50 MB
            else:
                observed[label] = summary(replies)
        del huge_query, huge_upload
        await anyio.sleep(2)
        front_growth = server.rss_mb() - front_before
        worker_growth = rss_mb(worker_pid) - worker_before

        # Still serving: tools/list, a tool call, the same worker, nothing but JSON-RPC on stdout.
        listed = await server.request("tools/list")
        assert listed is not None and len(listed["result"]["tools"]) >= 10, listed
        health = await server.health()
        text_call = await server.call_tool(
            "lightrag_insert_text", {"text": "Odile Fenwick restored the Harrow Organ in Ghent."}
        )
        assert text_call is not None and not text_call["result"].get("isError"), text_call
        found = await server.call_tool("query_lightrag", {"query": "Who restored the Harrow Organ?"})
        assert found is not None and "Odile Fenwick" in found["result"]["content"][0]["text"], found
        unanswered = [label for label, what in observed.items() if what == "no answer" and not silent_is_right(label)]
        recorder.record(
            "protocol",
            "raw_abuse",
            inputs_tried=tried,
            calls_answered=sum(what != "no answer" for what in observed.values()),
            ignored_as_they_should=sum(silent_is_right(label) for label in observed),
            calls_unanswered=len(unanswered),
            front_crashes=int(not server.alive()),
            worker_restarts_from_input=health["components"]["worker"]["restarts"],
            rss_growth_front_mb=round(front_growth, 1),
            rss_growth_worker_mb=round(worker_growth, 1),
            non_protocol_stdout_lines=len(server.bad_lines),
            observed=observed,
        )
        print("protocol abuse observed:", json.dumps(observed, indent=1))
        assert server.alive() and server.bad_lines == []
        assert worker_pid_of(health) == worker_pid and health["components"]["worker"]["restarts"] == 0
        assert front_growth < RSS_GROWTH_BOUND_MB, front_growth
    assert server.process.returncode == 0  # closing stdin is a clean shutdown, after all of that


# Lines that carry an id, or cannot be parsed at all: JSON-RPC 2.0 wants an error for each
# (-32700 Parse error / -32600 Invalid Request, id null when it cannot be read).
MUST_BE_ANSWERED = [
    ("not json", "{not json", None),
    ("truncated request", '{"jsonrpc": "2.0", "id": 971, "method": "tools/list"', 971),
    (
        "lone surrogate escape",
        '{"jsonrpc": "2.0", "id": 972, "method": "tools/call", "params": '
        '{"name": "lightrag_query", "arguments": {"query": "\\ud800 lone"}}}',
        972,
    ),
    (
        "nesting over the parser limit",
        '{"jsonrpc": "2.0", "id": 973, "method": "tools/call", "params": '
        '{"name": "lightrag_query", "arguments": {"query": "abc", "deep": ' + "[" * 300 + "]" * 300 + "}}}",
        973,
    ),
    ("params is an array", request(974, "tools/call", [1, 2]), 974),
    ("method is a number", '{"jsonrpc": "2.0", "id": 975, "method": 42}', 975),
    ("object without method", '{"jsonrpc": "2.0", "id": 976}', 976),
    ("empty batch", "[]", None),
]


async def test_unparseable_lines_get_a_json_rpc_error(home: Path) -> None:
    """The SDK's stdio reader drops such lines; mcp_front.wire answers them (-32700/-32600)."""
    async with raw_server(home) as server:
        await server.initialize()
        silent = []
        for label, line, request_id in MUST_BE_ANSWERED:
            replies = await answers_to(server, line)
            errors = [r for r in replies if "error" in r and r.get("id") in {None, request_id}]
            if not errors or errors[0]["error"]["code"] not in {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS}:
                silent.append(label)
        recorder.record(
            "protocol",
            "unparseable_lines_answered",
            inputs_tried=len(MUST_BE_ANSWERED),
            calls_unanswered=len(silent),
            unanswered=silent,
        )
        assert server.alive()
        assert silent == [], f"no JSON-RPC error for: {', '.join(silent)}"
