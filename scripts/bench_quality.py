#!/usr/bin/env python3
"""Knowledge-graph quality of the embedded default (no LLM) on real texts and generated documents.

    nice -n 5 .venv/bin/python scripts/bench_quality.py [--generated 20] [--sample KEY] [--json out.json]

The texts are indexed in this process exactly as the worker indexes them (`build_components` +
`new_lightrag`: the built-in extractor, the chunker, the packaged embedding model). Real texts are
prose written by others that ships with the machine's packages, in four languages (vim's tutor,
GnuPG's help texts, APT's apt_preferences(5) manual page, CPython's licence and history, vim's
Uganda notice); generated ones are `scripts/corpus.py`'s two-page reports, read from PDF as the
worker reads them (their indexing time gives the docs/minute figure). A text whose package is
missing is skipped and named.

Every entity name is judged by the rules below (the first that applies is its verdict). The word
lists are independent of the extractor's own: "stop words" are the `stop-words` package's (PyPI,
BSD-3-Clause; broad lists, content words such as "way" or "test" among them), "function words"
are Snowball's closed-class lists as PostgreSQL ships them (tsearch_data/*.stop; the stop words
stand in when PostgreSQL is not installed), both for EN, DE, FR and ES:

  short           the name has 2 characters or fewer ("R2", "Ge", "RA")
  stop-word       every word of the name is a stop word ("Perhaps", "Too", "und", "According")
  fragment        a multi-word name that begins or ends with a function word, or holds a lone
                  letter ("Die Pakete", "Sei X", "Press G")
  common-word     one word that the same document writes in lower case (outside URLs, paths and
                  identifiers) more often than capitalised in mid-sentence: a sentence-initial or
                  headline capital, not a name ("Quiet", "KIND"; "Vim" stays a name though `vim` runs it)
  common-noun     (German texts) one word that the document uses after an article ("die Version")
  variant         a case, one-edit or truncated spelling of a more frequent name of the same
                  document ("VICKSBURG", "VICKSBUEG", "VICKSB" beside "Vicksburg")
  run-together    words merged into one token, a stop word among them ("DieGruppenoperationvonGaufX")
  odd-case        a short token with a capital after lower case letters ("TsS")

Targets (issue 17): junk at most 10 % of the names, at least 60 % of entities typed (not "other").
"""

from __future__ import annotations

import argparse
import glob
import gzip
import logging
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_support import machine_info  # noqa: E402

JUNK_TARGET = 0.10
TYPED_TARGET = 0.60
UNTYPED = {"", "other", "unknown", "unclassified"}
LANGUAGES = ("en", "de", "fr", "es")
DEFAULT_SAMPLE = "apt-preferences-de"


# ------------------------------------------------------------------------------ real texts
@dataclass(frozen=True)
class RealText:
    key: str
    language: str
    title: str
    load: Callable[[], str | None]


def _first(pattern: str) -> Path | None:
    found = sorted(glob.glob(pattern))
    return Path(found[-1]) if found else None


def _read(pattern: str, clean: Callable[[str], str] = lambda text: text) -> Callable[[], str | None]:
    def load() -> str | None:
        path = _first(pattern)
        return clean(path.read_text(encoding="utf-8", errors="replace")) if path else None

    return load


