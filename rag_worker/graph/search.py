"""Entity search: exact, fuzzy (typo-tolerant), regex (time-bounded) and semantic (embeddings).

Exact, fuzzy and regex are pure CPU work over the graph's entities (`Entities`) and run in a worker thread;
semantic asks the workspace's entity vector store.

Regex patterns come from the model and may backtrack catastrophically (`(a+)+$`): they are
compiled with the `regex` package, run with its `timeout=` per text (and `concurrent=True`,
so matching releases the GIL and the worker's event loop keeps answering), bounded in
length and in total time.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import regex
from rapidfuzz import fuzz, process

from protocol import ErrorCode, RagError
from rag_worker.graph.snapshot import Entities, readable

DEFAULT_FUZZY_MIN_SCORE = 0.7
DESCRIPTION_DISCOUNT = 0.85  # a match in the description ranks below a match of the name
REGEX_TEXT_TIMEOUT_S = 0.25  # one name or description
REGEX_TOTAL_BUDGET_S = 5.0  # the whole search; beyond it the result is partial
MAX_FUZZY_DESCRIPTION_CHARS = 2000
SEMANTIC_MAX_CANDIDATES = 500
WHOLE_NAME_SHARE = 0.8  # a fuzzy query this long (relative to the name) highlights the whole name


@dataclass(frozen=True)
class SearchRequest:
    query: str
    search_type: str = "fuzzy"
    fields: tuple[str, ...] = ("name",)
    entity_types: frozenset[str] = frozenset()
    case_sensitive: bool = False
    min_score: float | None = None


@dataclass
class Match:
    name: str
    score: float
    reason: str
    highlighted: str


@dataclass
class SearchOutcome:
    matches: list[Match]
    searched: int
    partial_reason: str | None = None
    notes: list[str] = field(default_factory=list)


def highlight(text: str, start: int, end: int) -> str:
    """`text` with «» around [start, end) (the whole text when the span is empty or off)."""
    if not 0 <= start < end <= len(text):
        return f"«{text}»"
    return f"{text[:start]}«{text[start:end]}»{text[end:]}"


def _candidates(snapshot: Entities, request: SearchRequest) -> list[str]:
    if not request.entity_types:
        return list(snapshot.nodes)
    return [name for name in snapshot.nodes if snapshot.node_type(name).casefold() in request.entity_types]


def _ranked(snapshot: Entities, matches: list[Match]) -> list[Match]:
    return sorted(matches, key=lambda match: (-match.score, -snapshot.degree(match.name), match.name))


# ---------------------------------------------------------------------------------- exact
def exact_search(snapshot: Entities, request: SearchRequest) -> SearchOutcome:
    names = _candidates(snapshot, request)
    query = request.query.strip()
    matches: list[Match] = []
    for name in names:
        if name == query:
            matches.append(Match(name, 1.0, "exact name match", highlight(name, 0, len(name))))
        elif not request.case_sensitive and name.casefold() == query.casefold():
            matches.append(Match(name, 0.99, "exact name match (ignoring case)", highlight(name, 0, len(name))))
    return SearchOutcome(_ranked(snapshot, matches), len(names))


# ---------------------------------------------------------------------------------- fuzzy
def fold_text(text: str, case_sensitive: bool = False) -> str:
    """For fuzzy matching: accents removed, punctuation as spaces, lower case unless asked."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    if not case_sensitive:
        plain = plain.lower()
    return "".join(char if char.isalnum() else " " for char in plain)


def _name_highlight(name: str, query: str, processor: Callable[[str], str]) -> str:
    folded = processor(name)
    if len(folded) != len(name) or len(query) >= WHOLE_NAME_SHARE * len(name):
        # folding changed the length (offsets would not line up), or the query is the whole name give or take typos
        return highlight(name, 0, len(name))
    alignment = fuzz.partial_ratio_alignment(processor(query).strip(), folded)
    if alignment is None:
        return highlight(name, 0, len(name))
    return highlight(name, alignment.dest_start, alignment.dest_end)


