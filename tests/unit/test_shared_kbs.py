"""LIGHTRAG_MCP_SHARED_KBS (SPEC §3 "Shared knowledge bases"): parsing, members and rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.settings import ConfigError, load_settings
from config.shared_kbs import SHARED_WORKSPACE_PREFIX, caller_member, parse_shared_kbs

HANDBOOK = {"handbook": {"read": ["*"], "write": ["alice", "role:ADMIN"], "search_by_default": True}}


def shared(config: object) -> object:
    return load_settings({"LIGHTRAG_MCP_SHARED_KBS": json.dumps(config)}).shared_kbs


def test_a_json_object_declares_shared_knowledge_bases_by_case_insensitive_name() -> None:
    kbs = parse_shared_kbs(json.dumps(HANDBOOK))
    kb = kbs.lookup("HandBook")
    assert kb is not None and kb.write == ("alice", "role:ADMIN") and kb.search_by_default


def test_the_variable_may_name_a_yaml_file_with_at(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text("handbook:\n  read: ['*']\n  write: [alice]\n")
    kb = parse_shared_kbs(f"@{path}").lookup("handbook")
    assert kb is not None and kb.read == ("*",) and not kb.search_by_default


def test_the_variable_may_name_a_json_file_with_at(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    path.write_text(json.dumps(HANDBOOK))
    assert parse_shared_kbs(f"@{path}").lookup("handbook") is not None


def test_unset_means_no_shared_knowledge_bases() -> None:
    assert not load_settings({}).shared_kbs


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{", "is not valid JSON"),
        ("[]", "must be an object"),
        (json.dumps({"all": {"read": ["*"]}}), "reserved name"),
        (json.dumps({"default": {"read": ["*"]}}), "every user's own knowledge base"),
        (json.dumps({"a/b": {"read": ["*"]}}), "looks like a path"),
        (json.dumps({"h": {"read": "*"}}), "h.read: must be a list"),
        (json.dumps({"h": {"reed": ["*"]}}), "unknown key 'reed'"),
        (json.dumps({"h": {"read": ["*"], "search_by_default": "yes"}}), "search_by_default must be true or false"),
        (json.dumps({"h": {"read": [], "write": []}}), "nobody could use it"),
        (json.dumps({"h": {"read": ["role:"]}}), "names no role or e-mail"),
        (json.dumps({"h": {"read": ["email:bob"]}}), "names no role or e-mail"),
        (json.dumps({"h": {"read": [" alice"]}}), "entry 1 is not a member"),
        (json.dumps({"h": {"read": ["x"]}, "H": {"read": ["y"]}}), "declared twice"),
        ("@/nonexistent/shared.json", "cannot read /nonexistent/shared.json"),
    ],
)
def test_a_bad_configuration_stops_start_up_with_one_line_naming_the_variable(raw: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"LIGHTRAG_MCP_SHARED_KBS": raw})
    message = str(caught.value)
    assert message.startswith("LIGHTRAG_MCP_SHARED_KBS: ") and says in message and "\n" not in message


def test_a_bad_yaml_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "shared.yml"
    path.write_text("handbook: [unclosed\n")
    with pytest.raises(ConfigError, match=r"LIGHTRAG_MCP_SHARED_KBS: .*is not valid YAML"):
        load_settings({"LIGHTRAG_MCP_SHARED_KBS": f"@{path}"})


def test_everyone_reads_and_only_the_named_user_or_role_writes() -> None:
    kb = parse_shared_kbs(json.dumps(HANDBOOK)).lookup("handbook")
    assert kb is not None
    assert kb.may("read", caller_member("bob"))
    assert not kb.may("write", caller_member("bob"))
    assert kb.may("write", caller_member("alice"))
    assert kb.may("write", caller_member("carol", roles=["admin"]))  # roles compare case-insensitively


def test_a_role_rule_never_matches_a_user_id_spelled_like_it() -> None:
    kb = parse_shared_kbs(json.dumps(HANDBOOK)).lookup("handbook")
    assert kb is not None and not kb.may("write", caller_member("role:ADMIN"))


def test_email_members_match_the_callers_email_case_insensitively() -> None:
    kb = parse_shared_kbs(json.dumps({"policies": {"read": ["email:Ann@Example.org"]}})).lookup("policies")
    assert kb is not None
    assert kb.may("read", caller_member("u1", email="ann@example.ORG"))
    assert not kb.may("read", caller_member("u2", email="bob@example.org"))


def test_writers_may_read_a_knowledge_base_whose_read_list_omits_them() -> None:
    kb = parse_shared_kbs(json.dumps({"drafts": {"read": ["role:EDITOR"], "write": ["alice"]}})).lookup("drafts")
    assert kb is not None and kb.may("read", caller_member("alice"))


def test_a_refusal_names_the_rule_and_nothing_else() -> None:
    kb = parse_shared_kbs(json.dumps(HANDBOOK)).lookup("handbook")
    assert kb is not None and kb.rule("write") == "handbook: writing needs one of: alice, role:ADMIN"


def test_the_shared_workspace_is_nested_under_no_user() -> None:
    kb = parse_shared_kbs(json.dumps(HANDBOOK)).lookup("handbook")
    assert kb is not None and kb.workspace.startswith(SHARED_WORKSPACE_PREFIX + "handbook_")
    assert "__kb_" not in kb.workspace and not kb.workspace.startswith("u_")


@pytest.mark.parametrize("name", ["LIGHTRAG_MCP_USER_ROLE", "LIGHTRAG_MCP_USER_EMAIL"])
def test_an_unexpanded_role_or_email_placeholder_stops_start_up(name: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}=.*unexpanded placeholder"):
        load_settings({name: "{{LIBRECHAT_USER_ROLE}}"})


def test_the_default_workspace_may_not_take_a_shared_knowledge_bases_prefix() -> None:
    with pytest.raises(ConfigError, match="LIGHTRAG_MCP_DEFAULT_WORKSPACE=.*belong to shared knowledge bases"):
        load_settings({"LIGHTRAG_MCP_DEFAULT_WORKSPACE": "Shared-Team"})