def _without_comments(text: str) -> str:
    """GnuPG help files: `#` comment lines and `.#key` markers are not part of the help a reader sees."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(("#", ".")))


def _man_page(pattern: str) -> Callable[[], str | None]:
    """A manual page as `man` renders it (text a reader sees), or None without man/the page."""

    def load() -> str | None:
        path = _first(pattern)
        if path is None or shutil.which("man") is None:
            return None
        env = {**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "0"}
        rendered = subprocess.run(["man", "-E", "UTF-8", "-l", str(path)], capture_output=True, env=env, timeout=60)
        text = rendered.stdout.decode("utf-8", "replace")
        text = re.sub(r".\x08", "", text)  # overstrike bold/underline
        return text if len(text) > 1000 else gzip.decompress(path.read_bytes()).decode("utf-8", "replace")

    return load


def real_texts() -> list[RealText]:
    vim = "/usr/share/vim/vim*/"
    texts = [
        RealText("python-license-en", "en", "CPython LICENSE (history and licence)",
                 _read(f"{sys.base_prefix}/lib/python3*/LICENSE.txt")),
        RealText("vim-uganda-en", "en", "vim :help uganda (ICCF Holland)", _read(vim + "doc/uganda.txt")),
    ]
    for lang, suffix in (("en", ""), ("de", ".de"), ("fr", ".fr"), ("es", ".es")):
        texts.append(RealText(f"vim-tutor-{lang}", lang, f"vim tutor ({lang})", _read(f"{vim}tutor/tutor{suffix}.utf-8")))
        texts.append(RealText(f"gnupg-help-{lang}", lang, f"GnuPG help ({lang})",
                              _read(f"/usr/share/gnupg/help{suffix}.txt", _without_comments)))
        man_dir = "" if lang == "en" else f"{lang}/"
        texts.append(RealText(f"apt-preferences-{lang}", lang, f"apt_preferences(5) ({lang})",
                              _man_page(f"/usr/share/man/{man_dir}man5/apt_preferences.5.gz")))
    return texts


# ---------------------------------------------------------------------------------- judge
@dataclass(frozen=True)
class WordLists:
    stop: frozenset[str]  # broad stop-word lists: a name made only of these is no name
    function: frozenset[str]  # closed-class words: a name does not begin or end with one
    function_source: str


_SNOWBALL = {"en": "english", "de": "german", "fr": "french", "es": "spanish"}


def judge_word_lists() -> WordLists:
    try:
        from stop_words import get_stop_words
    except ImportError:
        sys.exit("bench_quality needs the judge's stop-word lists: pip install stop-words==2025.11.4")
    stop = frozenset(w.casefold() for lang in LANGUAGES for w in get_stop_words(lang) if w.strip())
    found = [_first(f"/usr/share/postgresql/*/tsearch_data/{_SNOWBALL[lang]}.stop") for lang in LANGUAGES]
    if any(path is None for path in found):
        return WordLists(stop, stop, "stop-words (PostgreSQL's Snowball lists not found)")
    function = frozenset(word.strip().casefold() for path in found if path
                         for word in path.read_text(encoding="utf-8").split() if word.strip())
    return WordLists(stop, function, f"Snowball ({found[0].parent if found[0] else ''})")


_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")
# A capitalised word after a lower-case word and one space: capitalised on purpose.
_MID_CAPITAL_RE = re.compile(r"(?<=[a-zäöüßàâçéèêëîïôûùüÿñæœáíóú,] )([A-ZÄÖÜÀÂÇÉÈÊËÎÏÔÛÙÜŸÑ][\w'’-]*)")
_NOT_PROSE_RE = re.compile(r"\S*[/@_\\]\S*|\S+\.[^\s.]\S*")  # URLs, paths, e-mail, file and dotted names
_GERMAN_ARTICLES = frozenset(
    "der die das den dem des ein eine einen einem einer eines kein keine keinen keinem keiner im am zum zur "
    "vom beim ins jede jeder jedes jeden diese dieser dieses diesen diesem".split()
)


def _edit1(a: str, b: str) -> bool:
    """Whether a and b differ by one letter (substituted, added or dropped) inside a word of at
    least four letters: "vicksbueg" ~ "vicksburg", not "ctrl-d" ~ "ctrl-g" nor "r2" ~ "r3"."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    at = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    if short[at + (len(short) == len(long)):] != long[at + 1:]:
        return False
    word = re.findall(r"[^\W\d_]+", long[:at])[-1:] if long[:at][-1:].isalpha() else []
    left = word[0] if word else ""
    right = re.match(r"[^\W\d_]*", long[at + 1:])
    return long[at].isalpha() and len(left) + 1 + len(right.group(0) if right else "") >= 4


@dataclass
class DocumentView:
    """What the judge knows of one document: its text and its entities with their frequency."""

    key: str
    language: str
    text: str
    names: dict[str, int] = field(default_factory=dict)  # name -> chunks it comes from + degree
    lowercase_words: Counter[str] = field(default_factory=Counter)
    mid_sentence_capitals: Counter[str] = field(default_factory=Counter)  # casefolded
    noun_words: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        prose = _NOT_PROSE_RE.sub(" ", self.text)
        words = _WORD_RE.findall(prose)
        self.lowercase_words = Counter(w for w in words if w.islower())
        self.mid_sentence_capitals = Counter(m.group(1).casefold() for m in _MID_CAPITAL_RE.finditer(prose))
        for before, word in zip(words, words[1:], strict=False):
            if before.casefold() in _GERMAN_ARTICLES and word[:1].isupper():
                self.noun_words.add(word.casefold())

    def common_word(self, name: str) -> bool:
        low = name.casefold()
        return self.lowercase_words[low] > max(0, self.mid_sentence_capitals[low])


