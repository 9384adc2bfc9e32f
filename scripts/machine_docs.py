"""Real handbook-like documents from this machine, for benchmarks: the packages' READMEs in
/usr/share/doc (the handbook) and manual pages rendered to text (each user's own documents).

Each document is cut to at most `max_chars` at a paragraph break and gets one planted sentence
(a code, a person, an office) with the question that finds it, so an answer can be checked;
the rest of the text is the package's own.  Deterministic: sorted paths, duplicates dropped.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scripts.corpus import _CITIES, _CODES, _person

DOC_ROOT = Path("/usr/share/doc")
MAN_ROOT = Path("/usr/share/man/man1")
_OVERSTRIKE = re.compile(".\x08")


@dataclass(frozen=True)
class MachineDoc:
    """One text document with a planted fact: `question` is answered by `fact` (the code and
    the person together, which no other document holds)."""

    name: str
    text: str
    question: str
    fact: str
    source: str  # where the text came from (a path or `man <page>`)

    @property
    def content(self) -> bytes:
        return self.text.encode()


def readme_texts(min_chars: int = 1500) -> Iterator[tuple[str, str]]:
    """(path, text) of each README/markdown/text file under /usr/share/doc, gzip read, sorted."""
    for path in sorted(DOC_ROOT.rglob("*")):
        name = path.name
        if path.is_symlink() or not path.is_file():
            continue
        if not (name.startswith("README") or name.removesuffix(".gz").endswith((".md", ".txt", ".rst", ".markdown"))):
            continue
        try:
            data = path.read_bytes()
            text = (gzip.decompress(data) if name.endswith(".gz") else data).decode("utf-8")
        except (OSError, UnicodeDecodeError, gzip.BadGzipFile, EOFError):
            continue
        if len(text) >= min_chars:
            yield str(path), text


def man_texts(min_chars: int = 1500) -> Iterator[tuple[str, str]]:
    """(`man <page>`, text) of section-1 manual pages rendered at 80 columns, sorted."""
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""}
    for path in sorted(MAN_ROOT.iterdir()):
        page = path.name.split(".")[0]
        done = subprocess.run(["man", "-P", "cat", page], capture_output=True, env=env, timeout=30, check=False)
        text = _OVERSTRIKE.sub("", done.stdout.decode("utf-8", "replace"))
        if done.returncode == 0 and len(text) >= min_chars:
            yield f"man {page}", text


def cut(text: str, max_chars: int) -> str:
    """The text up to `max_chars`, ending at the last paragraph break before it."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    end = head.rfind("\n\n")
    return head[: end if end > max_chars // 2 else max_chars]


def planted(texts: Iterator[tuple[str, str]], count: int, *, prefix: str, seed: int, max_chars: int,
            first_number: int = 0) -> list[MachineDoc]:
    """`count` distinct texts, each with one planted fact in a paragraph break near its middle."""
    docs: list[MachineDoc] = []
    seen: set[str] = set()
    for source, text in texts:
        body = cut(text.replace("\r\n", "\n"), max_chars)
        digest = hashlib.sha256(body.encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        number = first_number + len(docs)
        rnd = random.Random(seed * 7919 + number)
        code, person = f"{_CODES[number % len(_CODES)]}-{1000 + number}", _person(rnd)
        fact = f"{code} procedure is kept by {person}"
        sentence = f"The {fact} at the {rnd.choice(_CITIES)} office."
        middle = body.find("\n\n", len(body) // 2)
        middle = len(body) if middle < 0 else middle
        stem = re.sub(r"[^A-Za-z0-9]+", "-", source.removeprefix(str(DOC_ROOT))).strip("-")[:60]
        docs.append(MachineDoc(
            name=f"{prefix}-{number:04d}-{stem}.txt",
            text=f"{body[:middle]}\n\n{sentence}\n{body[middle:]}",
            question=f"Who keeps the {code} procedure?",
            fact=fact,
            source=source,
        ))
        if len(docs) == count:
            return docs
    raise RuntimeError(f"only {len(docs)} distinct {prefix} documents on this machine, {count} wanted")


def handbook(count: int, *, max_chars: int = 6000) -> list[MachineDoc]:
    """The team handbook: `count` package READMEs."""
    return planted(readme_texts(), count, prefix="handbook", seed=29, max_chars=max_chars)


def private_documents(count: int, *, max_chars: int = 6000, first_number: int = 5000) -> list[MachineDoc]:
    """Users' own documents: `count` manual pages (their codes never clash with the handbook's)."""
    return planted(man_texts(), count, prefix="own", seed=31, max_chars=max_chars, first_number=first_number)
