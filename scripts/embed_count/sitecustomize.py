"""Counts the texts the worker sends to the embedding model for indexing (scripts/bench_engine.py).

Put on PYTHONPATH with LIGHTRAG_MCP_BENCH_EMBED_COUNT_DIR set: when a process imports
`rag_worker.embedded.embedding_lanes`, `EmbeddingLanes.embed_for_indexing` (every indexing
embedding: chunks, entities, relations; questions take another lane) is wrapped to add the
number of texts to a running total, written to `<dir>/<pid>` after each call. Benchmark-only:
nothing in the packages reads or writes it.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from typing import Any

_DIR = os.environ.get("LIGHTRAG_MCP_BENCH_EMBED_COUNT_DIR")
_TARGET = "rag_worker.embedded.embedding_lanes"


def _count(module: Any) -> None:
    lanes = module.EmbeddingLanes
    embed = lanes.embed_for_indexing
    total = [0]
    path = os.path.join(str(_DIR), str(os.getpid()))

    async def embed_for_indexing(self: Any, embedder: Any, texts: list[str]) -> Any:
        total[0] += len(texts)
        with open(path, "w") as out:
            out.write(str(total[0]))
        return await embed(self, embedder, texts)

    lanes.embed_for_indexing = embed_for_indexing


class _Watcher(importlib.abc.MetaPathFinder):
    """Wraps the module's loader so the count is installed right after the module runs."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _count(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _DIR:
    sys.meta_path.insert(0, _Watcher())
