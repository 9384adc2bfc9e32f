"""Fuzzing every tool through the real front (issue 8, item 1).

Arguments are generated with hypothesis from and around each tool's inputSchema: valid-ish
ones (derived from the schema, biased towards the server's real documents, files and
entities so they do real work) and hostile ones (wrong types, missing required fields,
unknown fields, 1 MB strings, unicode edge cases, deep nesting, extreme numbers). They go
through the SDK's stdio client; what the SDK cannot send (NaN, Infinity, 400-digit
integers, nesting deeper than its serializer allows, lone surrogate escapes) goes as raw
JSON-RPC lines. Every call must be answered (a result, an isError result or a JSON-RPC
error) within a bound, the front must stay up and the worker must never restart because
of an input.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import psutil
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from mcp.shared.exceptions import MCPError

from mcp_front.catalogue import TOOLS, Catalogue
from tests.integration.harness import Client, running_server
from tests.reliability import recorder
from tests.reliability.conftest import raw_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

CATALOGUE = Catalogue(TOOLS, profile="all")
TOOL_NAMES = [name for tool in CATALOGUE.tools for name in (tool.name, *tool.aliases)]
VALID_PER_TOOL = 200 if recorder.LONG else 50
HOSTILE_PER_TOOL = 500 if recorder.LONG else 100
ANSWER_BOUND_S = 150.0  # ingestion waits LIGHTRAG_MCP_WAIT_SECONDS (20 here) then answers with a track id
MAX_ERROR_MESSAGE = 4000  # an error message is read by a model: bounded whatever the input
UNANSWERED_CODES = {types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT}

SERVER_ENV: dict[str, Any] = {
    "LIGHTRAG_MCP_TOOLS": "all",  # aliases listed too: the SDK client checks every result against its outputSchema
    "LIGHTRAG_MCP_MAX_REQUESTS": "0",  # no recycling: a worker pid change can only be a restart
    "LIGHTRAG_MCP_WAIT_SECONDS": "20",
    "LIGHTRAG_MCP_URL_ALLOWED_HOSTS": "example.invalid",  # URL items never reach the network
    "LIGHTRAG_MCP_URL_TIMEOUT": "2",
}

ZEBRA_MD = (
    "# Zebra Project\n\nThe ZEBRA-7741 project was led by Alice Johnson at Acme Corporation in Berlin.\n\n"
    "## Budget\n\nThe ZEBRA-7741 budget was 42 million euros, approved by the Nimbus Council.\n"
)
REACTOR_MD = (
    "# Reactor Review\n\nThe QUASAR-5521 reactor was commissioned by Helena Vargas in Lisbon. Helena Vargas "
    "chose a molten salt design because it runs at atmospheric pressure.\n"
)
NOTES_TEXT = "Marco Ricci inspected the cooling loops of the QUASAR-5521 reactor for the Nimbus Council."
CORPUS = {
    "notes.md": "# Notes\n\nOrion Vance maintains the Kestrel pipeline at Borealis Labs in Oslo.\n",
    "tool.py": "class BudgetPlanner:\n    '''Plans reactor budgets for Helena Vargas.'''\n\n    def total(self):\n        return 42\n",
}
ENTITIES = ["Alice Johnson", "Acme Corporation", "Berlin", "ZEBRA-7741", "Helena Vargas", "QUASAR-5521", "Lisbon"]
QUESTIONS = ["Who led the ZEBRA-7741 project?", "Who commissioned the QUASAR-5521 reactor?", "budget"]

# Strings that have broken parsers, terminals, renderers and file systems.
EDGE_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x00" * 1000,
    "\x1b[31mred\x1b[0m",
    "\u202eevil.exe\u202c",
    "\u200f\u200e\u200b\u2060",
    "\ufeffBOM",
    "\uffff\ufffe\ufffd",
    "\U0010ffff\U000e0001",
    "👩‍👩‍👧‍👦🏳️‍🌈🇺🇳",
    "e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301",
    "Z\u0334\u0321\u0322\u031b\u0353\u0317a\u0337\u0327l\u0335g\u0336o\u0337",
    "مرحبا بالعالم",
    "שלום עולם",
    "日本語のテキスト",
    "İıßẞǅ",
    "\u0085\u2028\u2029",
    "\r\n\t\v\f",
    "../../../../etc/passwd",
    "/etc/shadow",
    "C:\\Windows\\System32\\config",
    "%s%n%x{0}{}",
    "${HOME}$(id)`id`",
    "' OR 1=1; DROP TABLE docs; --",
    "<script>alert(1)</script>",
    "(a+)+$",
    "((((((((((((((((((((a))))))))))))))))))))",
    "[",
    "\\",
    "null",
    "NaN",
    "-0",
    "1e308",
    "１２３",
]
SPECIAL_NUMBERS = [0, -0.0, -1, 1, 0.5, 5e-324, 1e308, -1e308, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 10**30]
HUGE_SIZES = [100_000, 1_000_000]


def nested(depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value] if kind == "array" else {"a": value}
    return value


def nested_json(depth: int, kind: str) -> str:
    """`nested(depth, kind)` as JSON text, for depths Python's json module cannot encode."""
    opening, closing = ("[", "]") if kind == "array" else ('{"a": ', "}")
    return opening * depth + '"leaf"' + closing * depth