def verdict(name: str, doc: DocumentView, lists: WordLists) -> str:
    """The first junk rule the name fails, or "ok"."""
    stop = lists.stop
    words = name.split()
    folded = [w.casefold().strip(".,;:()'\"") for w in words]
    if len(name.strip()) <= 2:
        return "short"
    if all(w in stop for w in folded):
        return "stop-word"
    if len(words) > 1 and (folded[0] in lists.function or folded[-1] in lists.function
                           or any(len(w) == 1 and w.isalpha() for w in words)):
        return "fragment"
    single = len(words) == 1 and name.replace("-", "").isalpha()
    if single and not name.islower() and doc.common_word(name):
        return "common-word"
    if single and doc.language == "de" and not name.isupper() and name.casefold() in doc.noun_words:
        return "common-noun"
    mine = doc.names.get(name, 0)
    low = name.casefold()
    for other, count in doc.names.items():
        if other == name or (count, other) <= (mine, name):
            continue  # only a more frequent name (ties: the alphabetically first) absorbs a variant
        other_low = other.casefold()
        if other_low == low or (min(len(low), len(other_low)) >= 5 and _edit1(low, other_low)):
            return "variant"
        if " " not in name and len(low) >= 5 and other_low.startswith(low) and len(low) >= 0.6 * len(other_low):
            return "variant"
    if len(words) == 1 and len(name) >= 12 and not re.search(r"[\d_./-]", name):
        parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)
        if len(parts) >= 3 and any(p.casefold() in lists.function for p in parts if len(p) >= 3):
            return "run-together"
    if len(words) == 1 and len(name) <= 4 and re.fullmatch(r"[A-Z][a-z]+[A-Z]", name):
        return "odd-case"
    return "ok"


# ------------------------------------------------------------------------------- indexing
async def index_texts(workdir: Path, workspace: str, docs: list[tuple[str, str]]) -> tuple[Any, float]:
    """A LightRAG built as the worker builds it, with `docs` (file name, text) indexed; seconds taken."""
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    import_lightrag()
    components = await build_components(load_settings({"WORKING_DIR": str(workdir)}), anyio.CapacityLimiter(4))
    rag = await new_lightrag(workdir, workspace, components)
    started = time.perf_counter()
    await rag.apipeline_enqueue_documents([text for _, text in docs], file_paths=[name for name, _ in docs])
    await rag.apipeline_process_enqueue_documents()
    seconds = time.perf_counter() - started
    status = await rag.get_processing_status()
    if status.get("processed", 0) != len(docs):
        raise RuntimeError(f"indexing ended with {status}, expected {len(docs)} processed")
    return rag, seconds


