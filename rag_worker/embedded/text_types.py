"""What type a capitalised run of words is: from its own words (suffixes, a small gazetteer,
given names) and the words around it ("Dr." before, "said" or ", the chief executive" after).

The scanner (`text_scan`) finds the runs; this decides a category and how sure that is.
"""

from __future__ import annotations

import re

from . import text_lexicon as lx

_TITLE_BEFORE_RE = re.compile(
    r"\b(?:" + "|".join(sorted((t.capitalize() for t in lx.PERSON_TITLES_BEFORE), key=len, reverse=True))
    + r")\.?\s+$"
)
_INITIAL_RE = re.compile(r"^[A-Z]\.?$")
_BY_BEFORE_RE = re.compile(
    r"\b(?:(?:written|authored|created|developed|maintained|founded|led|designed|invented|"
    r"directed|signed|reviewed|edited|presented|interviewed|translated)\s+by"
    r"|traduit\s+par|traduction\s+par|traducido\s+por|traducción\s+de|übersetzt\s+von|übersetzung\s+von)\s+$",
    re.IGNORECASE,
)
_KEY_RE = re.compile(r"^(?:CTRL|Ctrl|ALT|Alt|SHIFT|Shift|CMD|Cmd|META|Meta|ESC|Esc)-\w+$")
_ROLE_BEFORE_RE = re.compile(r"\b(?:" + "|".join(sorted(lx.PERSON_ROLE_WORDS)) + r")\s+$")
_ORG_BEFORE_RE = re.compile(
    r"\b(?:(?:works?|worked|working|employed|interns?|interned|analysts?|engineers?|researchers?|"
    r"scientists?|employees?|staff|developers?)\s+(?:at|for)|joined|acquired|"
    r"co-founded|cofounded|founded|subsidiary\s+of)\s+(?:the\s+)?$"
)
# "Name said", "Name, who": a verb right after the name (no comma: "X, CEO of Y, said"
# must not make Y a person).
_AFTER_VERB_RE = re.compile(r"^\s+([a-z][a-z-]*)|^\s*,\s*(who)\b")
# Appositions and predicates: "Name, the chief executive", "Name is a startup".
_AFTER_ROLE_RE = re.compile(
    r"^\s*(?:,\s*(?:who\s+(?:is|was)\s+)?|\s+(?:is|was|as)\s+)(?:an?|the|our|their|its)\s+"
    r"((?:[\w-]+\s+){0,3}[\w-]+)"
)


_ARTIFACT_AFTER_RE = re.compile(
    r"^\s+(?:v?\d+(?:\.\d+)+\b|(?:" + "|".join(sorted(lx.ARTIFACT_FOLLOWERS)) + r")\b)", re.IGNORECASE
)
_LOCATION_CUE_RE = re.compile(
    r"(?:^|\W)(?:" + "|".join(re.escape(cue) for cue in lx.LOCATION_CUES) + r") $", re.IGNORECASE
)
# "Vicksburg, Mississippi": a place followed by the region it lies in.
_CITY_REGION_RE = re.compile(
    r"^,\s+(?:the\s+)?(?:" + "|".join(sorted((re.escape(n) for n in lx.LOCATION_NAMES if " " not in n), key=len, reverse=True))
    + r")\b", re.IGNORECASE
)


def _last(tokens: list[str]) -> str:
    return tokens[-1].lower().rstrip(".")


def classify(tokens: list[str], name: str, before: str, after: str) -> tuple[str, int]:
    """Category and confidence for a capitalised run, from its words and context."""
    last, first, low = _last(tokens), tokens[0].lower(), name.lower()
    multi = len(tokens) > 1
    if multi and (last in lx.ORG_SUFFIXES or any(
            t.lower() in lx.ORG_PREFIXES and nxt in ("of", "for") for t, nxt in zip(tokens, tokens[1:], strict=False))
            or first in ("stichting", "fondation", "fundación", "stiftung", "verein")):
        return lx.ORGANIZATION, 2
    if _KEY_RE.match(name):
        return lx.ARTIFACT, 2  # a key or key combination: CTRL-D, Alt-F4
    if low in lx.LOCATION_NAMES or (multi and last in lx.LOCATION_SUFFIXES) or (
            multi and ((first in lx.LOCATION_PREFIXES and tokens[1].lower() == "of")
                       or (first.rstrip(".") in lx.PLACE_FIRST_WORDS and len(tokens) <= 3)
                       or (last in lx.LOCATION_NAMES and all(t.lower() in lx.COMPASS_WORDS for t in tokens[:-1])))):
        return lx.LOCATION, 2
    if multi and (last in lx.EVENT_SUFFIXES or (last.isdigit() and len(last) == 4)):
        return lx.EVENT, 2
    for suffixes, category in ((lx.CONTENT_SUFFIXES, lx.CONTENT), (lx.DATA_SUFFIXES, lx.DATA),
                               (lx.METHOD_SUFFIXES, lx.METHOD), (lx.ARTIFACT_SUFFIXES, lx.ARTIFACT),
                               (lx.CONCEPT_SUFFIXES, lx.CONCEPT)):
        if multi and last in suffixes:
            return category, 2
    alphabetic = all(t.replace("-", "").replace("'", "").replace(".", "").isalpha() for t in tokens)
    if _TITLE_BEFORE_RE.search(before) and len(tokens) <= 3:
        return lx.PERSON, 2
    if len(tokens) == 3 and _INITIAL_RE.match(tokens[1]) and alphabetic and not name.isupper():
        return lx.PERSON, 2  # "Ulysses S. Grant": a given name, an initial, a family name
    role_match = _AFTER_ROLE_RE.match(after)
    role_words = role_match.group(1).lower().split() if role_match else []
    if alphabetic and len(tokens) <= 3 and not name.isupper():
        if multi and first in lx.GIVEN_NAMES:
            return lx.PERSON, 2
        verb_match = _AFTER_VERB_RE.match(after)
        verb = (verb_match.group(1) or verb_match.group(2)) if verb_match else ""
        # A verb is weak evidence ("GraphML writes"), so single words need more.
        if any(w in lx.PERSON_ROLE_WORDS for w in role_words) or (
                multi and (verb in lx.PERSON_VERBS or verb == "who")):
            return lx.PERSON, 1
        if multi and (_BY_BEFORE_RE.search(before) or _ROLE_BEFORE_RE.search(before.lower())):
            return lx.PERSON, 1
        if not multi and first in lx.GIVEN_NAMES:
            return lx.PERSON, 1
    if any(w in lx.ORG_CUE_WORDS for w in role_words) or _ORG_BEFORE_RE.search(before.lower()):
        return lx.ORGANIZATION, 1
    if any(w in lx.ARTIFACT_SUFFIXES for w in role_words) or _ARTIFACT_AFTER_RE.match(after):
        return lx.ARTIFACT, 1
    if _LOCATION_CUE_RE.search(before) or _CITY_REGION_RE.match(after):
        return lx.LOCATION, 1
    if not multi and any(ch.isupper() for ch in tokens[0][1:]) and not tokens[0].isupper():
        return lx.ARTIFACT, 0  # CamelCase product/software names: LightRAG, PostgreSQL
    return lx.OTHER, 0
