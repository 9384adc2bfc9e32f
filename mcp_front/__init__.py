"""The MCP stdio front: validates and routes tool calls, and supervises the worker.

It never imports LightRAG, numpy, onnxruntime or any parser (SPEC §1).
"""
