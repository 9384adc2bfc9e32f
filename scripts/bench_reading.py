#!/usr/bin/env python3
"""How well documents written by others are read (issue 27): prints one line per set and a total.

The real files are those kept in tests/fixtures/real_files (pdfplumber's, pypdf's and msg_parser's
test files: run-together words, an OCR text layer, Outlook messages) and those that ship inside
installed packages: the z3c.rml test suite's expected PDFs and its reference manual (ReportLab
output), docutils' LaTeX templates and reStructuredText files, python-docx's and python-pptx's templates.  A second set holds the
generated PDFs whose text a reader sees but whose text layer does not (JBIG2 scan, glyph-name
layer, text drawn as paths), with known words.  For each set it prints:

- accepted: files read without a refusal;
- coverage: for PDFs, the share of pdftotext's words (poppler-utils, when installed) found in
  our text; for the generated PDFs, the share of the known words found;
- junk/1k: glyph names, private-use codes, replacement and control characters per 1,000
  characters of extracted text;
- s/page: extraction seconds per page (OCR included).

`--project DIR` reads with another checkout of this project (an exported older commit), so
before and after are measured by the same script:

    git archive a7505a1 | tar -x -C /tmp/before
    PYTHONPATH=. .venv/bin/python scripts/bench_reading.py --project /tmp/before
    PYTHONPATH=. .venv/bin/python scripts/bench_reading.py
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

_WORD_RE = re.compile(r"[^\W\d_]{3,}")
_JUNK_RE = re.compile(r"(?:/[A-Za-z]{0,7}[0-9A-Fa-f]{1,5}){3,}|\(cid:\d+\)|[\ue000-\uf8ff\ufffd\x00-\x08\x0b\x0e-\x1f\u25a1]")


@dataclass
class Tally:
    """One set's figures."""

    files: int = 0
    accepted: int = 0
    chars: int = 0
    junk: int = 0
    pages: int = 0
    seconds: float = 0.0
    covered: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        coverage = f"{100 * sum(self.covered) / len(self.covered):5.1f} %" if self.covered else "    n/a"
        junk = 1000 * self.junk / max(1, self.chars)
        per_page = self.seconds / max(1, self.pages)
        return (f"{name:28s} accepted {self.accepted:3d}/{self.files:<3d} ({100 * self.accepted / max(1, self.files):5.1f} %)"
                f"  coverage {coverage}  junk/1k {junk:6.2f}  s/page {per_page:6.3f}")


def _package_file(package: str, path: str) -> Path | None:
    try:
        located = Path(str(importlib.metadata.distribution(package).locate_file(path)))
    except importlib.metadata.PackageNotFoundError:
        return None
    return located if located.exists() else None


#: The set of real files kept in this repository (tests/fixtures/real_files, see its README).
FIXTURE_SET = "Real files (pdfplumber, pypdf, msg_parser)"


def real_files() -> Iterator[tuple[str, Path]]:
    """(set name, path) of every real file used."""
    for path in sorted((PROJECT_ROOT / "tests" / "fixtures" / "real_files").iterdir()):
        if path.suffix != ".md":  # its README describes the files
            yield FIXTURE_SET, path
    rml = _package_file("z3c.rml", "z3c/rml")
    if rml is not None:
        yield "PDF (z3c.rml)", rml / "rml-reference.pdf"
        for path in sorted((rml / "tests" / "expected").glob("*.pdf")):
            yield "PDF (z3c.rml)", path
    docutils = _package_file("docutils", "docutils")
    if docutils is not None:
        for path in sorted(docutils.rglob("*.tex")):
            yield "LaTeX / reST (docutils, numpy)", path
    numpy = _package_file("numpy", "numpy")
    if numpy is not None:
        for path in sorted(numpy.rglob("*.rst")):
            yield "LaTeX / reST (docutils, numpy)", path
    for package, path in (("python-docx", "docx/templates/default.docx"), ("python-pptx", "pptx/templates/default.pptx")):
        found = _package_file(package, path)
        if found is not None:
            yield "Office templates", found


def _pdftotext_words(path: Path) -> set[str] | None:
    if shutil.which("pdftotext") is None:
        return None
    done = subprocess.run(["pdftotext", "-q", str(path), "-"], capture_output=True, timeout=120, check=False)
    return {word.lower() for word in _WORD_RE.findall(done.stdout.decode("utf-8", "replace"))}


def _coverage(expected: set[str] | None, text: str) -> float | None:
    if not expected:
        return None
    found = {word.lower() for word in _WORD_RE.findall(text)}
    return len(expected & found) / len(expected)


def measure(tally: Tally, name: str, data: bytes, read: Callable[[bytes, str], object], expected: set[str] | None) -> None:
    tally.files += 1
    started = time.perf_counter()
    try:
        document = read(data, name)
    except Exception as exc:  # noqa: BLE001 - a refusal is a figure here, not a failure
        tally.seconds += time.perf_counter() - started
        tally.refused.append(f"{name}: {str(exc)[:100]}")
        return
    tally.seconds += time.perf_counter() - started
    text = str(getattr(document, "text", ""))
    tally.accepted += 1
    tally.pages += int(getattr(document, "pages", 1) or 1)
    tally.chars += len(text)
    tally.junk += sum(len(match) for match in _JUNK_RE.findall(text))
    coverage = _coverage(expected, text)
    if coverage is not None:
        tally.covered.append(coverage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=PROJECT_ROOT, help="the checkout whose readers are measured")
    parser.add_argument("--show-refused", action="store_true")
    options = parser.parse_args()
    # The generated PDFs come from this checkout's fixtures (imported first: they use no rag_worker
    # code), the readers from the measured one.
    sys.path.insert(0, str(PROJECT_ROOT))
    from tests.fixtures.pdf_layers import make_glyph_name_layer_pdf, make_jbig2_scan_pdf, make_vector_text_pdf

    sys.path.insert(0, str(options.project.resolve()))
    from rag_worker.ingest.detection import detect_format
    from rag_worker.ingest.extraction import extract_document

    def read(data: bytes, name: str) -> object:
        return extract_document(data, detect_format(data, name, None), filename=name)

    tallies: dict[str, Tally] = {}
    for set_name, path in real_files():
        expected = _pdftotext_words(path) if path.suffix == ".pdf" else None
        measure(tallies.setdefault(set_name, Tally()), path.name, path.read_bytes(), read, expected)

    lines = ["The ZEPHYR-77 compressor was serviced by Ingrid Dahl.", "Invoice 4471 totals 1,250.00 EUR."]
    known = {word.lower() for word in _WORD_RE.findall(" ".join(lines))}
    generated = Tally()
    for name, data in (
        ("jbig2-scan.pdf", make_jbig2_scan_pdf(lines)),
        ("glyph-names.pdf", make_glyph_name_layer_pdf(lines, "/g3/g133/g145/g12/g77/g3/g99/g45/g3/g133/g17/g201")),
        ("vector-text.pdf", make_vector_text_pdf(lines)),
    ):
        measure(generated, name, data, read, known)
    tallies["PDF text layers (generated)"] = generated

    total = Tally()
    for name, tally in tallies.items():
        print(tally.line(name))
        for field_name in ("files", "accepted", "chars", "junk", "pages", "seconds"):
            setattr(total, field_name, getattr(total, field_name) + getattr(tally, field_name))
        total.covered += tally.covered
        total.refused += tally.refused
    print(total.line("all"))
    if options.show_refused:
        for refusal in total.refused:
            print("  refused:", refusal)


if __name__ == "__main__":
    main()
