"""One declaration per tool method: every spec has exactly one handler, and the front's tools,
the worker's handlers and the upload description all derive from the specs."""

from __future__ import annotations

import jsonschema
import pytest

from mcp_front.catalogue import TOOLS
from protocol import RagError
from protocol import methods as m
from protocol.context import CallContext
from protocol.schema import advertised, fill_defaults
from rag_worker.dispatch import audited, handles
from rag_worker.handlers import HANDLERS
from rag_worker.ingest.formats import FORMATS


def test_every_method_has_exactly_one_handler_and_every_handler_a_method() -> None:
    # `ping` has no handler: the worker's endpoint answers it in its read loop (a stuck loop misses it).
    assert set(HANDLERS) == set(m.METHODS) - {m.PING.name}


def test_a_second_handler_for_a_method_is_refused() -> None:
    with pytest.raises(RuntimeError, match="already has a handler"):
        handles(m.QUERY)(HANDLERS[m.QUERY.name])


def test_every_tool_method_has_a_tool_and_the_tool_reads_its_flags_from_the_spec() -> None:
    # documents/read takes a tool call's envelope but is served as MCP resources/read, not as a tool;
    # query/answer is the second step of a question the front searched across knowledge bases.
    not_tools = {m.READ_DOCUMENT.name, m.ANSWER.name}
    tool_methods = {spec.name for spec in m.METHODS.values() if spec.tool_method}
    assert {tool.method.name for tool in TOOLS} == tool_methods - not_tools
    for tool in TOOLS:
        assert tool.read_only is not tool.method.mutates
        assert tool.debug_only is tool.method.debug_only and tool.timeout == tool.method.timeout


def test_the_worker_audits_mutating_calls_but_not_fault_injection() -> None:
    assert audited(m.UPLOAD) and audited(m.DELETE_DOCUMENTS) and audited(m.UPDATE_ENTITY)
    assert not audited(m.QUERY) and not audited(m.DEBUG)


def test_ingestion_methods_share_one_longer_timeout() -> None:
    slow = {spec.name for spec in m.METHODS.values() if spec.timeout == m.INGEST_TIMEOUT}
    assert {m.UPLOAD.name, m.INSERT_TEXT.name, m.INSERT_FILE.name, m.BATCH_PROCESS.name} <= slow


def test_defaults_are_filled_at_every_depth_and_explicit_values_win() -> None:
    filled = m.GET_GRAPH.with_defaults({"max_nodes": 7, "graph_options": {"min_degree": 2}})
    assert filled["max_nodes"] == 7 and filled["max_edges"] == 500 and filled["output_format"] == "json"
    assert filled["graph_options"] == {
        "min_degree": 2,
        "min_weight": 0.0,
        "max_seed_entities": 5,
        "mermaid_direction": "LR",
    }
    assert m.DELETE_DOCUMENTS.with_defaults({"document_ids": ["a"]})["delete_options"]["cascade_delete"] is True


def test_the_streamed_query_fills_the_same_defaults_its_twin_advertises() -> None:
    assert m.STREAM_QUERY.with_defaults({"query": "q"}) == m.QUERY.with_defaults({"query": "q"})
    assert "default" not in str(m.STREAM_QUERY.input_schema)


def test_quiet_defaults_are_filled_but_not_advertised() -> None:
    top_k = m.QUERY.params_schema["properties"]["top_k"]
    assert fill_defaults({}, {"properties": {"top_k": top_k}}) == {"top_k": 40}
    assert "default" not in advertised(top_k) and "x-default" not in str(m.QUERY.input_schema)
    assert m.QUERY.input_schema["properties"]["mode"]["default"] == "mix"


def test_the_call_context_round_trips_and_needs_a_workspace() -> None:
    context = CallContext("ws", "cid", tool="lightrag_query", user_id="bob", progress=True, roots=("/data",))
    named = CallContext("ws__kb_project_a_1234abcd", "cid", user_id="bob", knowledge_base="Project-A")
    for each in (context, named):
        assert CallContext.from_wire(each.to_wire()) == each
        jsonschema.validate(each.to_wire(), m.CALL_CONTEXT)
    assert "knowledge_base" not in context.to_wire()
    with pytest.raises(RagError, match="no workspace context"):
        CallContext.from_wire({"correlation_id": "cid"})


def test_every_upload_format_names_a_family_of_the_upload_description() -> None:
    used = {spec.family for spec in FORMATS.values()}
    assert used <= set(m.UPLOAD_FAMILIES), f"families the upload description lacks: {used - set(m.UPLOAD_FAMILIES)}"
    assert set(m.UPLOAD_FAMILIES) <= used, f"families no format has: {set(m.UPLOAD_FAMILIES) - used}"
    upload = next(tool for tool in TOOLS if tool.method is m.UPLOAD)
    assert all(family in upload.description for family in m.UPLOAD_FAMILIES)
