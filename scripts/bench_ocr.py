#!/usr/bin/env python3
"""OCR benchmark: word accuracy on generated 300-dpi scans of known text, speed, memory.

Pages are A4 at 300 dpi, 30 lines of dictionary words and numbers each; every other page is
printed smaller (10 pt) with blur and speckles like a real scanner.  Three readers run on the
same pages in the same process:

* ``ours``: `rag_worker.ingest.ocr.ocr_image` (crop to ink, scale, reading order);
* ``library``: the plain ``RapidOCR(...)(image)`` call with the same settings on the full page;
* ``library-defaults``: ``RapidOCR`` with its own defaults (orientation classifier on).

Then a scanned PDF of all the pages goes through `extract_isolated` (the worker's path: an
extractor process, engine loaded on demand) for pages/second end to end and the extractor
process's RSS with OCR loaded.

`--layout` measures pages as people scan them instead (issue 27): two-column pages (truth: the
left column, then the right), a one-column page turned 90°, 180° and 270°, and a real one-column
page (pdfplumber's issue-598 page, truth: its text layer) tilted ±2° and ±5°, for word accuracy
in reading order (`in order`) and regardless of order (`words`).  `--project DIR` reads with
another checkout (an exported older commit), so before and after come from the same script.

Usage: python scripts/bench_ocr.py [--pages 6] [--json out.json]
       python scripts/bench_ocr.py --layout [--project /tmp/before]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rag_worker.ingest import ocr  # noqa: E402
from tests.fixtures.scans import make_scanned_pdf, random_lines, render_page, scanner_noise  # noqa: E402


def word_accuracy(truth: list[str], lines: list[str]) -> float:
    """Share of the true words found, in order, in the OCR output (matching word blocks)."""
    expected = " ".join(truth).split()
    matcher = difflib.SequenceMatcher(a=expected, b=" ".join(lines).split(), autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / len(expected)


def word_share(truth: list[str], lines: list[str]) -> float:
    """Share of the true words found, in any order (a multiset intersection)."""
    from collections import Counter

    expected = Counter(" ".join(truth).split())
    found = Counter(" ".join(lines).split())
    return sum((expected & found).values()) / sum(expected.values())


def two_column_page(seed: int) -> tuple[list[str], Any]:
    """An A4 page of two columns of 25 lines (5-word lines at 11 pt), as a journal prints them."""
    from PIL import Image, ImageDraw, ImageFont

    left = [" ".join(line.split()[:5]) for line in random_lines(seed, 25)]
    right = [" ".join(line.split()[:5]) for line in random_lines(seed + 100, 25)]
    page = Image.new("L", (2480, 3508), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=46)
    for row, (a, b) in enumerate(zip(left, right, strict=True)):
        draw.text((180, 200 + row * 74), a, font=font, fill=0)
        draw.text((1300, 200 + row * 74), b, font=font, fill=0)
    return left + right, page


#: A real one-column page (LaTeX output, from pdfplumber's test suite) for the tilted cases.
REAL_PAGE = ROOT / "tests" / "fixtures" / "real_files" / "pdfplumber-issue-598-example.pdf"


def real_page() -> tuple[list[str], Any]:
    """`REAL_PAGE` rendered at 300 dpi, and its lines as pdfium reads its text layer (the truth)."""
    import unicodedata

    import pypdfium2

    document = pypdfium2.PdfDocument(REAL_PAGE)
    page = document[0]
    text = page.get_textpage().get_text_range().replace("\ufffe", "-\n")
    lines = [unicodedata.normalize("NFKC", line).strip() for line in text.splitlines() if line.strip()]
    return lines, page.render(scale=300 / 72, grayscale=True).to_pil()


def layout_pages() -> list[tuple[str, list[str], Any]]:
    pages = [(f"two columns {n}", *two_column_page(n)) for n in (1, 2)]
    lines = random_lines(7, 20)
    for turn in (90, 180, 270):
        pages.append((f"turned {turn}", lines, render_page(lines).rotate(turn, expand=True, fillcolor=255)))
    truth, image = real_page()
    for tilt in (0, 2, -2, 5, -5):  # a photo of a page held a little askew
        pages.append((f"real page {tilt:+d} deg", truth, image.rotate(tilt, expand=True, fillcolor=255)))
    return pages


def layout_main(project: Path | None) -> None:
    if project is not None:
        sys.path.insert(0, str(project.resolve()))
        for name in [name for name in sys.modules if name.startswith("rag_worker")]:
            del sys.modules[name]
    from rag_worker.ingest import ocr as reader

    reader.get_engine()
    print("page              in order   words   s/page")
    for name, truth, image in layout_pages():
        started = time.perf_counter()
        lines = reader.ocr_image(image)
        elapsed = time.perf_counter() - started
        print(f"{name:<17} {word_accuracy(truth, lines):>8.1%} {word_share(truth, lines):>7.1%} {elapsed:>8.2f}")


def make_pages(count: int) -> list[tuple[list[str], Any]]:
    pages = []
    for index in range(count):
        lines = random_lines(index, 30)
        page = render_page(lines) if index % 2 == 0 else scanner_noise(render_page(lines, font_px=42), index)
        pages.append((lines, page))
    return pages


def run_reader(name: str, read: Any, pages: list[tuple[list[str], Any]]) -> dict[str, Any]:
    accuracies = []
    started = time.perf_counter()
    for truth, image in pages:
        accuracies.append(word_accuracy(truth, read(image)))
    elapsed = time.perf_counter() - started
    return {
        "reader": name,
        "word_accuracy": round(sum(accuracies) / len(accuracies), 4),
        "worst_page_accuracy": round(min(accuracies), 4),
        "seconds_per_page": round(elapsed / len(pages), 3),
    }


def library_reader(defaults: bool) -> Any:
    from rapidocr import RapidOCR

    params = {f"{section}.model_path": str(path) for section, path in ocr.bundled_model_paths().items()}
    engine = RapidOCR(params=params | ({"Global.log_level": "error"} if defaults else ocr.ENGINE_PARAMS))
    engine(render_page(["warm up"]))
    return lambda image: list(engine(image).txts or ())


def isolated_run(pages: list[tuple[list[str], Any]]) -> dict[str, Any]:
    import psutil

    from rag_worker.ingest.formats import DocFormat
    from rag_worker.ingest.isolation import extract_isolated, shutdown_extractors
    from rag_worker.ingest.ocr import OcrOptions

    data = make_scanned_pdf([truth for truth, _ in pages])
    started = time.perf_counter()
    document = extract_isolated(data, DocFormat.PDF, timeout=600, ocr=OcrOptions(max_pages=len(pages)))
    elapsed = time.perf_counter() - started
    children = psutil.Process().children(recursive=True)
    rss = max((child.memory_info().rss for child in children), default=0)
    shutdown_extractors()
    return {
        "pdf_pages": len(pages),
        "ocr_pages": len(document.ocr_pages),
        "seconds": round(elapsed, 2),
        "pages_per_second": round(len(pages) / elapsed, 3),
        "extractor_rss_mb": rss >> 20,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--layout", action="store_true", help="two-column and turned pages instead")
    parser.add_argument("--project", type=Path, help="with --layout: the checkout whose reader is measured")
    args = parser.parse_args()
    if args.layout:
        layout_main(args.project)
        return 0
    pages = make_pages(args.pages)
    started = time.perf_counter()
    ocr.get_engine()
    load_s = time.perf_counter() - started
    results = {
        "engine_load_s": round(load_s, 2),
        "readers": [
            run_reader("ours", ocr.ocr_image, pages),
            run_reader("library", library_reader(defaults=False), pages),
            run_reader("library-defaults", library_reader(defaults=True), pages),
        ],
        "isolated": isolated_run(pages),
    }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    lines = [f"engine load: {results['engine_load_s']} s", "reader            word acc  worst    s/page"]
    for row in results["readers"]:
        lines.append(
            f"{row['reader']:<17} {row['word_accuracy']:>8.2%}  {row['worst_page_accuracy']:>6.1%}  "
            f"{row['seconds_per_page']:>7.2f}"
        )
    iso = results["isolated"]
    lines.append(
        f"extractor process: {iso['pdf_pages']}-page scanned PDF in {iso['seconds']} s "
        f"({iso['pages_per_second']} pages/s, engine load included), RSS {iso['extractor_rss_mb']} MB"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
