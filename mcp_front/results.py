"""Shaping tool results for MCP clients.

LibreChat shows the model only `content`, so the text always carries the full result;
`structuredContent` mirrors it for clients that read it.  Errors are `isError` results
with code, message, suggested action and correlation id, never exception text.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types

from protocol import RagError


def tool_result(structured: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def error_result(error: RagError, correlation_id: str) -> types.CallToolResult:
    structured: dict[str, Any] = {
        "error_code": error.code.value,
        "error_message": error.message,
        "suggested_action": error.suggested_action,
        "correlation_id": correlation_id,
        "retryable": error.retryable,
    }
    if error.details:
        structured["error_details"] = error.details
    text = (
        f"Error {error.code.value}: {error.message}\n"
        f"What to do: {error.suggested_action}\n"
        f"(retryable: {'yes' if error.retryable else 'no'}; correlation id: {correlation_id})"
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=True
    )