def name_score(query: str, name: str, *, score_cutoff: float | None = None, **_: Any) -> float:
    """How well `name` answers `query` (0-100), both already folded.

    A name at least as long as the query may contain it anywhere (WRatio: "Grant" finds
    "Ulysses S. Grant").  A shorter name must be the query, or whole words of it ("Lincoln"
    for "Abraham Lincoln"): a fragment inside one of the query's words is not a match, though
    WRatio's partial alignment gives "RA" 90 for "Grant" and "Ge" 90 for "Auflage".
    """
    if len(name) >= len(query):
        return float(fuzz.WRatio(query, name, score_cutoff=score_cutoff))
    return float(fuzz.token_set_ratio(query, name, score_cutoff=score_cutoff))


def fuzzy_search(snapshot: Entities, request: SearchRequest) -> SearchOutcome:
    names = _candidates(snapshot, request)
    minimum = DEFAULT_FUZZY_MIN_SCORE if request.min_score is None else request.min_score

    def processor(text: str) -> str:
        return fold_text(text, request.case_sensitive)

    found: dict[str, Match] = {}
    if "name" in request.fields:
        for name, score, _ in process.extract(
            request.query, names, scorer=name_score, processor=processor, limit=None, score_cutoff=minimum * 100
        ):
            found[name] = Match(
                name,
                round(score / 100, 4),
                f"fuzzy name match ({score:.0f}%)",
                _name_highlight(name, request.query, processor),
            )
    if "description" in request.fields:
        descriptions = {
            name: readable(snapshot.nodes[name].get("description"))[:MAX_FUZZY_DESCRIPTION_CHARS] for name in names
        }
        for _, score, name in process.extract(
            request.query,
            descriptions,
            scorer=fuzz.partial_token_set_ratio,
            processor=processor,
            limit=None,
            score_cutoff=minimum * 100,
        ):
            discounted = round(score / 100 * DESCRIPTION_DISCOUNT, 4)
            if name not in found or found[name].score < discounted:
                found[name] = Match(name, discounted, f"fuzzy match in the description ({score:.0f}%)", name)
    return SearchOutcome(_ranked(snapshot, list(found.values())), len(names))


# ---------------------------------------------------------------------------------- regex
def compile_pattern(pattern: str, case_sensitive: bool, max_chars: int) -> Any:
    if len(pattern) > max_chars:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"The regular expression is {len(pattern)} characters long; at most {max_chars} are allowed.",
            suggested_action="Use a shorter pattern.",
        )
    flags = regex.VERSION0 | (0 if case_sensitive else regex.IGNORECASE)
    try:
        return regex.compile(pattern, flags)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"query is not a valid regular expression: {str(exc)[:200]}",
            suggested_action="Fix the pattern (or use search_type fuzzy for plain text) and call again.",
        ) from None


def regex_search(snapshot: Entities, request: SearchRequest, max_chars: int) -> SearchOutcome:
    compiled = compile_pattern(request.query, request.case_sensitive, max_chars)
    names = _candidates(snapshot, request)
    deadline = time.monotonic() + REGEX_TOTAL_BUDGET_S
    matches: list[Match] = []
    searched = 0

    def search(text: str) -> Any:
        try:
            return compiled.search(text, timeout=REGEX_TEXT_TIMEOUT_S, concurrent=True)
        except TimeoutError:
            raise RagError(
                ErrorCode.PROCESSING_TIMEOUT,
                f"The regular expression needed more than {REGEX_TEXT_TIMEOUT_S} s on a single entity text and was "
                "stopped: it backtracks catastrophically (nested quantifiers such as (a+)+ do this).",
                suggested_action="Simplify the pattern (avoid nested or overlapping repetition), or use search_type fuzzy.",
                retryable=False,
            ) from None

    for name in names:
        if time.monotonic() > deadline:
            return SearchOutcome(
                _ranked(snapshot, matches),
                searched,
                partial_reason=f"the {REGEX_TOTAL_BUDGET_S:.0f} s time budget ran out after {searched} of {len(names)} entities",
            )
        searched += 1
        if "name" in request.fields:
            found = search(name)
            if found is not None:
                coverage = (found.end() - found.start()) / max(1, len(name))
                matches.append(
                    Match(
                        name,
                        round(0.5 + 0.5 * coverage, 4),
                        "name matches the pattern",
                        highlight(name, found.start(), found.end()),
                    )
                )
                continue
        if "description" in request.fields:
            description = readable(snapshot.nodes[name].get("description"))
            found = search(description)
            if found is not None:
                excerpt = shorten_around(description, found.start(), found.end())
                matches.append(Match(name, 0.4, f"description matches the pattern: {excerpt}", name))
    return SearchOutcome(_ranked(snapshot, matches), searched)


