"""`python -m mcp_front`: run the MCP server on stdio (default) or `--transport http`."""

from mcp_front.server import main

if __name__ == "__main__":
    main()
