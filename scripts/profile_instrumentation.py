"""Instrumentation for scripts/profile_indexing.py: busy clocks, counters, and the wrappers that
count embedding calls and LLM prompts and watch LightRAG's vector stores."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter, defaultdict
from typing import Any


class BusyClock:
    """Wall time during which at least one call is running (overlapping calls count once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0
        self.busy = 0.0
        self.calls = 0
        self.call_seconds = 0.0

    def enter(self) -> float:
        now = time.perf_counter()
        with self._lock:
            if self._active == 0:
                self._since = now
            self._active += 1
            self.calls += 1
        return now

    def leave(self, started: float) -> None:
        now = time.perf_counter()
        with self._lock:
            self._active -= 1
            self.call_seconds += now - started
            if self._active == 0:
                self.busy += now - self._since


@dataclasses.dataclass
class Stats:
    embed_clock: BusyClock = dataclasses.field(default_factory=BusyClock)
    llm_clock: BusyClock = dataclasses.field(default_factory=BusyClock)
    texts: int = 0
    wordpieces: int = 0
    text_chars: int = 0
    max_chars: int = 0
    llm_kinds: Counter = dataclasses.field(default_factory=Counter)
    by_store: dict = dataclasses.field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))  # n, chars, tokens
    upserts_by_store: Counter = dataclasses.field(default_factory=Counter)
    truncated: Counter = dataclasses.field(default_factory=Counter)


class TruncationCounter(logging.Handler):
    def __init__(self, stats: Stats) -> None:
        super().__init__(logging.WARNING)
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "VDB content truncated" in message:
            self.stats.truncated[message.split(":", 1)[0]] += 1
        elif "Oversize description" in message:
            self.stats.truncated["oversize description"] += 1


def _wordpiece_counter() -> Any:
    """Count the model's own tokens (what embedding time is proportional to), window-capped."""
    try:
        from tokenizers import Tokenizer

        from rag_worker.embedded.models import MAX_SEQ_LENGTH, check_model_assets

        tokenizer = Tokenizer.from_file(str(check_model_assets()[0]))
        tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        tokenizer.no_padding()
    except Exception:  # a remote embedding model: no count
        return None
    return lambda texts: sum(len(e.ids) for e in tokenizer.encode_batch(list(texts)))


def instrument(components: dict[str, Any], stats: Stats) -> dict[str, Any]:
    """Wrap the embedding and LLM functions so they count and time themselves."""
    from rag_worker.embedded.extractor import classify_prompt

    embedding = components["embedding_func"]
    inner = embedding.func
    counter = _wordpiece_counter()

    async def counted_embed(texts: list[str], **kwargs: Any) -> Any:
        started = stats.embed_clock.enter()
        try:
            return await inner(texts, **kwargs)
        finally:
            stats.embed_clock.leave(started)
            stats.texts += len(texts)
            lengths = [len(t) for t in texts]
            stats.text_chars += sum(lengths)
            stats.max_chars = max([stats.max_chars, *lengths])
            if counter is not None:
                stats.wordpieces += counter(texts)

    llm = components["llm_model_func"]

    async def counted_llm(prompt: str, system_prompt: str | None = None, **kwargs: Any) -> Any:
        stats.llm_kinds[classify_prompt(prompt, system_prompt, kwargs.get("response_format")).value] += 1
        started = stats.llm_clock.enter()
        try:
            return await llm(prompt, system_prompt=system_prompt, **kwargs)
        finally:
            stats.llm_clock.leave(started)

    out = dict(components)
    out["embedding_func"] = dataclasses.replace(embedding, func=counted_embed)
    out["llm_model_func"] = counted_llm
    return out


#: The statistics of the corpus being indexed (the vector-store patch reports into it).
CURRENT = Stats()


def patch_vector_store() -> None:
    """Count what each vector store embeds at flush time (coalesced per id)."""
    from lightrag.kg.nano_vector_db_impl import NanoVectorDBStorage

    original_flush = NanoVectorDBStorage._flush_pending_locked
    original_upsert = NanoVectorDBStorage.upsert

    counter = _wordpiece_counter()

    async def flush(self: Any) -> None:
        contents = [pdoc.record.get("content", "") for pdoc in list(self._pending_upserts.values())
                    if pdoc.vector is None]
        entry = CURRENT.by_store[self.namespace]
        entry[0] += len(contents)
        entry[1] += sum(len(c) for c in contents)
        entry[2] += counter(contents) if counter is not None and contents else 0
        await original_flush(self)

    async def upsert(self: Any, data: dict[str, dict[str, Any]]) -> None:
        CURRENT.upserts_by_store[self.namespace] += len(data)
        await original_upsert(self, data)

    NanoVectorDBStorage._flush_pending_locked = flush  # type: ignore[method-assign]
    NanoVectorDBStorage.upsert = upsert  # type: ignore[method-assign]