def shorten_around(text: str, start: int, end: int, context: int = 40) -> str:
    left = max(0, start - context)
    right = min(len(text), end + context)
    return (
        ("…" if left else "")
        + highlight(text[left:right], start - left, end - left)
        + ("…" if right < len(text) else "")
    )


# ------------------------------------------------------------------------------- semantic
async def _with_similarity(rag: Any, query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hits with their cosine similarity as `distance` (NanoVectorDB's name for it).  LightRAG's
    PostgreSQL entity query returns names only, ordered by distance: the similarity is computed
    here from the stored vectors (one embedding of the query, one batched read)."""
    if not hits or all("distance" in hit for hit in hits):
        return hits
    import numpy as np
    from lightrag.utils import compute_mdhash_id  # deferred: LightRAG is imported once, off the loop

    ids = [compute_mdhash_id(str(hit.get("entity_name") or ""), prefix="ent-") for hit in hits]
    vectors = await rag.entities_vdb.get_vectors_by_ids(ids)
    [asked] = await rag.embedding_func([query])
    asked = np.asarray(asked, dtype=np.float32)
    scored = []
    for hit, vector_id in zip(hits, ids, strict=True):
        stored = vectors.get(vector_id)
        if stored is None:
            continue
        stored = np.asarray(stored, dtype=np.float32)
        denominator = float(np.linalg.norm(asked) * np.linalg.norm(stored)) or 1.0
        scored.append({**hit, "distance": float(np.dot(asked, stored)) / denominator})
    return scored


async def semantic_search(rag: Any, snapshot: Entities, request: SearchRequest, wanted: int) -> SearchOutcome:
    """The entities whose vectors are nearest the query's (cosine similarity as the score)."""
    top_k = min(SEMANTIC_MAX_CANDIDATES, wanted * (3 if request.entity_types else 1))
    hits = await rag.entities_vdb.query(request.query, top_k=top_k)
    hits = await _with_similarity(rag, request.query, hits or [])
    matches: list[Match] = []
    seen: set[str] = set()
    for hit in hits or []:
        name = str(hit.get("entity_name") or "")
        if not name or name in seen or name not in snapshot.nodes:
            continue  # an index entry whose entity is gone
        seen.add(name)
        if request.entity_types and snapshot.node_type(name).casefold() not in request.entity_types:
            continue
        score = max(0.0, min(1.0, float(hit.get("distance") or 0.0)))
        if request.min_score is not None and score < request.min_score:
            continue
        matches.append(Match(name, round(score, 4), f"semantically similar (cosine {score:.2f})", name))
    notes = [f"semantic search ranks the {top_k} nearest entities of the embedding index"]
    return SearchOutcome(
        sorted(matches, key=lambda match: (-match.score, match.name)), len(snapshot.nodes), notes=notes
    )


# ------------------------------------------------------------------------- names in a text
MIN_MENTION_CHARS = 3


def names_in_text(snapshot: Entities, text: str) -> list[str]:
    """Entity names the text mentions as whole words (ignoring case), longest names first."""
    folded = text.casefold()
    found: list[str] = []
    for name in snapshot.nodes:
        key = name.casefold()
        if len(key) < MIN_MENTION_CHARS:
            continue
        start = folded.find(key)
        while start >= 0:
            end = start + len(key)
            if (start == 0 or not folded[start - 1].isalnum()) and (end == len(folded) or not folded[end].isalnum()):
                found.append(name)
                break
            start = folded.find(key, start + 1)
    return sorted(found, key=lambda name: (-len(name), -snapshot.degree(name), name))
