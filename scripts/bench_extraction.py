"""Extraction time of our extractors vs the plain library reading the same file, in one run.

    .venv/bin/python scripts/bench_extraction.py [--repeat 5]

For each generated file: the best of N timings of `extract_document` (safety checks, side
stories, normalisation) and of the bare library call that gets the body text (python-docx
paragraphs, pypdf `extract_text`, striprtf, ebooklib + lxml, lxml over content.xml).  The
ratio is ours / plain; the issue's target is at most 1.1.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_worker.ingest.extraction import extract_document  # noqa: E402
from rag_worker.ingest.formats import DocFormat  # noqa: E402
from tests.fixtures.documents import make_large_pdf  # noqa: E402
from tests.fixtures.reader_documents import make_docx_with_side_stories, make_epub, make_odt, make_rtf  # noqa: E402

_PARAGRAPH = "The Auf-\nlage of the ﬁnal report was measured at PLANT-19 by Greta Holm. " * 4


def _plain_docx(data: bytes) -> str:
    import docx

    return "\n".join(p.text for p in docx.Document(io.BytesIO(data)).paragraphs)


def _plain_pdf(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def _plain_rtf(data: bytes) -> str:
    from striprtf.striprtf import rtf_to_text

    return str(rtf_to_text(data.decode("latin-1"), errors="replace"))


def _plain_epub(data: bytes) -> str:
    import lxml.html
    from ebooklib import ITEM_DOCUMENT, epub

    book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
    return "\n".join(
        lxml.html.fromstring(item.get_content()).text_content() for item in book.get_items_of_type(ITEM_DOCUMENT)
    )


def _plain_odt(data: bytes) -> str:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return "".join(etree.fromstring(archive.read("content.xml")).itertext())


def _files() -> list[tuple[str, bytes, DocFormat, Callable[[bytes], str]]]:
    import docx

    document = docx.Document()
    for _ in range(2000):
        document.add_paragraph(_PARAGRAPH)
    out = io.BytesIO()
    document.save(out)
    big_docx = out.getvalue()
    side = make_docx_with_side_stories(body=_PARAGRAPH, header="Header", footer="Footer", footnote="Note", comment="C")
    return [
        ("docx, 2000 paragraphs", big_docx, DocFormat.DOCX, _plain_docx),
        ("docx, side stories", side, DocFormat.DOCX, _plain_docx),
        ("pdf, ~1 MB", make_large_pdf(1.0), DocFormat.PDF, _plain_pdf),
        ("rtf", make_rtf(body=_PARAGRAPH * 200, header="H", footer="F", footnote="N", title="T"), DocFormat.RTF,
         _plain_rtf),
        ("epub, 50 chapters", make_epub([(f"Ch {n}", f"<p>{_PARAGRAPH * 20}</p>") for n in range(50)], title="B"),
         DocFormat.EPUB, _plain_epub),
        ("odt", make_odt(body=_PARAGRAPH * 300, header="H", footer="F", footnote="N", comment="C", title="T"),
         DocFormat.ODT, _plain_odt),
    ]


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Print ours, plain and the ratio per file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.stdout.write(f"{'file':<24}{'size':>10}{'ours ms':>10}{'plain ms':>10}{'ratio':>8}\n")
    for name, data, fmt, plain in _files():
        ours = _best(lambda data=data, fmt=fmt: extract_document(data, fmt), args.repeat)  # type: ignore[misc]
        bare = _best(lambda data=data, plain=plain: plain(data), args.repeat)  # type: ignore[misc]
        sys.stdout.write(f"{name:<24}{len(data):>10,}{ours * 1000:>10.1f}{bare * 1000:>10.1f}{ours / bare:>8.2f}\n")


if __name__ == "__main__":
    main()
