"""Error results must validate against every tool's outputSchema: the TypeScript SDK (LibreChat,
VS Code) validates structuredContent even when isError is true, and throws on a mismatch."""

from __future__ import annotations

import jsonschema
import pytest

from mcp_front.catalogue import TOOLS
from mcp_front.results import error_result
from protocol import ErrorCode, RagError


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_an_error_result_validates_against_the_output_schema(tool) -> None:  # type: ignore[no-untyped-def]
    result = error_result(RagError(ErrorCode.INVALID_PARAMETER, "bad", details={"problems": ["x"]}), "cid")
    jsonschema.validate(result.structured_content, tool.to_mcp().output_schema)
