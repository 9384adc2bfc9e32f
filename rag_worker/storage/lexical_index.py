"""The lexical index beside the vectors: full-text search over passages, entities and relations.

The packaged embedding model cannot tell `PX-4471-KQ` from `PX-4417-KQ`, an e-mail address from
its neighbour's, or find a German sentence for a German question reliably; a full-text engine
matches what the user quotes exactly. `LexicalIndex` is the small interface the query path and
the mirror (`rag_worker.storage.hybrid`) use; `Fts5LexicalIndex` implements it with SQLite FTS5
in one file in the workspace's directory (a PostgreSQL full-text implementation can follow
behind the same interface).

Tokenisation (FTS5 `unicode61`, diacritics removed, no stemming, so German is not cut with
English rules). Codes, e-mail addresses, versions and numbers with separators are indexed twice:
as their parts (`px`, `4471`, `kq`) and glued whole (`px4471kq`), so a question quoting the code
matches it as one rare term, and `52318.07` finds `52,318.07`. A question is user text, never FTS
syntax: `match_expression` quotes each term it keeps.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

log = logging.getLogger("rag_worker.storage.lexical_index")

Kind = Literal["passage", "entity", "relation"]
KINDS: tuple[Kind, ...] = ("passage", "entity", "relation")
FILE_NAME = "lexical_index.sqlite3"

#: Words joined by separators: codes (PX-4471-KQ), e-mail addresses, versions, 52,318.07, URLs' hosts.
_COMPOUND_RE = re.compile(r"[^\W_]+(?:[-.@,/_:+][^\W_]+)+")
_WORD_RE = re.compile(r"[^\W_]+")
#: The question's terms a lexical search keeps (the rarest in the index first).
MAX_TERMS = 8
#: A term in more than this share of the entries says nothing about any of them.
COMMON_SHARE = 0.2
#: The most entries a search's terms may match together, the rarest terms first. FTS5 ranks every
#: entry a search matches (~3 µs each), and 40 hits of a term in thousands of entries are picked
#: nearly at random: at 5,000 documents "Nimbus Scheduler" was in 3,353 passages (12 %) and 2,980
#: relations, and its searches took 21 ms of a mix query.
MAX_MATCHED = 1_000
#: Function words of the languages users write in most (no stemming, so none of them is cut).
_STOPWORDS = (
    """a an and are as at be but by did do does for from had has have how i in is it its me my
    of on or our so than that the their them then there these they this those to was we were what
    when where which who whom whose why will with would you your about after before into over
    der die das den dem des ein eine einer einem einen und oder ist sind war wer wie was wo wann
    welche welcher welches hat haben mit von zu im am für auf aus bei nach über vom zum zur nicht
    le la les un une des du de et ou est sont qui que quoi quel quelle quels quelles où quand
    comment pour par avec dans sur au aux ce cette ces son sa ses a été
    el los las una unos unas y o es son quién quien qué que cuál cual cuáles dónde cuándo cómo
    para por con en del al su sus fue"""
)


@dataclass(frozen=True)
class Entry:
    """One indexed item: a passage (key: chunk id), an entity or a relation (key: its vector id)."""

    kind: Kind
    key: str
    text: str
    name: str = ""  # entity name; a relation's two entity names
    src: str = ""  # a passage's document; a relation's entities (its rows go when either entity goes)
    tgt: str = ""


@dataclass(frozen=True)
class Hit:
    """A search result, best first."""

    key: str
    name: str
    src: str
    tgt: str


class LexicalIndex(Protocol):
    """What the query path and the mirror need from a full-text engine."""

    def add(self, entries: Sequence[Entry], removed: Iterable[tuple[Kind, str]] = ()) -> None: ...

    def remove_relations_of(self, entity_name: str) -> None: ...

    def search(self, kind: Kind, question: str, limit: int) -> tuple[list[Hit], list[Hit]]: ...

    def count(self) -> int: ...

    def documents(self) -> set[str]: ...

    def built(self) -> bool: ...

    def mark_built(self) -> None: ...

    def clear(self) -> None: ...

    def close(self) -> None: ...


def fold(text: str) -> str:
    """Casefolded, diacritics removed: the form unicode61 (remove_diacritics 2) indexes a word in."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


