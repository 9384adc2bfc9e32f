"""Identity and workspace resolution (SPEC §3)."""

from __future__ import annotations

import re

import pytest

from mcp_front.identity import META_USER_KEY, resolve_identity, workspace_for
from protocol import ErrorCode, RagError

SAFE = re.compile(r"^[a-z0-9_]{1,100}$")


def test_order_is_param_then_meta_then_default() -> None:
    assert resolve_identity({"userId": "alice"}, None, "", "default").source == "param"
    assert resolve_identity({}, {META_USER_KEY: "bob"}, "", "default").source == "meta"
    nobody = resolve_identity({}, {}, "", "default")
    assert (nobody.source, nobody.workspace, nobody.user_id) == ("default", "default", None)


def test_environment_user_wins_and_contradictions_are_forbidden() -> None:
    identity = resolve_identity({}, None, "carol", "default")
    assert identity.source == "env" and identity.user_id == "carol"
    assert resolve_identity({"userId": "carol"}, None, "carol", "default").user_id == "carol"
    for raw, meta in (({"userId": "mallory"}, None), ({}, {META_USER_KEY: "mallory"})):
        with pytest.raises(RagError) as caught:
            resolve_identity(raw, meta, "carol", "default")
        assert caught.value.code is ErrorCode.FORBIDDEN


def test_param_and_meta_that_disagree_are_forbidden() -> None:
    with pytest.raises(RagError) as caught:
        resolve_identity({"userId": "a"}, {META_USER_KEY: "b"}, "", "default")
    assert caught.value.code is ErrorCode.FORBIDDEN


@pytest.mark.parametrize("bad", [5, "", "   ", "x" * 300, "bob\nadmin"])
def test_malformed_user_ids_are_invalid(bad: object) -> None:
    with pytest.raises(RagError) as caught:
        resolve_identity({"userId": bad}, None, "", "default")
    assert caught.value.code is ErrorCode.INVALID_PARAMETER


@pytest.mark.parametrize("placeholder", ["{{LIBRECHAT_USER_ID}}", "${USER_ID}", "team-{{LIBRECHAT_USER_EMAIL}}"])
def test_a_user_id_holding_an_unexpanded_placeholder_is_forbidden(placeholder: str) -> None:
    for raw, meta in (({"userId": placeholder}, None), ({}, {META_USER_KEY: placeholder})):
        with pytest.raises(RagError) as caught:
            resolve_identity(raw, meta, "", "default")
        assert caught.value.code is ErrorCode.FORBIDDEN
        assert "unexpanded placeholder" in caught.value.message


def test_workspaces_are_backend_safe_and_never_collide() -> None:
    ids = ["Ann.B", "ann_b", "ANN B", "ann-b", "../../etc", "用户", "a" * 256, "default"]
    names = {workspace_for(user, "default") for user in ids}
    assert len(names) == len(ids)
    assert all(SAFE.match(name) for name in names)
    assert workspace_for("default", "default") != workspace_for(None, "default")


def test_named_knowledge_base_nests_inside_the_user() -> None:
    alice = workspace_for("alice", "default")
    assert workspace_for("alice", "default", "papers").startswith(alice + "__kb_")
    assert workspace_for("alice", "default", "papers") != workspace_for("bob", "default", "papers")
