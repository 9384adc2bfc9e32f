"""The HTTP request checks that run before anything is parsed (mcp_front/http_guard.py, issue 24)."""

from __future__ import annotations

import json

import pytest
from starlette.datastructures import Headers

from mcp_front.http_guard import MAX_JSON_TOKENS, Authority, StrictHeaders, body_limit_bytes, json_structure_tokens


def headers(*pairs: tuple[str, str]) -> Headers:
    return Headers(raw=[(name.encode(), value.encode("latin-1")) for name, value in pairs])


GUARD = StrictHeaders(app=None, allowed_hosts=["127.0.0.1", "127.0.0.1:*", "[::1]:*", "mcp.example.com:8443"],  # type: ignore[arg-type]
                      allowed_origins=["http://127.0.0.1:*", "https://chat.example.com"])  # fmt: skip


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", None),
        ("127.0.0.1", None),
        ("[::1]:8765", None),
        ("mcp.example.com:8443", None),
        ("MCP.example.com:8443", None),
        ("mcp.example.com:8444", 421),
        ("127.0.0.1:8765@evil.com", 400),
        ("127.0.0.1:8765, evil.com", 400),
        ("127.0.0.1.evil.com:8765", 421),
        ("127.0.0.1:99999", 400),
        ("", 400),
    ],
)
def test_the_host_must_be_exactly_an_allowed_one(host: str, status: int | None) -> None:
    refusal = GUARD.refusal(headers(("host", host)))
    assert (refusal[0] if refusal else None) == status


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://127.0.0.1:3080", None),
        ("https://chat.example.com", None),
        ("https://chat.example.com:444", 403),
        ("http://127.0.0.1:3080.evil.com", 403),
        ("http://chat.example.com", 403),
        ("null", 403),
        ("http://user@127.0.0.1:3080", 403),
    ],
)
def test_an_origin_must_be_exactly_an_allowed_one(origin: str, status: int | None) -> None:
    refusal = GUARD.refusal(headers(("host", "127.0.0.1:8765"), ("origin", origin)))
    assert (refusal[0] if refusal else None) == status


@pytest.mark.parametrize("name", ["host", "origin", "authorization"])
def test_a_repeated_header_is_ambiguous_and_refused(name: str) -> None:
    pairs = [("host", "127.0.0.1:8765"), (name, "http://127.0.0.1:1"), (name, "http://127.0.0.1:2")]
    assert GUARD.refusal(headers(*pairs)) == (400, f"The {name.title()} header appears more than once.")


def test_a_wildcard_port_rule_needs_a_host() -> None:
    assert Authority.rule(":*") is None and Authority.rule("a:b:*") is None


def test_structure_is_counted_outside_strings_only() -> None:
    call = {"name": "lightrag_insert_text", "arguments": {"text": "{[,]}" * 50_000}}
    body = json.dumps(call).encode()
    assert json_structure_tokens(body, MAX_JSON_TOKENS) == 3  # two objects and one comma outside the strings
    hostile = b'{"x":[' + b",".join([b"{}"] * 100_000) + b"]}"
    assert json_structure_tokens(hostile, MAX_JSON_TOKENS) > MAX_JSON_TOKENS


def test_many_short_strings_count_as_values_too() -> None:
    body = b"[" + b",".join([b'"{"'] * 50_000) + b"]"
    assert json_structure_tokens(body, 1000) > 1000


def test_the_default_body_limit_leaves_room_for_an_oversized_upload() -> None:
    limit = body_limit_bytes(0, 10)
    assert limit > 2 * 10 * 2**20 * 4 / 3  # a 20 MB file in base64 still reaches the tool (FILE_TOO_LARGE)
    assert body_limit_bytes(16, 10) == 16 * 2**20
