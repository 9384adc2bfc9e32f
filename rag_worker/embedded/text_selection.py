"""Which candidates of one chunk become entities: alias resolution and salience ranking.

Short aliases ("Johnson") fold into the full name they stand for, unconfirmed
sentence starters are dropped, and ``select_entities`` keeps the most salient
candidates within the chunk's bound, spread over all its sentences.
"""

from __future__ import annotations

from . import text_lexicon as lx
from .text_document import Candidate, DocumentBuilder
from .text_sentences import WORD_RE


def resolve_aliases(builder: DocumentBuilder) -> None:
    """Map short aliases onto full names and drop unconfirmed sentence starters."""
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


def _strong_word(name: str) -> bool:
    """An acronym, code, version or CamelCase word: a name even when it stands alone."""
    return (name.isupper() or any(ch.isdigit() for ch in name)
            or any(ch.isupper() for ch in name[1:]) or not name.replace("-", "").isalpha())


def rank_group(c: Candidate) -> int:
    """0 heading, 1 code declaration, 2 named entity / identifier, 3 plain capitalised word."""
    if c.group < 2:
        return c.group
    return 2 if c.strength >= 1 or " " in c.name or _strong_word(c.name) else 3


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