STOPWORDS = frozenset(fold(word) for word in _STOPWORDS.split())


def glued(compound: str) -> str:
    """A code, address, version or number as one term: its letters and digits, folded."""
    return "".join(_WORD_RE.findall(fold(compound)))


def index_text(text: str) -> str:
    """The text to index: the text itself, then each compound glued whole."""
    wholes = {glued(m.group(0)) for m in _COMPOUND_RE.finditer(text)}
    return text + ("\n" + " ".join(sorted(wholes)) if wholes else "")


def question_terms(question: str) -> tuple[list[str], list[str]]:
    """`(identifiers, words)` of a question, folded: identifiers are its compounds glued whole and
    its words with a digit in them (E40213); words are the other content words."""
    identifiers = [glued(m.group(0)) for m in _COMPOUND_RE.finditer(question)]
    identifiers += [w for w in (fold(m) for m in _WORD_RE.findall(question)) if any(c.isdigit() for c in w)]
    words = [w for w in (fold(m) for m in _WORD_RE.findall(question))
             if len(w) >= 2 and w not in STOPWORDS and not any(c.isdigit() for c in w)]
    return _unique(t for t in identifiers if len(t) >= 2), _unique(words)


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of `terms`, each quoted (user text is never FTS syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _rarest(terms: Sequence[str], counts: dict[str, int], common: int) -> list[str]:
    """The terms in the index and not common, rarest first, while together they match at most
    `MAX_MATCHED` entries."""
    kept: list[str] = []
    matched = 0
    for term in sorted((t for t in terms if 0 < counts[t] <= common), key=counts.__getitem__):
        matched += counts[term]
        if matched > MAX_MATCHED:
            break
        kept.append(term)
    return kept


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


_TOKENIZER = "unicode61 remove_diacritics 2"
BUSY_TIMEOUT_MS = 5000  # a reader in another process and the writer wait for each other's commit
# A rollback journal, not WAL: readers in other processes (shared knowledge bases) open the file
# read-only, which a WAL database allows only while its -shm file exists.
_SCHEMA = [
    "PRAGMA journal_mode=DELETE",
    "PRAGMA synchronous=NORMAL",
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE IF NOT EXISTS entries(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL,
       name TEXT, src TEXT, tgt TEXT, UNIQUE(kind, key))""",
    "CREATE INDEX IF NOT EXISTS entries_src ON entries(kind, src)",
    "CREATE INDEX IF NOT EXISTS entries_tgt ON entries(kind, tgt)",
    *(f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{kind} USING fts5(name, body, tokenize='{_TOKENIZER}')"
      for kind in KINDS),
]


class Fts5LexicalIndex:
    """`LexicalIndex` in an SQLite FTS5 file (stdlib sqlite3; each call commits)."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        """`read_only`: open the file for reading only (an index nobody has built yet is empty)."""
        self.path = path
        if read_only and path.exists():
            self._db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            return
        self._db = sqlite3.connect(":memory:" if read_only else path, check_same_thread=False, isolation_level=None)
        for statement in [f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}", *_SCHEMA]:
            self._db.execute(statement)

    def add(self, entries: Sequence[Entry], removed: Iterable[tuple[Kind, str]] = ()) -> None:
        """Remove the `removed` (kind, key) entries, then index `entries` (replacing what was
        indexed under the same kind and key), in one transaction."""
        removed = list(removed)
        if not entries and not removed:
            return
        with _Transaction(self._db):
            for kind, key in removed:
                self._delete(kind, key)
            for entry in entries:
                self._delete(entry.kind, entry.key)
                rowid = self._db.execute(
                    "INSERT INTO entries(kind, key, name, src, tgt) VALUES (?, ?, ?, ?, ?)",
                    (entry.kind, entry.key, entry.name, entry.src, entry.tgt),
                ).lastrowid
                self._db.execute(f"INSERT INTO fts_{entry.kind}(rowid, name, body) VALUES (?, ?, ?)",
                                 (rowid, index_text(entry.name), index_text(entry.text)))

    def remove_relations_of(self, entity_name: str) -> None:
        """Remove the relations that have `entity_name` at either end."""
        with _Transaction(self._db):
            rows = self._db.execute("SELECT key FROM entries WHERE kind = 'relation' AND (src = ? OR tgt = ?)",
                                    (entity_name, entity_name)).fetchall()
            for (key,) in rows:
                self._delete("relation", key)

    def search(self, kind: Kind, question: str, limit: int) -> tuple[list[Hit], list[Hit]]:
        """`(identifier hits, word hits)` for `question`, each best first (BM25, names weigh 2x).

        Identifier hits match the question's codes, numbers and addresses; word hits its rarest
        content words (at most `MAX_TERMS`). Each side keeps the rarest terms that together match
        at most `MAX_MATCHED` entries, none in over `COMMON_SHARE` of them. Every count stops at
        its limit, so a search costs the same at 100 documents and at 10,000."""
        identifiers, words = question_terms(question)
        common = self._common_count(kind)
        counts = self._entry_counts(kind, identifiers + words, common)
        return (self._match(kind, _rarest(identifiers, counts, common), limit),
                self._match(kind, _rarest(words, counts, common)[:MAX_TERMS], limit))

    def _common_count(self, kind: Kind) -> int:
        """The entry count over which a term is common: `COMMON_SHARE` of the entries (at least 1;
        0 in an empty index), and never over `MAX_MATCHED`."""
        enough = int(MAX_MATCHED / COMMON_SHARE)
        entries = self._bounded_count("SELECT 1 FROM entries WHERE kind = ?", (kind,), enough)
        return min(MAX_MATCHED, max(1, int(COMMON_SHARE * entries))) if entries else 0

    def _entry_counts(self, kind: Kind, terms: list[str], common: int) -> dict[str, int]:
        """The entries of `kind` holding each term, counted up to `common` + 1."""
        if not common:
            return dict.fromkeys(terms, 0)
        return {term: self._bounded_count(f"SELECT 1 FROM fts_{kind} WHERE fts_{kind} MATCH ?",
                                          (match_expression([term]),), common + 1) for term in terms}

    def _bounded_count(self, select: str, parameters: tuple[str, ...], most: int) -> int:
        return int(self._db.execute(f"SELECT count(*) FROM ({select} LIMIT ?)", (*parameters, most)).fetchone()[0])

    def _match(self, kind: Kind, terms: list[str], limit: int) -> list[Hit]:
        if not terms or limit <= 0:
            return []
        # Ranked first, joined after: only the `limit` best of up to MAX_MATCHED matches reach the
        # join (a relation search matching 762 entries at 5,000 documents: 2.3 -> 0.9 ms).
        rows = self._db.execute(
            f"SELECT e.key, e.name, e.src, e.tgt FROM (SELECT rowid, bm25(fts_{kind}, 2.0, 1.0) AS score "
            f"FROM fts_{kind} WHERE fts_{kind} MATCH ? ORDER BY score, rowid LIMIT ?) AS best "
            f"JOIN entries e ON e.id = best.rowid ORDER BY best.score, best.rowid",
            (match_expression(terms), limit),
        ).fetchall()
        return [Hit(key, name or "", src or "", tgt or "") for key, name, src, tgt in rows]

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM entries").fetchone()[0])

    def documents(self) -> set[str]:
        """The documents whose passages are indexed."""
        return {doc for (doc,) in self._db.execute("SELECT DISTINCT src FROM entries WHERE kind = 'passage'")}

    def built(self) -> bool:
        """Whether the index covers what the knowledge base held when it was first opened."""
        return self._db.execute("SELECT 1 FROM meta WHERE key = 'built'").fetchone() is not None

    def mark_built(self) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('built', '1')")

    def clear(self) -> None:
        with _Transaction(self._db):
            self._db.execute("DELETE FROM entries")
            self._db.execute("DELETE FROM meta")
            for kind in KINDS:
                self._db.execute(f"DELETE FROM fts_{kind}")

    def close(self) -> None:
        self._db.close()

    def _delete(self, kind: Kind, key: str) -> None:
        row = self._db.execute("SELECT id FROM entries WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        if row is not None:
            self._db.execute(f"DELETE FROM fts_{kind} WHERE rowid = ?", row)
            self._db.execute("DELETE FROM entries WHERE id = ?", row)


class _Transaction:
    """BEGIN … COMMIT (ROLLBACK on an exception) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")
