"""Embedding, tokenizer and LLM functions for LightRAG, chosen by configuration.

With nothing configured this is the embedded default (SPEC §6): the packaged
all-MiniLM-L6-v2 ONNX model, an offline tokenizer and the built-in extractor.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from protocol.settings import Settings

log = logging.getLogger("rag_worker.bindings")


async def build_components(settings: Settings, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
    """Build the shared components every LightRAG instance of this worker uses."""
    from rag_worker.embedded.extractor import builtin_llm_model_func
    from rag_worker.embedded.models import OnnxSentenceEmbedder, make_embedding_func, make_offline_tokenizer

    embedder = OnnxSentenceEmbedder()
    await anyio.to_thread.run_sync(embedder.load, limiter=limiter)
    tokenizer = await anyio.to_thread.run_sync(make_offline_tokenizer, limiter=limiter)
    return {
        "embedding_func": make_embedding_func(embedder, limiter),
        "tokenizer": tokenizer,
        "llm_model_func": builtin_llm_model_func,
        "llm_name": "builtin-extractor",
        "embedding_name": "all-MiniLM-L6-v2 (ONNX, packaged)",
    }
