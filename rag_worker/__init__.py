"""The worker subprocess that owns LightRAG: engine, ingestion, tool methods.

Started by `mcp_front`'s supervisor as `python -m rag_worker`; it speaks JSON-RPC 2.0
(see `protocol`) on the pipe it was given as stdin/stdout.
"""
