"""Entity mentions in one sentence: the built-in extractor's scanner.

``scan_sentence`` finds code identifiers first (they are masked so their parts are not
read again as names), then runs of capitalised words, each classified by suffixes, a
small gazetteer and the words around it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import text_lexicon as lx


@dataclass(frozen=True)
class Mention:
    """One entity mention inside a sentence."""

    start: int
    name: str
    category: str
    strength: int  # 0 guess, 1 context cue, 2 explicit (suffix, title, gazetteer, code)
    group: int  # 2 named entity / explicit identifier, 3 weak (acronym, single word)
    tentative: bool = False  # sentence-initial single word, kept only if confirmed


_BACKTICK_RE = re.compile(r"`([^`\n]{1,120})`")
_URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->|/)[A-Za-z_$][\w$-]*)*")
_DOTTED_CALL_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?=\s*\()")
_FILE_RE = re.compile(
    r"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:py|js|mjs|ts|tsx|jsx|md|json|ya?ml|toml|txt|csv|html?|css|go|"
    r"rs|java|kt|cc|cpp|hpp|rb|php|sh|sql|pdf|docx?|xlsx?|pptx?|ipynb|cfg|ini|lock)\b"
)
_SNAKE_RE = re.compile(r"\b_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_CAMEL_LOWER_RE = re.compile(r"\b[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+\b")
_EMPTY_CALL_RE = re.compile(r"\b[A-Za-z_]\w*(?=\(\))")

_TOKEN_RE = re.compile(r"[^\W_][\w'’&-]*(?:\.[^\W_][\w-]*)*")
_TITLE_BEFORE_RE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|Professor|Sir|Dame)\.?\s+$")
_BY_BEFORE_RE = re.compile(
    r"\b(?:written|authored|created|developed|maintained|founded|led|designed|invented|"
    r"directed|signed|reviewed|edited|presented|interviewed)\s+by\s+$"
)
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


def _last(tokens: list[str]) -> str:
    return tokens[-1].lower().rstrip(".")


def _classify(tokens: list[str], name: str, before: str, after: str) -> tuple[str, int]:
    """Category and confidence for a capitalised run, from its words and context."""
    last, first, low = _last(tokens), tokens[0].lower(), name.lower()
    multi = len(tokens) > 1
    if multi and (last in lx.ORG_SUFFIXES or any(
            t.lower() in lx.ORG_PREFIXES and nxt == "of" for t, nxt in zip(tokens, tokens[1:], strict=False))):
        return lx.ORGANIZATION, 2
    if low in lx.LOCATION_NAMES or (multi and last in lx.LOCATION_SUFFIXES):
        return lx.LOCATION, 2
    if multi and (last in lx.EVENT_SUFFIXES or (last.isdigit() and len(last) == 4)):
        return lx.EVENT, 2
    for suffixes, category in ((lx.CONTENT_SUFFIXES, lx.CONTENT), (lx.DATA_SUFFIXES, lx.DATA),
                               (lx.METHOD_SUFFIXES, lx.METHOD), (lx.ARTIFACT_SUFFIXES, lx.ARTIFACT),
                               (lx.CONCEPT_SUFFIXES, lx.CONCEPT)):
        if multi and last in suffixes:
            return category, 2
    alphabetic = all(t.replace("-", "").replace("'", "").isalpha() for t in tokens)
    if _TITLE_BEFORE_RE.search(before) and len(tokens) <= 3:
        return lx.PERSON, 2
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
    if any(before.lower().endswith(cue + " ") for cue in lx.LOCATION_CUES):
        return lx.LOCATION, 1
    if not multi and any(ch.isupper() for ch in tokens[0][1:]) and not tokens[0].isupper():
        return lx.ARTIFACT, 0  # CamelCase product/software names: LightRAG, PostgreSQL
    return lx.OTHER, 0


def _identifier_mentions(sentence: str, out: list[Mention]) -> str:
    """Record code identifiers, file names and URLs; return the sentence with them masked."""

    def mask(match: re.Match[str]) -> str:
        return "\x00" * (match.end() - match.start())

    def followed_by_call(end: int) -> bool:
        return sentence[end:end + 2].lstrip().startswith("(")

    def backtick(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        called = inner.endswith(")") and "(" in inner
        bare = inner.split("(", 1)[0].strip() if called else inner
        if _IDENT_RE.fullmatch(bare) and len(bare) >= 3 and bare.lower() not in lx.STOPWORDS:
            is_file = bool(_FILE_RE.fullmatch(bare))
            category = lx.METHOD if (called or followed_by_call(match.end())) and not is_file else lx.ARTIFACT
            out.append(Mention(match.start() + 1, bare, category, 1, 2))
        return mask(match)

    def identifier(kind: str) -> Callable[[re.Match[str]], str]:
        def record(match: re.Match[str]) -> str:
            name = match.group(0)
            if kind == "call" or followed_by_call(match.end()):
                category = lx.METHOD
            else:
                category = lx.ARTIFACT
            out.append(Mention(match.start(), name, category, 1, 2))
            return mask(match)
        return record

    masked = _BACKTICK_RE.sub(backtick, sentence)
    masked = _URL_RE.sub(mask, masked)
    masked = _DOTTED_CALL_RE.sub(identifier("call"), masked)
    masked = _FILE_RE.sub(identifier("file"), masked)
    masked = _SNAKE_RE.sub(identifier("ident"), masked)
    masked = _CAMEL_LOWER_RE.sub(identifier("ident"), masked)
    masked = _EMPTY_CALL_RE.sub(identifier("call"), masked)
    return masked


def _runs(masked: str) -> list[list[tuple[int, str]]]:
    """Group adjacent capitalised tokens (with inner connectors) into runs."""
    runs: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    prev_end = 0
    for match in _TOKEN_RE.finditer(masked):
        token = match.group(0)
        possessive = token.endswith(("'s", "’s"))
        token = token[:-2] if possessive else token.rstrip("'’-")
        gap = masked[prev_end:match.start()]
        prev_end = match.end()
        if not token:
            continue
        capital = token[0].isupper()
        year = token.isdigit() and len(token) == 4
        if current and gap in (" ", "  ") and (capital or year or token.lower() in lx.CONNECTORS):
            current.append((match.start(), token))
        else:
            if current:
                runs.append(current)
            current = [(match.start(), token)] if capital else []
        if possessive and current:
            # "Acme's Widget" is two names: the possessive closes the run.
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _split_at_of(run: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Split "Grace Moreau of Northwind Traders" in two names; keep "Bank of America".

    A run is cut at its first "of" when at least two words precede it and the word
    right before it is not an organisation word ("Technical University of Munich",
    "Royal Society of Chemistry" stay whole).
    """
    for index, (_, token) in enumerate(run):
        if token.lower() != "of":
            continue
        before = run[index - 1][1].lower() if index else ""
        if index >= 2 and before not in lx.ORG_PREFIXES and before not in lx.ORG_SUFFIXES \
                and index + 1 < len(run):
            return [run[:index], run[index + 1:]]
        break
    return [run]


