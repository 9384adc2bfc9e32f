"""Instrumentation for scripts/profile_indexing.py: busy clocks, counters, and the wrappers that
count embedding calls and LLM prompts and watch LightRAG's vector stores."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
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
    truncated: Counter = dataclasses.field(default_factory=Counter)
    stores: dict = dataclasses.field(default_factory=dict)  # kind -> StoreStats


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


def count_wordpieces(stats: Stats) -> None:
    """Model tokens per store and in all, counted after the run (tokenizing costs CPU)."""
    counter = _wordpiece_counter()
    if counter is None:
        return
    for store in stats.stores.values():
        store.wordpieces = sum(counter(texts) for texts in store.batches)
    stats.wordpieces = sum(store.wordpieces for store in stats.stores.values())


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


#: The statistics of the corpus being indexed (the vector-store watchers report into it).
CURRENT = Stats()

#: The vector stores of one LightRAG instance, by the kind of text they hold.
STORE_KINDS = {"chunks_vdb": "chunks", "entities_vdb": "entities", "relationships_vdb": "relations"}


@dataclasses.dataclass
class StoreStats:
    """What one vector store had embedded, and what it asked to embed that it already held."""

    clock: BusyClock = dataclasses.field(default_factory=BusyClock)
    texts: int = 0
    chars: int = 0
    wordpieces: int = 0
    upserts: int = 0
    flushes: int = 0
    batch_sizes: Counter = dataclasses.field(default_factory=Counter)
    # Rows waiting for a vector at a commit, against the row the store already holds.
    new_rows: int = 0
    same_content: int = 0
    changed_content: int = 0
    changed_examples: list = dataclasses.field(default_factory=list)  # (stored, new) content, a few
    batches: list = dataclasses.field(default_factory=list)  # the texts of each call (--dump-texts)


def watch_vector_stores(rag: Any, stats: Stats) -> None:
    """Count, per vector store of `rag`, the texts it embeds (and their time) and, at each commit,
    how many waiting rows carry the very content the store already holds under that id."""
    for attribute, kind in STORE_KINDS.items():
        storage = getattr(rag, attribute)
        store = stats.stores.setdefault(kind, StoreStats())
        embedding = storage.embedding_func
        storage.embedding_func = dataclasses.replace(embedding, func=_counting(embedding.func, store))
        storage.upsert = _counting_upserts(storage.upsert, store)
        storage.index_done_callback = _classifying_commits(storage, storage.index_done_callback, store)


def _counting(inner: Any, store: StoreStats) -> Any:
    async def embed(texts: list[str], **kwargs: Any) -> Any:
        if kwargs.get("context") == "query":
            return await inner(texts, **kwargs)
        started = store.clock.enter()
        try:
            return await inner(texts, **kwargs)
        finally:
            store.clock.leave(started)
            store.texts += len(texts)
            store.chars += sum(len(t) for t in texts)
            store.batch_sizes[len(texts)] += 1
            store.batches.append(list(texts))  # model tokens counted after the run (count_wordpieces)

    return embed


def _counting_upserts(upsert: Any, store: StoreStats) -> Any:
    async def counted(data: dict[str, dict[str, Any]]) -> Any:
        store.upserts += len(data)
        return await upsert(data)

    return counted


def _classifying_commits(storage: Any, commit: Any, store: StoreStats) -> Any:
    seen: dict[int, Any] = {}  # rows already classified (at an overlapping commit), kept alive

    async def classified() -> Any:
        waiting = {}
        for row_id, row in storage._pending_upserts.items():
            if row.vector is None and id(row) not in seen:
                seen[id(row)] = row
                waiting[row_id] = row.record.get("content")
        if waiting:
            store.flushes += 1
            held = {dp["__id__"]: dp.get("content") for dp in storage._client._NanoVectorDB__storage["data"]
                    if dp["__id__"] in waiting}
            for row_id, content in waiting.items():
                if row_id not in held:
                    store.new_rows += 1
                elif held[row_id] == content:
                    store.same_content += 1
                else:
                    store.changed_content += 1
                    if len(store.changed_examples) < 12:
                        store.changed_examples.append((held[row_id], content))
        return await commit()

    return classified


@dataclasses.dataclass
class ModelStats:
    """What the ONNX model itself ran: batches, real and padded tokens, seconds in inference."""

    batches: int = 0
    texts: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    seconds: float = 0.0
    # Wall seconds during which exactly k inferences ran at once (k = 1, 2, ...).
    parallel: Counter = dataclasses.field(default_factory=Counter)
    _active: int = 0
    _since: float = 0.0

    def reset(self) -> None:
        for field in dataclasses.fields(self):
            if field.default_factory is not dataclasses.MISSING:
                setattr(self, field.name, field.default_factory())
            else:
                setattr(self, field.name, field.default)

    def change(self, delta: int) -> None:
        """One inference starts (+1) or ends (-1): close the interval at the old concurrency."""
        now = time.perf_counter()
        if self._active:
            self.parallel[self._active] += now - self._since
        self._active += delta
        self._since = now


def watch_model(stats: ModelStats) -> None:
    """Count every inference batch of OnnxSentenceEmbedder (shapes and time of `session.run`)."""
    from rag_worker.embedded import models

    lock = threading.Lock()
    original_load = models.OnnxSentenceEmbedder.load

    def load(self: Any) -> None:
        original_load(self)
        session = self._session
        if getattr(session, "watched", False):
            return

        class Watched:
            watched = True

            def __getattr__(self, name: str) -> Any:
                return getattr(session, name)

            def run(self, outputs: Any, feed: dict[str, Any], *args: Any) -> Any:
                with lock:
                    stats.change(+1)
                started = time.perf_counter()
                try:
                    return session.run(outputs, feed, *args)
                finally:
                    took = time.perf_counter() - started
                    mask = feed["attention_mask"]
                    with lock:
                        stats.change(-1)
                        stats.batches += 1
                        stats.texts += int(mask.shape[0])
                        stats.tokens += int(mask.sum())
                        stats.padded_tokens += int(mask.size)
                        stats.seconds += took

        self._session = Watched()

    models.OnnxSentenceEmbedder.load = load  # type: ignore[method-assign]
