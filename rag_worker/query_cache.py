"""A question is embedded once, whichever binding embeds it.

LightRAG embeds the question for its vector search, and the sources' relevance scores
(`operations.querying`) need the same vector: without a memory of recent question vectors,
every query would cost a second embedding request — a second network round trip on a remote
embedding API.  Texts LightRAG marks ``context="query"`` are remembered one by one (in mix
mode it embeds the question with its keywords in one batch; the scores ask for the question
alone), and a batch whose texts are all remembered is answered from memory (the
`EmbeddingFunc` must say `supports_asymmetric=True`, or LightRAG drops `context`); indexing
batches pass straight through.  The memory is per process; `lightrag_clear_cache` sizes and
clears it through the function's `query_cache` attribute.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

QUERY_CACHE_SIZE = 256

EmbedFunc = Callable[..., Awaitable[Any]]


def remembering_queries(embed: EmbedFunc, size: int = QUERY_CACHE_SIZE) -> EmbedFunc:
    """`embed`, answering a question it embedded recently from memory (at most `size` kept)."""
    recent: OrderedDict[str, np.ndarray] = OrderedDict()

    async def embed_remembering(texts: list[str], **kwargs: Any) -> Any:
        if kwargs.get("context") != "query" or not texts:
            return await embed(texts, **kwargs)
        if all(text in recent for text in texts):
            for text in texts:
                recent.move_to_end(text)
            return np.stack([recent[text] for text in texts]).copy()
        vectors = np.asarray(await embed(texts, **kwargs))
        for text, vector in zip(texts, vectors, strict=True):
            recent[text] = vector
            recent.move_to_end(text)
        while len(recent) > size:
            recent.popitem(last=False)
        return vectors

    embed_remembering.query_cache = recent  # type: ignore[attr-defined]  # sized and cleared by lightrag_clear_cache
    return embed_remembering
