"""Which candidates of one chunk become entities: alias resolution and salience ranking.

Short aliases ("Johnson") fold into the full name they stand for, unconfirmed
sentence starters are dropped, and ``select_entities`` keeps the most salient
candidates within the chunk's bound, spread over all its sentences.
"""

from __future__ import annotations

from . import text_lexicon as lx
from .text_document import Candidate, DocumentBuilder
from .text_scan import strong_word
from .text_sentences import WORD_RE


def _one_letter_apart(a: str, b: str) -> bool:
    """One letter substituted, added or dropped ("vicksbueg" ~ "vicksburg")."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    at = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return long[at].isalpha() and short[at + (len(short) == len(long)):] == long[at + 1:]


def _variant_of(cand: Candidate, others: list[Candidate]) -> str | None:
    """The more frequent name this single word misspells or cuts short, if any.

    OCR and headline text write a name "VICKSBUEG" or "VICKSB" beside "Vicksburg": a word of at
    least six letters one letter apart from a name mentioned more often, or an all-capitals
    prefix of one (at least five letters and 60 % of it), is that name.
    """
    key = cand.key
    if " " in key or not key.isalpha():
        return None
    for other in others:
        if other.key == key or " " in other.key or other.count < cand.count or (
                other.count == cand.count and not cand.name.isupper()):
            continue
        if len(key) >= 6 and len(other.key) >= 6 and _one_letter_apart(key, other.key):
            return other.key
        if len(key) >= 5 and other.key.startswith(key) and len(key) >= 0.6 * len(other.key) and (
                cand.name.isupper() or cand.count < other.count):
            return other.key
    return None


def resolve_aliases(builder: DocumentBuilder) -> None:
    """Map short aliases and misspelt variants onto full names; drop unconfirmed sentence starters."""
    multi: dict[str, list[str]] = {}
    for cand in builder.cands.values():
        if " " in cand.name and cand.category in (lx.PERSON, lx.ORGANIZATION):
            parts = cand.name.casefold().split()
            for token in dict.fromkeys((parts[0], parts[-1])):
                multi.setdefault(token, []).append(cand.key)
    alias: dict[str, str] = {}
    for cand in builder.cands.values():
        targets = multi.get(cand.key, [])
        if " " not in cand.name and cand.group >= 2 and len(targets) == 1:
            alias[cand.key] = targets[0]
    names = [c for c in builder.cands.values() if not c.tentative and c.group >= 2]
    for cand in names:
        variant = _variant_of(cand, names)
        if variant and cand.key not in alias and variant not in alias:
            alias[cand.key] = variant
    for cand in builder.cands.values():
        if cand.tentative and cand.key not in alias:
            alias[cand.key] = ""  # drop
    if not alias:
        return
    for unit in builder.units:
        remapped: list[tuple[int, str]] = []
        for offset, key in unit.mentions:
            target = alias.get(key, key)
            if target:
                remapped.append((offset, target))
                if target != key:
                    builder.cands[target].count += 1
        unit.mentions = remapped
    for key in alias:
        builder.cands.pop(key, None)


def rank_group(c: Candidate) -> int:
    """0 heading, 1 code declaration, 2 named entity / identifier, 3 plain capitalised word."""
    if c.group < 2:
        return c.group
    return 2 if c.strength >= 1 or " " in c.name or strong_word(c.name) else 3


def select_entities(builder: DocumentBuilder, max_entities: int) -> list[Candidate]:
    """Keep the ``max_entities`` most salient candidates, returned in first-mention order.

    Headings and code declarations come first; then every sentence in turn gives
    its most salient entity not chosen yet (named before plain words, frequent
    before rare), round after round, so a bound keeps the chunk's later facts too.
    """
    limit = max(0, max_entities)
    cands = builder.cands

    def rank(key: str) -> tuple[int, int, int]:
        c = cands[key]
        return (rank_group(c), -c.count, c.first)

    # A plain capitalised word that the chunk also uses in lower case ("Budget" as a
    # heading, "the budget" in the text) is a common noun, not a name.
    lowercase_words = {w for unit in builder.units if unit.kind == "prose"
                       for w in WORD_RE.findall(unit.text) if w.islower()}
    cands = {k: c for k, c in cands.items()
             if not (rank_group(c) >= 3 and " " not in c.name and c.name.lower() in lowercase_words)}
    # The document title and code declarations first; section headings take their
    # turn where they stand, like a sentence.
    chosen: dict[str, None] = dict.fromkeys(
        sorted((k for k, c in cands.items() if c.group == 1 or (c.group == 0 and c.level <= 1)),
               key=rank)[:limit])
    queues = [sorted(dict.fromkeys(k for _, k in unit.mentions if k in cands), key=rank)
              for unit in builder.units if unit.kind in ("prose", "heading") and unit.mentions]
    for weak_round in (False, True):
        depth = 0
        while len(chosen) < limit and any(depth < len(q) for q in queues):
            for queue in queues:
                picked = next((k for k in queue if k not in chosen
                               and (rank_group(cands[k]) >= 3) == weak_round), None)
                if picked is not None and len(chosen) < limit:
                    chosen[picked] = None
            depth += 1
    # Anything left (mentions outside prose units), most salient first.
    for key in sorted(cands, key=rank):
        if len(chosen) >= limit:
            break
        chosen.setdefault(key, None)
    return sorted((cands[k] for k in chosen), key=lambda c: c.first)
