"""Lines the SDK's reader cannot read still get a JSON-RPC answer (mcp_front.wire)."""

from __future__ import annotations

import mcp.types as types
import pytest

from mcp_front.wire import INVALID_REQUEST, PARSE_ERROR, unreadable_line_error


def error_for(line: str) -> types.JSONRPCError | None:
    with pytest.raises(Exception) as caught:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return unreadable_line_error(caught.value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("{not json", PARSE_ERROR, None),
        ('{"jsonrpc": "2.0", "id": 7, "method": "tools/list"', PARSE_ERROR, 7),  # truncated: the leading id is read
        ('{"jsonrpc": "2.0", "method": "x", "params": {"id": 5, "q": "\\ud800"}}', PARSE_ERROR, None),  # an id in params is not the request's
        ('{"jsonrpc": "2.0", "id": 8, "method": 42}', INVALID_REQUEST, 8),
        ('{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": [1, 2]}', INVALID_REQUEST, "a"),
        ('{"jsonrpc": "1.0", "id": 9, "method": "x"}', INVALID_REQUEST, 9),
        ("[]", INVALID_REQUEST, None),
    ],
)
def test_unreadable_requests_get_parse_or_invalid_request_errors_with_their_id(line: str, code: int, request_id: object) -> None:
    error = error_for(line)
    assert error is not None and error.error.code == code and error.id == request_id
    assert "not json" not in error.error.message  # the line is never echoed


def test_a_malformed_notification_is_not_answered() -> None:
    assert error_for('{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}') is None
