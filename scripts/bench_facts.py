#!/usr/bin/env python3
"""Facts in the top 10 on real files (issue 27): is the passage holding a fact retrieved?

The files are those `scripts/bench_reading.py` gathers: every one under `tests/fixtures/real_files/`
(pdfplumber's, pypdf's and msg_parser's), then the packages' (the z3c.rml manual and test PDFs,
docutils' LaTeX, numpy's reStructuredText, the Office templates) taken evenly, `--max-files` in all.

The facts come from a *reference* text that neither reader version produces: pdftotext's for a
PDF (poppler-utils), the file itself for text formats; other files give no facts.  The rule,
applied to every file the same way (no question is picked by hand):

1. the reference text's line-end hyphens are joined and its white space collapsed, and it is cut
   into sentences at `.`, `!` or `?` followed by a space and a capital;
2. a sentence is eligible with 10 to 40 words, at least 80 % of them words of letters, and no URL;
3. up to `--per-file` eligible sentences are taken, evenly spread (at 1/3 and 2/3 for two);
4. the question is the sentence's first half (its words up to the middle); the fact is the set of
   the second half's words of 4 letters or more (at least 3 of them, else the next sentence);
5. a fact is found when one of the first 10 passages retrieved holds at least 80 % of its words
   (lower-cased, NFKC).  A file the reader refuses keeps its questions: they count as not found.

Every accepted file is indexed in this process as the worker indexes it (`build_components` +
`new_lightrag`: built-in extractor, chunker, packaged embedding model; no LLM), and each
question is asked in naive and mix mode with the query tool's defaults, retrieval only.
`--project DIR` reads, indexes and queries with another checkout (an exported older commit):

    git archive a7505a1 | tar -x -C /tmp/before27
    PYTHONPATH=. .venv/bin/python scripts/bench_facts.py --project /tmp/before27
    PYTHONPATH=. .venv/bin/python scripts/bench_facts.py
"""

from __future__ import annotations

import argparse
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

# Imported before --project is put first on the path: these are this checkout's scripts.
from scripts.bench_exact import index, open_rag, passages  # noqa: E402
from scripts.bench_reading import FIXTURE_SET, real_files  # noqa: E402

MODES = ("naive", "mix")
#: The share of facts that must be found in the top 10 (each mode); printed beside the result.
FLOOR = 0.85
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_FACT_WORD_RE = re.compile(r"[^\W\d_]{4,}")
_TEXT_SUFFIXES = {".tex", ".rst", ".txt", ".md"}


@dataclass(frozen=True)
class Fact:
    file: str
    question: str
    words: frozenset[str]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def reference_text(path: Path) -> str | None:
    """The text a fact is taken from: pdftotext's for a PDF, the file's own for a text format."""
    if path.suffix.lower() == ".pdf":
        if shutil.which("pdftotext") is None:
            return None
        done = subprocess.run(["pdftotext", "-q", str(path), "-"], capture_output=True, timeout=120, check=False)
        return done.stdout.decode("utf-8", "replace")
    if path.suffix.lower() in _TEXT_SUFFIXES:
        return path.read_text(encoding="utf-8", errors="replace")
    return None


def facts_of(name: str, text: str, per_file: int) -> list[Fact]:
    """Rule steps 1-4 (see the module docstring)."""
    flat = " ".join(re.sub(r"-\n(?=[a-z])", "", text).split())
    eligible = []
    for sentence in _SENTENCE_END_RE.split(flat):
        words = sentence.split()
        if 10 <= len(words) <= 40 and "http" not in sentence and \
                len(_WORD_RE.findall(sentence)) >= 0.8 * len(words):
            eligible.append(words)
    facts: list[Fact] = []
    for slot in range(per_file):
        start = len(eligible) * (slot + 1) // (per_file + 1)
        for words in eligible[start:]:
            half = len(words) // 2
            fact_words = frozenset(_fold(word) for word in _FACT_WORD_RE.findall(" ".join(words[half:])))
            question = " ".join(words[:half])
            if len(fact_words) >= 3 and all(f.question != question for f in facts):
                facts.append(Fact(name, question, fact_words))
                break
    return facts