HUGE_STRINGS = st.builds(
    lambda char, size: char * (size // len(char.encode())),
    st.sampled_from(["A", "é", "😀", "\x00", "\u202e", "e\u0301"]),
    st.sampled_from(HUGE_SIZES),
)
HOSTILE_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(SPECIAL_NUMBERS),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(EDGE_TEXT),
    st.text(max_size=40),
)
HOSTILE_VALUES = st.one_of(
    HOSTILE_SCALARS,
    HUGE_STRINGS,
    st.lists(HOSTILE_SCALARS, max_size=4),
    st.dictionaries(st.text(max_size=8), HOSTILE_SCALARS, max_size=4),
    st.builds(nested, st.sampled_from([20, 100, 150]), st.sampled_from(["array", "object"])),
    st.sampled_from([["x"] * 20_000, {f"k{i}": i for i in range(5_000)}]),
)
HOSTILE_KEYS = st.one_of(
    st.sampled_from(["__proto__", "constructor", "", "\x00", "userId", "_meta", "workspace", "k" * 10_000]),
    st.text(min_size=1, max_size=20),
)


# --- schema → strategy ------------------------------------------------------------------


def from_schema(schema: dict[str, Any], hints: dict[str, SearchStrategy[Any]], name: str = "") -> SearchStrategy[Any]:
    """Values for a JSON Schema (the subset protocol/schema.py builds), mixed with `hints`:
    strategies for properties of that name that point at the server's real data."""
    if "anyOf" in schema:
        return st.one_of([from_schema(option, hints, name) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": one}, hints, name) for one in kind])
    base: SearchStrategy[Any]
    if kind == "string":
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 1000), 80)
        if "pattern" in schema:
            base = st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: low <= len(s) <= high)
        else:
            base = st.one_of(
                st.text(min_size=low, max_size=high), st.sampled_from([t for t in EDGE_TEXT if len(t) >= low])
            )
    elif kind == "integer":
        base = st.integers(schema.get("minimum"), schema.get("maximum"))
    elif kind == "number":
        base = st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    elif kind == "boolean":
        base = st.booleans()
    elif kind == "null":
        base = st.none()
    elif kind == "array":
        low = schema.get("minItems", 0)
        base = st.lists(
            from_schema(schema["items"], hints, name), min_size=low, max_size=max(low, min(3, schema["maxItems"]))
        )
    elif kind == "object":
        base = object_strategy(schema, hints)
    else:
        base = HOSTILE_SCALARS
    return st.one_of(hints[name], base) if name in hints else base


def object_strategy(schema: dict[str, Any], hints: dict[str, SearchStrategy[Any]]) -> SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    fixed = st.fixed_dictionaries(
        {key: from_schema(sub, hints, key) for key, sub in properties.items() if key in required},
        optional={key: from_schema(sub, hints, key) for key, sub in properties.items() if key not in required},
    )
    extra = schema.get("additionalProperties")
    if not isinstance(extra, dict):
        return fixed
    names = schema.get("propertyNames", {}).get("pattern", r"^[A-Za-z]{1,10}$")
    free = st.dictionaries(st.from_regex(names, fullmatch=True), from_schema(extra, hints), max_size=3)
    return st.builds(lambda a, b: {**b, **a}, fixed, free)