def scan_sentence(sentence: str, query_mode: bool = False) -> list[Mention]:
    """All entity mentions in one sentence, ordered by position.

    ``query_mode`` treats sentence-initial words like any other (a query is one
    short sentence whose first word is usually a question word, already a
    stopword) and does not mark single words tentative.
    """
    mentions: list[Mention] = []
    masked = _identifier_mentions(sentence, mentions)
    first_word = _TOKEN_RE.search(masked)
    first_start = first_word.start() if first_word else -1
    for run in (part for whole in _runs(masked) for part in _split_at_of(whole)):
        while run and run[-1][1].lower() in lx.CONNECTORS:
            run = run[:-1]
        while run:
            head = run[0][1].lower()
            if head in lx.LEADING_STOPWORDS or head in lx.CONNECTORS:
                run = run[1:]
            elif len(run) > 1 and run[0][0] == first_start and (
                    head in lx.INITIAL_VERBS or head.endswith(("ing", "ed", "ly"))):
                run = run[1:]  # "Launching the Server": drop the verb, then "the"
            elif len(run) > 1 and head.rstrip(".") in lx.PERSON_TITLES:
                run = run[1:]
            else:
                break
        if not run or len(run) > 6:
            continue  # a title-cased clause, not a name
        tokens = [t for _, t in run]
        start = run[0][0]
        end = run[-1][0] + len(run[-1][1])
        name = " ".join(tokens)
        if tokens[-1].isdigit() and len(tokens) == 1:
            continue
        single = len(tokens) == 1
        if single and (tokens[0].lower() in lx.SINGLE_STOPWORDS or len(tokens[0]) < 2):
            continue
        if single and "-" in tokens[0] and tokens[0].rsplit("-", 1)[1].islower():
            continue  # "LLM-generated", "Open-source": an adjective, not a name
        if query_mode and single and tokens[0].lower() in lx.QUERY_STOPWORDS:
            continue
        before, after = masked[max(0, start - 40):start], masked[end:end + 80]
        category, strength = _classify(tokens, name, before, after)
        word = tokens[0]
        strong_single = (word.isupper() or any(ch.isdigit() for ch in word)
                         or any(ch.isupper() for ch in word[1:]) or strength >= 1)
        tentative = (single and start == first_start and not strong_single and not query_mode)
        group = 2 if (not single or strength >= 1) else 3
        mentions.append(Mention(start, name, category, strength, group, tentative))
    mentions.sort(key=lambda m: m.start)
    return mentions