async def graph_of(rag: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    graph = rag.chunk_entity_relation_graph
    return await graph.get_all_nodes(), await graph.get_all_edges()


def _files(record: dict[str, Any]) -> set[str]:
    return {part for part in str(record.get("file_path") or "").split("<SEP>") if part}


def per_document(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], texts: dict[str, tuple[str, str]]
                 ) -> dict[str, tuple[DocumentView, list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each document's view, nodes and edges (an entity several documents share counts in each)."""
    degree = Counter(end for edge in edges for end in (edge["source"], edge["target"]))
    out: dict[str, tuple[DocumentView, list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for file_name, (language, text) in texts.items():
        doc_nodes = [n for n in nodes if file_name in _files(n)]
        view = DocumentView(file_name, language, text)
        view.names = {n["id"]: len(str(n.get("source_id") or "").split("<SEP>")) + degree[n["id"]] for n in doc_nodes}
        doc_edges = [e for e in edges if file_name in _files(e)]
        out[file_name] = (view, doc_nodes, doc_edges)
    return out


# ------------------------------------------------------------------------------- figures
def _share(part: int, whole: int) -> float:
    return round(part / whole, 3) if whole else 0.0


@dataclass
class Tally:
    names: int = 0
    junk: int = 0
    typed: int = 0
    relations: int = 0
    stop_keywords: int = 0
    rules: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        self.names += other.names
        self.junk += other.junk
        self.typed += other.typed
        self.relations += other.relations
        self.stop_keywords += other.stop_keywords
        self.rules.update(other.rules)

    def row(self) -> dict[str, Any]:
        return {"entities": self.names, "junk_rate": _share(self.junk, self.names),
                "typed_rate": _share(self.typed, self.names), "relations": self.relations,
                "stopword_keyword_rate": _share(self.stop_keywords, self.relations), "junk_rules": dict(self.rules)}


def tally(view: DocumentView, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], lists: WordLists) -> Tally:
    result = Tally(names=len(nodes), relations=len(edges))
    for node in nodes:
        rule = verdict(node["id"], view, lists)
        if rule != "ok":
            result.junk += 1
            result.rules[rule] += 1
        if str(node.get("entity_type") or "").casefold() not in UNTYPED:
            result.typed += 1
    for edge in edges:
        words = re.split(r"[\s,;]+", str(edge.get("keywords") or "").casefold())
        if any(w in lists.function for w in words if w):
            result.stop_keywords += 1
    return result


def _pct(value: float) -> str:
    return f"{value * 100:5.1f} %"


def _print_table(rows: list[tuple[str, str, dict[str, Any]]]) -> None:
    out = sys.stdout
    out.write(f"{'document':<26}{'lang':<6}{'entities':>9}{'junk':>9}{'typed':>9}{'relations':>10}{'stop kw':>9}"
              "  junk by rule\n")
    for name, lang, row in rows:
        rules = ", ".join(f"{rule} {count}" for rule, count in sorted(row["junk_rules"].items(), key=lambda r: -r[1]))
        out.write(f"{name:<26}{lang:<6}{row['entities']:>9}{_pct(row['junk_rate']):>9}{_pct(row['typed_rate']):>9}"
                  f"{row['relations']:>10}{_pct(row['stopword_keyword_rate']):>9}  {rules}\n")


def sample_lines(view: DocumentView, nodes: list[dict[str, Any]], edges: list[dict[str, Any]],
                 lists: WordLists, size: int = 20) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """`size` entity names (seeded sample) with their verdicts, and eight relations."""
    chosen = random.Random(17).sample(sorted(nodes, key=lambda n: n["id"]), min(size, len(nodes)))
    names = [{"name": n["id"], "type": str(n.get("entity_type") or ""), "verdict": verdict(n["id"], view, lists)}
             for n in sorted(chosen, key=lambda n: n["id"].casefold())]
    picked = random.Random(17).sample(sorted(edges, key=lambda e: (e["source"], e["target"])), min(8, len(edges)))
    relations = [{"pair": f"{e['source']} — {e['target']}", "keywords": str(e.get("keywords") or ""),
                  "description": " ".join(str(e.get("description") or "").split())[:160]} for e in picked]
    return names, relations


async def run(args: argparse.Namespace) -> dict[str, Any]:
    lists = judge_word_lists()
    available: list[tuple[RealText, str]] = []
    skipped: list[str] = []
    for real in real_texts():
        text = real.load()
        if text and text.strip():
            available.append((real, text))
        else:
            skipped.append(real.key)
    from rag_worker.ingest.normalize import normalize_text
    from scripts.corpus import bench_documents

    real_docs = [(f"{real.key}.txt", normalize_text(text)) for real, text in available]
    root = Path(tempfile.mkdtemp(prefix="bench-quality-"))
    try:
        rag, real_seconds = await index_texts(root / "real", "quality_real", real_docs)
        nodes, edges = await graph_of(rag)
        await rag.finalize_storages()

        from rag_worker.ingest.pdf import extract_pdf

        generated = [(doc.name, extract_pdf(doc.pdf).text) for doc in bench_documents(args.generated)]
        gen_rag, gen_seconds = await index_texts(root / "generated", "quality_generated", generated)
        gen_nodes, gen_edges = await graph_of(gen_rag)
        await gen_rag.finalize_storages()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    texts = {name: (real.language, text) for (real, _), (name, text) in zip(available, real_docs, strict=True)}
    docs = per_document(nodes, edges, texts)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    by_language: dict[str, Tally] = {}
    real_total = Tally()
    for (real, _), (name, _) in zip(available, real_docs, strict=True):
        view, doc_nodes, doc_edges = docs[name]
        result = tally(view, doc_nodes, doc_edges, lists)
        rows.append((real.key, real.language, result.row()))
        by_language.setdefault(real.language, Tally()).add(result)
        real_total.add(result)
    gen_total = Tally()
    gen_docs = per_document(gen_nodes, gen_edges, {name: ("en", text) for name, text in generated})
    for view, doc_nodes, doc_edges in gen_docs.values():
        gen_total.add(tally(view, doc_nodes, doc_edges, lists))
    # A generated document's entities are judged within that document; the graph counts each once.
    gen_row = gen_total.row() | {"entities_in_graph": len(gen_nodes)}
    everything = Tally()
    everything.add(real_total)
    everything.add(gen_total)

    sample_key = args.sample if f"{args.sample}.txt" in docs else (available[0][0].key if available else "")
    sample_names: list[dict[str, str]] = []
    sample_relations: list[dict[str, str]] = []
    if sample_key:
        view, doc_nodes, doc_edges = docs[f"{sample_key}.txt"]
        sample_names, sample_relations = sample_lines(view, doc_nodes, doc_edges, lists)
    rss_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "machine": machine_info(),
        "judge_function_words": lists.function_source,
        "skipped": skipped,
        "documents": [{"key": key, "language": lang, **row} for key, lang, row in rows],
        "languages": {lang: tally_.row() for lang, tally_ in sorted(by_language.items())},
        "real": real_total.row() | {"documents": len(available), "indexing_s": round(real_seconds, 1),
                                     "characters": sum(len(text) for _, text in real_docs)},
        "generated": gen_row | {"documents": len(generated), "indexing_s": round(gen_seconds, 1),
                                "docs_per_minute": round(len(generated) / gen_seconds * 60, 1) if gen_seconds else 0.0},
        "all": everything.row(),
        "sample": {"document": sample_key, "names": sample_names, "relations": sample_relations},
        "rss_peak_mb": round(rss_peak_mb),
    }


def report(result: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(f"machine: {result['machine']}\njudge: stop words from stop-words, function words from "
              f"{result['judge_function_words']}\n")
    if result["skipped"]:
        out.write(f"skipped (package or tool missing): {', '.join(result['skipped'])}\n")
    rows = [(d["key"], d["language"], d) for d in result["documents"]]
    rows += [(f"all {lang}", lang, row) for lang, row in result["languages"].items()]
    rows += [("real texts", "*", result["real"]), ("generated", "en", result["generated"]), ("all", "*", result["all"])]
    _print_table(rows)
    junk, typed = result["all"]["junk_rate"], result["all"]["typed_rate"]
    out.write(f"\njunk {_pct(junk)} (target ≤ {JUNK_TARGET:.0%}: {'met' if junk <= JUNK_TARGET else 'NOT met'}); "
              f"real texts alone {_pct(result['real']['junk_rate'])}\n")
    out.write(f"typed {_pct(typed)} (target ≥ {TYPED_TARGET:.0%}: {'met' if typed >= TYPED_TARGET else 'NOT met'}); "
              f"real texts alone {_pct(result['real']['typed_rate'])}\n")
    gen = result["generated"]
    out.write(f"indexing: {gen['documents']} generated documents in {gen['indexing_s']} s = {gen['docs_per_minute']} "
              f"docs/min; real texts ({result['real']['characters']:,} characters) in {result['real']['indexing_s']} s; "
              f"peak RSS of this process {result['rss_peak_mb']} MB\n")
    sample = result["sample"]
    out.write(f"\n20 entity names of {sample['document']} (seeded sample) and the rule each passed or failed:\n")
    for entry in sample["names"]:
        out.write(f"  {entry['verdict']:<13} {entry['name']!r} ({entry['type']})\n")
    out.write(f"\nrelations of {sample['document']} (keywords | description):\n")
    for rel in sample["relations"]:
        out.write(f"  {rel['pair']}: {rel['keywords']} | {rel['description']}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=20, help="generated documents (also the docs/minute figure)")
    parser.add_argument("--sample", default=DEFAULT_SAMPLE, help="the real text whose names are sampled")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    result = anyio.run(run, args)
    report(result)
    if args.json:
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