def hints_for(known: dict[str, list[str]]) -> dict[str, SearchStrategy[Any]]:
    """Property name → values from the running server's world (files, documents, entities)."""
    entity = st.sampled_from(known["entities"])
    upload = st.sampled_from([ZEBRA_MD, REACTOR_MD, "# Fuzz\n\nQuinn Harlow audits the Vela Archive."]).map(
        lambda text: base64.b64encode(text.encode()).decode()
    )
    return {
        "file_path": st.sampled_from(known["paths"]),
        "document_ids": st.lists(st.sampled_from(known["documents"]), min_size=1, max_size=3),
        "entity_id": entity,
        "entity": entity,
        "label_filter": entity,
        "target": entity,
        "query": st.sampled_from(QUESTIONS + known["entities"]),
        "content": st.one_of(upload, st.sampled_from(known["paths"])),
        "filename": st.sampled_from(["fuzz.md", "notes.txt", "a.pdf"]),
        "mimeType": st.sampled_from(["text/markdown", "text/plain", "application/pdf"]),
        "text": st.sampled_from([NOTES_TEXT, "Quinn Harlow audits the Vela Archive in Reykjavik."]),
        # a few knowledge bases, not one new directory per generated name
        "workspace": st.sampled_from(["", "default", "fuzz-kb"]),
    }