def found(fact: Fact, got: list[str]) -> bool:
    """Rule step 5."""
    for passage in got[:10]:
        tokens = set(_FACT_WORD_RE.findall(_fold(passage)))
        if len(fact.words & tokens) >= 0.8 * len(fact.words):
            return True
    return False


def gather(max_files: int, per_file: int) -> list[tuple[Path, list[Fact]]]:
    """The files with facts: every one under tests/fixtures/real_files, then the packages' files
    taken evenly up to `max_files` in all."""
    chosen = _with_facts([path for name, path in real_files() if name == FIXTURE_SET], per_file)
    others = _with_facts([path for name, path in real_files() if name != FIXTURE_SET], per_file)
    room = max(0, max_files - len(chosen))
    if len(others) > room:
        others = [others[i * len(others) // room] for i in range(room)] if room else []
    return chosen + others


def _with_facts(paths: list[Path], per_file: int) -> list[tuple[Path, list[Fact]]]:
    with_facts = []
    for path in paths:
        text = reference_text(path)
        facts = facts_of(path.name, text, per_file) if text else []
        if facts:
            with_facts.append((path, facts))
    return with_facts


async def run(files: list[tuple[Path, list[Fact]]], work: Path) -> dict[str, Any]:
    from rag_worker.ingest.detection import detect_format
    from rag_worker.ingest.extraction import extract_document

    texts, names, refused = [], [], []
    for path, _ in files:
        data = path.read_bytes()
        try:
            document = extract_document(data, detect_format(data, path.name, None), filename=path.name)
        except Exception as exc:  # noqa: BLE001 - a refusal is a figure here
            refused.append(f"{path.name}: {str(exc)[:80]}")
            continue
        if document.text.strip() and path.name not in names:
            texts.append(document.text)
            names.append(path.name)
    rag = await open_rag(work, "facts")
    try:
        seconds = await index(rag, texts, names)
        facts = [fact for _, file_facts in files for fact in file_facts]
        hits = {mode: 0 for mode in MODES}
        missed: list[str] = []
        for mode in MODES:
            for fact in facts:
                got, _ = await passages(rag, fact.question, mode)
                hit = found(fact, got)
                hits[mode] += hit
                if not hit:
                    missed.append(f"{mode}: {fact.file}: {fact.question[:60]}")
        return {"files": len(files), "indexed": len(texts), "refused": refused, "facts": len(facts),
                "hits": hits, "indexing_s": seconds, "missed": missed}
    finally:
        await rag.finalize_storages()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, help="the checkout whose reader and index are measured")
    parser.add_argument("--max-files", type=int, default=40)
    parser.add_argument("--per-file", type=int, default=2)
    parser.add_argument("--show-missed", action="store_true", help="name the facts not found")
    options = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    files = gather(options.max_files, options.per_file)  # this checkout's files and rule, before and after
    if options.project is not None:
        sys.path.insert(0, str(options.project.resolve()))
        for name in [name for name in sys.modules if name.split(".")[0] in ("rag_worker", "protocol", "config")]:
            del sys.modules[name]
    with tempfile.TemporaryDirectory(prefix="bench-facts-") as tmp:
        result = anyio.run(run, files, Path(tmp))
    print(f"files {result['files']} (indexed {result['indexed']}), facts {result['facts']}, "
          f"indexing {result['indexing_s']:.0f} s")
    for mode in MODES:
        hits = result["hits"][mode]
        print(f"{mode:6s} fact's passage in the top 10: {hits}/{result['facts']} "
              f"({100 * hits / max(1, result['facts']):.1f} %)  floor {100 * FLOOR:.0f} %")
    for line in result["refused"]:
        print("  refused:", line)
    if options.show_missed:
        for line in result["missed"]:
            print("  missed:", line)


if __name__ == "__main__":
    main()
