"""`python -m mcp_front`: run the MCP server on stdio."""

from mcp_front.server import main

if __name__ == "__main__":
    main()