# --- hostile mutations of a valid-ish call -----------------------------------------------


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_in(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_in(child, (*prefix, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    if isinstance(value, dict):
        return {**value, path[0]: replaced(value.get(path[0]), path[1:], new)}
    items = list(value)
    items[path[0]] = replaced(items[path[0]], path[1:], new)
    return items


@st.composite
def hostile_arguments(draw: st.DrawFn, schema: dict[str, Any], hints: dict[str, SearchStrategy[Any]]) -> Any:
    base = draw(object_strategy(schema, hints))
    required = list(schema.get("required", ()))
    kind = draw(st.sampled_from(["replace", "replace", "drop_required", "extra", "many_extra", "whole"]))
    if kind == "drop_required" and required:
        return {key: value for key, value in base.items() if key != draw(st.sampled_from(required))}
    if kind == "extra":
        return {**base, draw(HOSTILE_KEYS): draw(HOSTILE_VALUES)}
    if kind == "many_extra":
        return {**base, **{f"extra_{i}": i for i in range(draw(st.sampled_from([50, 2000])))}}
    if kind == "whole":
        return draw(st.sampled_from([{}, {"": None}, {"arguments": base}]))
    # replace a property (top-level or nested) with a hostile value, or fill an absent one
    targets = paths_in(base) or [(draw(st.sampled_from(list(schema.get("properties", {})) or ["x"])),)]
    return replaced(base, draw(st.sampled_from(targets)), draw(HOSTILE_VALUES))


def collect(strategy: SearchStrategy[Any], count: int) -> list[Any]:
    """`count` examples of `strategy`, the same on every run (no database, derandomized)."""
    examples: list[Any] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def gather(value: Any) -> None:
        examples.append(value)

    gather()
    return examples[:count]


def generated_cases(known: dict[str, list[str]]) -> list[tuple[str, str, Any]]:
    hints = hints_for(known)
    cases: list[tuple[str, str, Any]] = []
    for name in TOOL_NAMES:
        schema = CATALOGUE.lookup(name).input_schema  # type: ignore[union-attr]
        cases += [(name, "valid", args) for args in collect(object_strategy(schema, hints), VALID_PER_TOOL)]
        cases += [(name, "hostile", args) for args in collect(hostile_arguments(schema, hints), HOSTILE_PER_TOOL)]
    return cases


# --- checks ------------------------------------------------------------------------------


def describe(arguments: Any, limit: int = 300) -> str:
    text = json.dumps(arguments, ensure_ascii=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def result_problem(result: types.CallToolResult, data_dir: str) -> str | None:
    """What is wrong with an answer a client would show, or None."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    if not texts:
        return "no text content"
    joined = "\n".join(texts)
    if "Traceback (most recent call last)" in joined:
        return "a traceback reached the client"
    if result.is_error:
        data = result.structured_content or {}
        code = data.get("error_code")
        if not code or code not in joined:
            return "an error result without its error_code in the text"
        if data_dir in joined:
            return "an error message names the server's data directory"
        if len(data.get("error_message", "")) > MAX_ERROR_MESSAGE:
            return f"an error message of {len(data['error_message'])} characters"
        if code == "INTERNAL_ERROR":
            return "INTERNAL_ERROR (unhelpful: the input should get a specific error)"
    return None


async def seed(client: Client, corpus: Path) -> dict[str, list[str]]:
    """Documents and files for the valid-ish calls to work on; returns what exists."""
    documents: list[str] = []
    for filename, text in (("zebra.md", ZEBRA_MD), ("reactor.md", REACTOR_MD)):
        arguments = {
            "filename": filename,
            "content": base64.b64encode(text.encode()).decode(),
            "mimeType": "text/markdown",
        }
        result = await client.call("upload_to_lightrag", arguments)
        assert not result.is_error, result.content
        documents.append(result.structured_content["document_id"])  # type: ignore[index]
    inserted = await client.call("lightrag_insert_text", {"text": NOTES_TEXT, "title": "inspection notes"})
    assert not inserted.is_error, inserted.content
    documents.append(inserted.structured_content["document_id"])  # type: ignore[index]
    paths = [str(corpus / name) for name in CORPUS] + [str(corpus), str(corpus / "missing.md"), "/etc/passwd", "../x"]
    return {"documents": [*documents, "zebra.md", "doc-0000-unknown"], "entities": ENTITIES, "paths": paths}


def outcome_code(outcome: types.CallToolResult | MCPError | RuntimeError) -> str:
    if isinstance(outcome, MCPError):
        return f"jsonrpc{outcome.error.code}"
    if isinstance(outcome, RuntimeError):
        return "bad_result"
    return str((outcome.structured_content or {}).get("error_code")) if outcome.is_error else "ok"


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def still_serves(client: Client) -> None:
    """After the storm a new document is indexed and found (the fuzzer may have deleted the seeded ones)."""
    text = "After the fuzzing storm, Ysolde Brannagh catalogued the Merrow Ledger in Galway."
    inserted = await client.call("lightrag_insert_text", {"text": text, "title": "after the storm"})
    assert not inserted.is_error, inserted.content
    result = await client.call("query_lightrag", {"query": "Who catalogued the Merrow Ledger?", "max_results": 3})
    assert not result.is_error, result.content
    assert "Ysolde Brannagh" in result.content[0].text  # type: ignore[union-attr]


async def test_generated_arguments_for_every_tool_are_answered_without_crash_or_restart(
    home: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in CORPUS.items():
        (corpus / name).write_text(text)
    data_dir = str(home / ".local" / "share")
    async with running_server(home, LIGHTRAG_MCP_ALLOWED_DIRS=str(corpus), **SERVER_ENV) as client:
        before = await client.wait_ready()
        await client.session.list_tools()  # the SDK validates structured results against the output schemas
        front_pid, worker_pid = before["components"]["front"]["pid"], before["components"]["worker"]["pid"]
        known = await seed(client, corpus)
        cases = generated_cases(known)
        tried = answered = unanswered = 0
        by_tool: dict[str, int] = {}
        outcomes: dict[str, int] = {}  # kind:error code (or ok / jsonrpc error code) → calls
        problems: list[str] = []
        for name, kind, arguments in cases:
            tried += 1
            by_tool[name] = by_tool.get(name, 0) + 1
            outcome: types.CallToolResult | MCPError | RuntimeError | None = None
            with anyio.move_on_after(ANSWER_BOUND_S + 10):
                try:
                    outcome = await client.call(name, arguments, read_timeout_seconds=ANSWER_BOUND_S)
                except MCPError as exc:  # a JSON-RPC error is an answer; a timeout or a closed pipe is not
                    outcome = exc
                except RuntimeError as exc:  # the SDK refused the result: it does not match the outputSchema
                    outcome = exc
                    problems.append(f"{name} ({kind}): {str(exc)[:300]}: {describe(arguments)}")
            if outcome is None or (isinstance(outcome, MCPError) and outcome.error.code in UNANSWERED_CODES):
                unanswered += 1
                problems.append(f"{name} ({kind}) got no answer: {describe(arguments)}")
                if not alive(front_pid):
                    break
                continue
            answered += 1
            outcomes[f"{kind}:{outcome_code(outcome)}"] = outcomes.get(f"{kind}:{outcome_code(outcome)}", 0) + 1
            if isinstance(outcome, types.CallToolResult) and (problem := result_problem(outcome, data_dir)):
                problems.append(f"{name} ({kind}): {problem}: {describe(arguments)}")
        front_crashed = not alive(front_pid)
        after = await client.wait_ready() if not front_crashed else before
        restarts = after["components"]["worker"]["restarts"]
        moved = after["components"]["worker"]["pid"] != worker_pid
        recorder.record(
            "fuzz",
            "sdk_client_generated_arguments",
            inputs_tried=tried,
            calls_answered=answered,
            calls_unanswered=unanswered,
            front_crashes=int(front_crashed),
            worker_restarts_from_input=max(restarts, int(moved)),
            unhelpful_answers=len(problems) - unanswered,
            tools=len(by_tool),
            calls_succeeded=sum(count for key, count in outcomes.items() if key.endswith(":ok")),
        )
        print("fuzz outcomes:", dict(sorted(outcomes.items())))
        assert set(by_tool) == set(TOOL_NAMES)
        assert not front_crashed
        assert restarts == 0 and not moved, after["components"]["worker"]
        assert unanswered == 0 and not problems, "\n".join(problems[:20])
        await still_serves(client)


# --- what the SDK client cannot send: raw JSON-RPC lines ----------------------------------


def numeric_fields(schema: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the integer/number properties of an object schema (nested objects too)."""
    found: list[tuple[str, ...]] = []
    for key, sub in schema.get("properties", {}).items():
        if sub.get("type") in {"integer", "number"}:
            found.append((*prefix, key))
        elif sub.get("type") == "object":
            found += numeric_fields(sub, (*prefix, key))
    return found


def minimal_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Required fields filled with plain values (strings "abc…", one-item arrays)."""
    arguments: dict[str, Any] = {}
    for key in schema.get("required", ()):
        sub = schema["properties"][key]
        if "enum" in sub:
            arguments[key] = sub["enum"][0]
        elif sub.get("type") == "array":
            item = sub["items"]
            arguments[key] = [minimal_arguments(item) if item.get("type") == "object" else "abc fuzz"]
        else:
            arguments[key] = "Who led the ZEBRA-7741 project?"
    return arguments


def with_literal(arguments: dict[str, Any], path: tuple[str, ...], literal: str) -> str:
    """`arguments` as JSON with the value at `path` replaced by a raw JSON literal (e.g. NaN)."""
    marker = "__LITERAL_MARKER__"
    target = arguments
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = marker
    return json.dumps(arguments).replace(f'"{marker}"', literal)


NON_FINITE = ["NaN", "Infinity", "-Infinity"]
EXTREME_LITERALS = ["1e400", "-1e400", "9" * 400, "-" + "9" * 400, "-0", "5e-324", "1.7976931348623157e308"]


def raw_cases() -> list[tuple[str, str, str]]:
    """(tool, kind, arguments JSON) that the SDK client cannot send as they are."""
    cases: list[tuple[str, str, str]] = []
    for tool in CATALOGUE.tools:
        base = minimal_arguments(tool.input_schema)
        for path in numeric_fields(tool.input_schema):
            for literal in NON_FINITE + EXTREME_LITERALS:
                kind = "non_finite" if literal in NON_FINITE else "extreme"
                cases.append((tool.name, kind, with_literal(copy.deepcopy(base), path, literal)))
        cases.append((tool.name, "non_finite", with_literal(copy.deepcopy(base), ("unknown_field",), "NaN")))
        for depth in (190, 195):  # just under the JSON reader's nesting limit (about 200 in all)
            for shape in ("array", "object"):
                cases.append((tool.name, "deep", json.dumps({**base, "nested": nested(depth, shape)})))
        for value in ("[1,2,3]", '"text"', "42", "true", "null"):
            cases.append((tool.name, "not_an_object", value))
    upload = {"filename": "n.md", "content": "SGVsbG8=", "mimeType": "text/markdown"}
    for literal in NON_FINITE:
        cases.append(("upload_to_lightrag", "non_finite", with_literal(dict(upload), ("metadata", "score"), literal)))
        cases.append(
            ("lightrag_insert_text", "non_finite", with_literal({"text": NOTES_TEXT}, ("metadata", "n"), literal))
        )
    return cases


# Lines the SDK's JSON reader refuses (nesting over its limit, lone surrogate escapes): the
# front answers them with a parse error under their id (mcp_front.wire) and stays healthy.
UNPARSEABLE = [
    ("deep", f'{{"query": "abc", "nested": {nested_json(300, "object")}}}'),
    ("deep", f'{{"query": "abc", "nested": {nested_json(5_000, "array")}}}'),
    ("deep", f'{{"query": "abc", "nested": {nested_json(5_000, "object")}}}'),
    ("surrogate", '{"query": "lone \\ud800 high"}'),
    ("surrogate", '{"query": "lone \\udfff low"}'),
    ("surrogate", '{"query": "reversed \\ude00\\ud83d pair"}'),
]


def is_answer(response: dict[str, Any] | None) -> bool:
    return response is not None and ("result" in response or "error" in response)


async def test_raw_lines_with_values_the_sdk_cannot_send_are_answered(home: Path) -> None:
    async with raw_server(home, **SERVER_ENV) as server:
        await server.initialize()
        before = await server.wait_ready()
        worker_pid = before["components"]["worker"]["pid"]
        cases = raw_cases()
        tried = answered = 0
        problems: list[str] = []
        for tool, kind, arguments_json in cases:
            tried += 1
            request_id = server.new_id()
            params = f'{{"name": {json.dumps(tool)}, "arguments": {arguments_json}}}'
            await server.send(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}')
            response = await server.response(request_id, ANSWER_BOUND_S)
            if not is_answer(response):
                problems.append(f"{tool} ({kind}) got no answer: {arguments_json[:200]}")
                continue
            answered += 1
            assert response is not None
            result = response.get("result") or {}
            if kind == "non_finite":  # NaN/±Infinity anywhere: refused by the front's validation, never sent on
                code = (result.get("structuredContent") or {}).get("error_code")
                if code != "INVALID_PARAMETER" or "finite" not in result["content"][0]["text"]:
                    problems.append(
                        f"{tool} ({kind}): {code}, not INVALID_PARAMETER naming the number: {arguments_json[:200]}"
                    )
            elif kind == "not_an_object" and "error" in response:
                assert response["error"]["code"] == types.INVALID_PARAMS, response
            elif (result.get("structuredContent") or {}).get("error_code") == "INTERNAL_ERROR":
                problems.append(f"{tool} ({kind}): INTERNAL_ERROR: {arguments_json[:200]}")
        sent = []
        for _kind, arguments_json in UNPARSEABLE:
            tried += 1
            sent.append(request_id := server.new_id())
            params = f'{{"name": "lightrag_query", "arguments": {arguments_json}}}'
            await server.send(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}')
        marker = await server.request("ping")  # answered after every line before it was read
        assert marker is not None and "result" in marker, marker
        await anyio.sleep(1)
        dropped = 0
        for request_id in sent:
            dropped += not is_answer(await server.response(request_id, 0.1))
        answered += len(sent) - dropped
        after = await server.health()
        worker = after["components"]["worker"]
        recorder.record(
            "fuzz",
            "raw_lines_unsendable_values",
            inputs_tried=tried,
            calls_answered=answered,
            calls_unanswered=tried - answered,
            unparseable_calls_dropped=dropped,
            front_crashes=int(not server.alive()),
            worker_restarts_from_input=max(worker["restarts"], int(worker["pid"] != worker_pid)),
            non_protocol_stdout_lines=len(server.bad_lines),
        )
        assert server.alive() and not server.bad_lines
        assert worker["restarts"] == 0 and worker["pid"] == worker_pid, worker
        assert dropped == 0, f"{dropped} unparseable lines got no answer under their id"
        assert not problems, "\n".join(problems[:20])
        answer = await server.call_tool("query_lightrag", {"query": "Who led the ZEBRA-7741 project?"})
        assert answer is not None and not answer["result"].get("isError"), answer  # an empty base: a normal result
