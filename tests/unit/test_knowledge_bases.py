"""Named knowledge bases (SPEC §3): every tool takes an optional `workspace`, resolved by the
front inside the caller's namespace and never forwarded; the worker lists one caller's
knowledge bases and keeps the name each was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_front.catalogue import PROFILES, TOOLS, Catalogue
from mcp_front.identity import Identity, workspace_for
from mcp_front.knowledge_bases import (
    LIST_TOOL,
    WORKSPACE_PROPERTY,
    in_knowledge_base,
    knowledge_base_name,
    take_knowledge_base,
)
from protocol import ErrorCode, RagError
from protocol.context import KNOWLEDGE_BASE_INFIX, MAX_KNOWLEDGE_BASE_NAME, RESERVED_NAMES, CallContext
from rag_worker.handlers.knowledge_bases import _message
from rag_worker.storage import knowledge_bases as stored
from rag_worker.storage.knowledge_bases import (
    check_knowledge_base,
    local_document_count,
    nested_workspaces,
    record_knowledge_base,
    recorded_name,
    stored_knowledge_bases,
)

ALL = Catalogue(TOOLS, profile="all")


def tool(name: str):  # type: ignore[no-untyped-def]
    found = ALL.lookup(name)
    assert found is not None
    return found


# --- the argument every tool takes ------------------------------------------------------


@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_advertised_tool_but_the_listing_takes_the_workspace_argument(profile: str) -> None:
    for listed in Catalogue(TOOLS, profile=profile).list_tools():
        properties = listed.input_schema["properties"]
        if listed.name == LIST_TOOL:
            assert "workspace" not in properties
        else:
            assert properties["workspace"] == WORKSPACE_PROPERTY, listed.name


def test_the_workspace_property_is_bounded_by_the_name_rule() -> None:
    assert WORKSPACE_PROPERTY["type"] == "string" and WORKSPACE_PROPERTY["maxLength"] == MAX_KNOWLEDGE_BASE_NAME
    assert "knowledge base" in WORKSPACE_PROPERTY["description"]


def test_the_listing_is_in_the_default_profile_not_librechats_and_is_read_only() -> None:
    assert LIST_TOOL in [t.name for t in Catalogue(TOOLS).list_tools()]
    assert LIST_TOOL not in [t.name for t in Catalogue(TOOLS, profile="librechat").list_tools()]
    listing = tool(LIST_TOOL)
    assert listing.read_only and listing.idempotent and not listing.destructive


def test_the_streamed_query_left_the_default_list_but_stays_callable() -> None:
    assert "lightrag_stream_query" not in [t.name for t in Catalogue(TOOLS).list_tools()]
    assert Catalogue(TOOLS).lookup("lightrag_stream_query") is not None


# --- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["project-a", "Project_B", "a", "2024", "x" * MAX_KNOWLEDGE_BASE_NAME, "-_-"])
def test_plain_names_are_knowledge_bases(name: str) -> None:
    assert knowledge_base_name("lightrag_query", name) == name


@pytest.mark.parametrize("value", [None, "", "default", "Default", "DEFAULT"])
def test_omitted_empty_or_default_means_the_default_knowledge_base(value: object) -> None:
    assert knowledge_base_name("lightrag_query", value) is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("../alice", "'../alice' looks like a path; a knowledge base name has no /, \\, ., : or ~"),
        ("a/b", "looks like a path"),
        ("notes.v2", "looks like a path"),
        ("C:\\data", "looks like a path"),
        ("~", "looks like a path"),
        ("x" * 41, "is 41 characters long; a knowledge base name has at most 40"),
        ("my kb", "'my kb' contains ' '; a knowledge base name uses only letters, digits, _ and -"),
        ("café", "contains 'é'"),
        ("{{LIBRECHAT_USER_ID}}", "contains '{'"),
        ("a\x00b", "contains '\\x00'"),
        ("all", "'all' is a reserved name (all, any, none, null, nil, undefined, global, shared); choose another"),
        ("NULL", "'NULL' is a reserved name"),
        (42, "must be a knowledge base name (a string), not int"),
        (["a"], "must be a knowledge base name (a string), not list"),
    ],
)
def test_a_bad_name_is_refused_saying_which_rule_and_what_is_allowed(value: object, fragment: str) -> None:
    with pytest.raises(RagError) as caught:
        knowledge_base_name("lightrag_query", value)
    error = caught.value
    assert error.code is ErrorCode.INVALID_PARAMETER
    assert error.message.startswith("Invalid arguments for lightrag_query: workspace ")
    assert fragment in error.message
    assert "project-a" in error.suggested_action and LIST_TOOL in error.suggested_action


def test_every_reserved_name_is_refused_in_any_case() -> None:
    for name in RESERVED_NAMES:
        for spelled in (name, name.upper()):
            with pytest.raises(RagError, match="reserved"):
                knowledge_base_name("lightrag_query", spelled)


def test_a_huge_name_is_not_echoed_back() -> None:
    with pytest.raises(RagError) as caught:
        knowledge_base_name("lightrag_query", "/" * 100_000)
    assert len(caught.value.message) < 300


# --- the front takes the argument out ------------------------------------------------------


def test_the_front_takes_the_workspace_out_before_validation_and_forwarding() -> None:
    query = tool("lightrag_query")
    knowledge_base, rest = take_knowledge_base(query, {"query": "q", "workspace": "project-a"})
    assert knowledge_base == "project-a" and rest == {"query": "q"}
    assert ALL.validate(query, rest)["mode"] == "mix"
    assert take_knowledge_base(query, {"query": "q"}) == (None, {"query": "q"})
    assert take_knowledge_base(query, {"query": "q", "workspace": "default"}) == (None, {"query": "q"})


def test_an_alias_takes_the_workspace_like_its_tool() -> None:
    knowledge_base, rest = take_knowledge_base(tool("health_check"), {"workspace": "notes"})
    assert knowledge_base == "notes" and rest == {}


def test_a_bad_name_fails_before_the_schema_is_checked() -> None:
    with pytest.raises(RagError, match="workspace '../x' looks like a path"):
        take_knowledge_base(tool("upload_to_lightrag"), {"workspace": "../x"})


def test_the_validator_names_workspace_among_the_allowed_fields() -> None:
    with pytest.raises(RagError) as caught:
        ALL.validate(tool("lightrag_health_check"), {"colour": "red"})
    assert "allowed: check_dependencies, include_detailed, workspace" in caught.value.message


def test_the_listing_takes_no_workspace() -> None:
    listing = tool(LIST_TOOL)
    knowledge_base, rest = take_knowledge_base(listing, {"workspace": "project-a"})
    assert knowledge_base is None
    with pytest.raises(RagError, match="unknown field"):
        ALL.validate(listing, rest)


# --- resolution inside the caller's namespace ----------------------------------------------


@pytest.mark.parametrize("identity", [
    Identity("alice", "param", workspace_for("alice", "default")),
    Identity(None, "default", workspace_for(None, "team")),
])
def test_a_knowledge_base_nests_inside_the_callers_workspace(identity: Identity) -> None:
    nested = in_knowledge_base(identity, "project-a", "team")
    assert nested.workspace.startswith(identity.workspace + KNOWLEDGE_BASE_INFIX)
    assert (nested.user_id, nested.source) == (identity.user_id, identity.source)
    assert in_knowledge_base(identity, None, "team") is identity


def test_names_are_case_insensitive_and_users_never_share_one() -> None:
    alice = Identity("alice", "param", workspace_for("alice", "default"))
    bob = Identity("bob", "param", workspace_for("bob", "default"))
    assert in_knowledge_base(alice, "Project-A", "default") == in_knowledge_base(alice, "project-a", "default")
    assert in_knowledge_base(alice, "project-a", "default").workspace != in_knowledge_base(bob, "project-a", "default").workspace
    assert in_knowledge_base(alice, "project-a", "default") != in_knowledge_base(alice, "project_a", "default")


def test_the_display_name_travels_in_the_call_context() -> None:
    context = CallContext("u_alice__kb_project_a_12345678", "cid", knowledge_base="Project-A")
    assert CallContext.from_wire(context.to_wire()).knowledge_base == "Project-A"


# --- the worker's side: names, listing, counts --------------------------------------------


@pytest.fixture
def fresh_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored, "_recorded", set())


def test_the_first_spelling_of_a_name_is_recorded(tmp_path: Path, fresh_records: None) -> None:
    workspace = workspace_for("alice", "default", "project-a")
    record_knowledge_base(str(tmp_path), CallContext(workspace, "c1", knowledge_base="Project-A"))
    record_knowledge_base(str(tmp_path), CallContext(workspace, "c2", knowledge_base="project-a"))
    assert recorded_name(tmp_path / workspace) == "Project-A"


def test_a_call_without_a_knowledge_base_records_nothing(tmp_path: Path, fresh_records: None) -> None:
    record_knowledge_base(str(tmp_path), CallContext("u_alice_1", "c1"))
    assert list(tmp_path.iterdir()) == []


def named_call(user: str, name: str) -> CallContext:
    return CallContext(workspace_for(user, "default", name.lower()), "c", user_id=user, knowledge_base=name)


def refused(call) -> RagError:  # type: ignore[no-untyped-def]
    with pytest.raises(RagError) as caught:
        call()
    return caught.value


def test_a_read_only_call_naming_an_unknown_knowledge_base_is_refused_and_creates_nothing(
    tmp_path: Path, fresh_records: None
) -> None:
    record_knowledge_base(str(tmp_path), named_call("alice", "Project-A"))
    error = refused(lambda: check_knowledge_base(str(tmp_path), named_call("alice", "typo"), creates=False, max_count=50))
    assert error.code == ErrorCode.INVALID_PARAMETER and not error.retryable
    assert error.message == "You have no knowledge base named 'typo'. Yours: default, Project-A."
    assert "lightrag_list_knowledge_bases" in error.suggested_action
    assert sorted(path.name for path in tmp_path.iterdir()) == [workspace_for("alice", "default", "project-a")]
    check_knowledge_base(str(tmp_path), named_call("alice", "project-a"), creates=False, max_count=50)  # exists: fine
    check_knowledge_base(str(tmp_path), CallContext("u_alice_1", "c"), creates=False, max_count=50)  # the default


def test_a_writing_call_creates_knowledge_bases_up_to_the_per_user_bound(tmp_path: Path, fresh_records: None) -> None:
    for name in ("a", "b"):
        call = named_call("alice", name)
        check_knowledge_base(str(tmp_path), call, creates=True, max_count=2)
        record_knowledge_base(str(tmp_path), call)
    error = refused(lambda: check_knowledge_base(str(tmp_path), named_call("alice", "c"), creates=True, max_count=2))
    assert error.code == ErrorCode.QUOTA_EXCEEDED and "LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES=2" in error.message
    assert str(tmp_path) not in error.message
    check_knowledge_base(str(tmp_path), named_call("alice", "a"), creates=True, max_count=2)  # an existing one
    check_knowledge_base(str(tmp_path), named_call("bob", "c"), creates=True, max_count=2)  # bob has his own bound
    check_knowledge_base(str(tmp_path), named_call("alice", "c"), creates=True, max_count=0)  # 0: no bound


def test_only_the_owners_knowledge_bases_are_listed(tmp_path: Path) -> None:
    alice = workspace_for("alice", "default")
    mine = [workspace_for("alice", "default", name) for name in ("b", "a")]
    others = [
        workspace_for("bob", "default", "a"),
        workspace_for("alice-2", "default", "a"),
        workspace_for("alice_", "default", "a"),
        alice + "x" + KNOWLEDGE_BASE_INFIX + "a_00000000",  # a prefix of alice's name is not alice
        workspace_for(None, "default", "a"),
    ]
    for name in (alice, *mine, *others):
        (tmp_path / name).mkdir()
    (tmp_path / (alice + KNOWLEDGE_BASE_INFIX + "file")).write_text("not a directory")
    assert nested_workspaces(str(tmp_path), alice) == sorted(mine)
    assert nested_workspaces(str(tmp_path / "missing"), alice) == []


def test_the_stored_listing_puts_the_default_first_then_names_and_counts(tmp_path: Path, fresh_records: None) -> None:
    from config.storages import LOCAL_STORAGES

    owner = workspace_for("alice", "default")
    for name in ("zeta", "Alpha"):
        record_knowledge_base(str(tmp_path), CallContext(workspace_for("alice", "default", name.lower()), "c", knowledge_base=name))
    unnamed = workspace_for("alice", "default", "old-notes")
    (tmp_path / unnamed).mkdir()  # its marker was never written
    (tmp_path / unnamed / "kv_store_doc_status.json").write_text(json.dumps({"doc-1": {}}))
    rows, named = stored_knowledge_bases(str(tmp_path), owner, LOCAL_STORAGES, limit=2)
    assert named == 3
    assert [(row["name"], row["default"], row["documents"]) for row in rows] == [
        ("default", True, 0),
        ("Alpha", False, 0),
        ("old_notes", False, 1),  # the slug stands in for the unrecorded name
    ]
    assert rows[2]["name_recorded"] is False and "name_recorded" not in rows[1]
    assert [row["workspace"] for row in rows[:2]] == [owner, workspace_for("alice", "default", "alpha")]


def test_a_closed_local_knowledge_base_is_counted_from_its_doc_status_file(tmp_path: Path) -> None:
    from config.storages import LOCAL_STORAGES, StorageSet

    assert local_document_count(tmp_path, LOCAL_STORAGES) == 0  # nothing indexed yet
    (tmp_path / "kv_store_doc_status.json").write_text(json.dumps({"doc-1": {}, "doc-2": {}}))
    assert local_document_count(tmp_path, LOCAL_STORAGES) == 2
    server = StorageSet(**{**LOCAL_STORAGES.as_dict(), "doc_status": "PGDocStatusStorage"})
    assert local_document_count(tmp_path, server) is None  # never opened here, configured for a server
    (tmp_path / "storage.json").write_text(json.dumps({"storages": server.as_dict(), "fallback": False}))
    assert local_document_count(tmp_path, LOCAL_STORAGES) is None  # lives on a server: unknown
    (tmp_path / "storage.json").write_text(json.dumps({"storages": LOCAL_STORAGES.as_dict(), "fallback": True}))
    assert local_document_count(tmp_path, server) == 2
    (tmp_path / "kv_store_doc_status.json").write_text("{broken")
    assert local_document_count(tmp_path, LOCAL_STORAGES) is None


def test_the_listing_text_is_one_line_per_knowledge_base() -> None:
    rows = [
        {"name": "default", "default": True, "documents": 2},
        {"name": "project-a", "default": False, "documents": 1},
        {"name": "archive", "default": False, "documents": None},
        {"name": "old_notes", "default": False, "documents": 0, "name_recorded": False},
    ]
    lines = _message(rows, 0).splitlines()
    assert lines[0] == "4 knowledge bases; pass a name as `workspace` to any tool:"
    assert lines[1:] == [
        "- default: 2 documents (used when workspace is omitted)",
        "- project-a: 1 document",
        "- archive: document count unknown",
        "- old_notes: 0 documents (name not recorded: its exact spelling may differ)",
    ]
    assert _message(rows[:1], 3).splitlines()[-1] == "… and 3 more not listed."
