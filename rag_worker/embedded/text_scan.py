"""Entity mentions in one sentence: the built-in extractor's scanner.

``scan_sentence`` finds code identifiers, dates and quantities first (they are masked so
their parts are not read again as names), then runs of capitalised words, each typed by
``text_types.classify``. What a reader would not take for a name is left out: function
words of the sentence's language ("Die", "Perhaps"), names of fewer than three characters,
words merged by a PDF's lost spaces, and in German text the capitalised common nouns
(every German noun is capitalised); a capital that only opens a sentence or a title line is
kept only if the chunk confirms it (``Mention.tentative``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import text_lexicon as lx
from .text_types import classify
from .text_values import value_spans


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
_LETTERS_RE = re.compile(r"[^\W\d_]{2,}")
_YEAR_RE = re.compile(r"^(?:1[5-9]|20)\d\d$")
# A list marker or arrow before a word opens a line: "2) Tengo", "---> Roses", "(Mantenga".
_MARKER_BEFORE_RE = re.compile(r"(?:(?:^|\s)(?:\d{1,3}|[a-zA-Z])[.)]|-+>|[*•·(\[\"“«»])\s*$")
# French and Italian elided articles and pronouns ("L'", "d'", "J'", "qu'"): not "O'Brien".
_ELISION_RE = re.compile(r"^(?:[LlDdJjNnSsCcMmTt]|[Qq]u)['’](?=\w)")
_CAMEL_PARTS_RE = re.compile(r"[A-ZÄÖÜ]?[a-zäöüß]+|[A-ZÄÖÜ]+(?![a-zäöüß])")


def all_caps(word: str) -> bool:
    """Written in capitals ("FUßNOTEN" too: "ß" has no capital of its own in most texts)."""
    return word.replace("ß", "SS").isupper()


def strong_word(word: str) -> bool:
    """An acronym, a code or version, or a CamelCase word: a name even when it stands alone."""
    letters = word.replace("-", "").replace("'", "")
    if all_caps(word):
        return len(letters) >= 2
    return any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]) or not letters.isalpha()


def _headline_case(text: str) -> tuple[str, bool]:
    """An all-capitals line ("THE SIEGE OF VICKSBURG") in title case, same length.

    Headlines and OCR'd titles shout every word; read as they are, each word looks like an
    acronym ("KIND") and the names in them ("VICKSBURG") do not meet their other spellings.
    Words shorter than ``SHOUTED_CHARS`` keep their capitals (acronyms), except function words.
    """
    words = _LETTERS_RE.findall(text)
    if len(words) < 3 or sum(map(str.isupper, words)) < 0.7 * len(words):
        return text, False
    words = list(_LETTERS_RE.finditer(text))
    out = list(text)
    for match in words:
        word = match.group(0)
        low = word.lower()
        if low in lx.LEADING_STOPWORDS or low in lx.CONNECTORS:
            new = low
        elif len(word) < SHOUTED_CHARS or not word.isupper():
            continue  # "CNRI", "KIND": an acronym or not, the line's other words decide (title_like)
        else:
            new = word[0] + word[1:].lower()
        if len(new) == len(word):
            out[match.start():match.end()] = new
    return "".join(out), True


def _title_like(masked: str, function: frozenset[str]) -> bool:
    """A short line in title case ("1.1 Substation and Harbor", "DESCRIPTION"): its capitals say nothing."""
    if masked.rstrip()[-1:] in ".!?;:…,":
        return False
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", masked) if w.lower() not in function]
    return 1 <= len(words) <= 12 and all(w[0].isupper() for w in words)


def _run_together(word: str, function: frozenset[str]) -> bool:
    """Words whose spaces a PDF lost ("DieGruppenoperationvonGaufX"): a function word inside."""
    if len(word) < 12 or any(ch in word for ch in "-_.'’") or any(ch.isdigit() for ch in word):
        return False
    parts = _CAMEL_PARTS_RE.findall(word)
    return len(parts) >= 3 and any(len(p) >= 2 and p.lower() in function for p in parts)


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
    for start, end, category in value_spans(masked):
        out.append(Mention(start, " ".join(masked[start:end].split()), category, 2, 3))
        masked = masked[:start] + "\x00" * (end - start) + masked[end:]
    return masked


def _runs(masked: str, connectors: frozenset[str] = lx.CONNECTORS) -> list[list[tuple[int, str]]]:
    """Group adjacent capitalised tokens (with inner connectors and initials) into runs."""
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
        year = token[0].isdigit() and bool(_YEAR_RE.match(token))
        initial = len(token) == 1 and token.isupper()
        if current and len(current[-1][1]) == 1:
            if len(current) >= 2 and gap == ". " and current[-1][1].isupper() and capital:
                current[-1] = (current[-1][0], current[-1][1] + ".")  # "Ulysses S. Grant": an initial
                gap = " "
            elif current[-1][1].isalpha():
                runs.append(current[:-1])  # a lone letter ("Press G", "V I M") is no part of a name
                current = []
        if initial and not current and masked[match.end():match.end() + 1] != ".":
            continue
        joins = token.lower() in connectors and (
            token.lower() != "the" or current[-1][1].lower() in ("of", "for", "&") if current else False)
        if current and gap in (" ", "  ") and (capital or year or joins):
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


def _german_connectors() -> frozenset[str]:
    # German articles join nouns, not names: "Wahl der Version" is two common nouns.
    return lx.CONNECTORS - {"der", "den", "die", "das", "dem", "des"}


_CONNECTORS_BY_LANGUAGE = {"de": _german_connectors()}
SHOUTED_CHARS = 6  # an all-capitals word this long is a shouted word, not an acronym


def _acronym_singular(word: str) -> str:
    """"APIs", "APTs": the plural or genitive of an acronym names the acronym."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and word[:-1].isupper() else word


def _compound_head(word: str, german: bool) -> str | None:
    """The name in a hyphenated compound, "" when the whole word is one, None when there is none.

    "LLM-generated" and "APT-Konfigurationsdatei" are an adjective and a common noun built on
    a name: the name is their first part when that part is one (an acronym, CamelCase).
    """
    if "-" not in word:
        return ""
    head, tail = word.split("-", 1)[0], word.rsplit("-", 1)[1]
    common_tail = tail.islower() or (
        (german or head.isupper()) and tail[:1].isupper() and tail[1:].islower() and len(tail) >= 3)
    if not common_tail:
        return ""
    return head if strong_word(head) and len(head) >= lx.MIN_NAME_CHARS else None


def scan_sentence(sentence: str, query_mode: bool = False, language: str = "en") -> list[Mention]:
    """All entity mentions in one sentence, ordered by position.

    ``query_mode`` treats sentence-initial words like any other (a query is one
    short sentence whose first word is usually a question word, already a
    stopword) and does not mark single words tentative. ``language`` ("en", "de",
    "fr", "es") selects the function words; German text also drops capitalised
    common nouns that have no cue of being a name.
    """
    mentions: list[Mention] = []
    masked, shouted = _headline_case(_identifier_mentions(sentence, mentions))
    leading, singles = lx.leading_words(language), lx.single_stopwords(language)
    german = language == "de" and not query_mode
    title_like = not query_mode and (shouted or _title_like(masked, leading))
    openers = _Openers(masked, none=query_mode)
    runs = _runs(masked, _CONNECTORS_BY_LANGUAGE.get(language, lx.CONNECTORS))
    for run in (part for whole in runs for part in _split_at_of(whole) if part):
        mention = _run_mention(run, masked, openers, leading, singles, german, title_like, query_mode)
        if mention is not None:
            mentions.append(mention)
    mentions.sort(key=lambda m: m.start)
    return mentions


class _Openers:
    """Where a sentence or clause opens: its first word, a word after a list number or label
    with no lower case before it ("2. Press", "NOTE: Pressing"), a word after a colon, a dash,
    an arrow or a bracket ("---> Tengo", "(Mantenga"). Asked only for the first word of a run."""

    def __init__(self, masked: str, none: bool = False) -> None:
        self._masked = masked
        first_lower = next((i for i, ch in enumerate(masked) if ch.islower()), len(masked))
        self._first_lower = -1 if none else first_lower

    def __contains__(self, start: object) -> bool:
        if not isinstance(start, int) or self._first_lower < 0:
            return False
        if start <= self._first_lower:
            return True
        before = self._masked[max(0, start - 12):start]
        return before.rstrip().endswith((":", ";", "—", "–", " -")) or bool(_MARKER_BEFORE_RE.search(before))


def _named_by_suffix(run: list[tuple[int, str]]) -> bool:
    """An organisation or place by its last word: "Open Compute Foundation" keeps its "Open"."""
    last = run[-1][1].lower().rstrip(".")
    return last in lx.ORG_SUFFIXES or last in lx.LOCATION_SUFFIXES


def _trim_run(run: list[tuple[int, str]], openers: _Openers, leading: frozenset[str]
              ) -> tuple[list[tuple[int, str]], bool]:
    """The run without its leading/trailing function words, sentence-initial verbs and titles;
    and whether a sentence-initial word was dropped (what remains is then no confirmed name)."""
    if " ".join(t for _, t in run).lower() in lx.LOCATION_NAMES:
        return run, False  # "Los Angeles", "El Paso"
    while run and (run[-1][1].lower() in lx.CONNECTORS or run[-1][1].lower() in leading):
        run = run[:-1]
    opened = bool(run) and run[0][0] in openers
    dropped = False
    while run:
        head = run[0][1].lower()
        if head in leading or head in lx.CONNECTORS:
            run, dropped = run[1:], dropped or run[0][0] in openers
        elif len(run) > 1 and run[0][0] in openers and (
                head in lx.INITIAL_VERBS or head.endswith(("ing", "ed", "ly"))) and not _named_by_suffix(run):
            run, dropped = run[1:], True  # "Launching the Server": drop the verb, then "the"
        elif len(run) > 1 and head.rstrip(".") in lx.PERSON_TITLES and not _named_by_suffix(run):
            run = run[1:]  # "General Grant" (but "General Motors")
        else:
            break
    return run, opened and dropped


def _run_mention(run: list[tuple[int, str]], masked: str, openers: _Openers, leading: frozenset[str],
                 singles: frozenset[str], german: bool, title_like: bool, query_mode: bool) -> Mention | None:
    """The mention a run of capitalised words makes, or None when it is no name."""
    run, after_opener = _trim_run(run, openers, leading)
    shouted = False
    if not run or len(run) > 6:
        return None  # a title-cased clause, not a name
    if len(run) == 2 and run[-1][1].isdigit() and not strong_word(run[0][1]):
        run = run[:1]  # "Pakete 1000": a number after a common word
    tokens = [t for _, t in run]
    start = run[0][0]
    single = len(tokens) == 1
    if single and _ELISION_RE.match(tokens[0]) and not german:
        elided = _ELISION_RE.match(tokens[0])
        cut = elided.end() if elided else 0
        tokens, start = [tokens[0][cut:]], start + cut  # "L'Université", "J'ai": the word after the elision
    if single:
        word = tokens[0]
        if word.isdigit() or word.lower() in singles or len(word) < lx.MIN_NAME_CHARS or _run_together(word, leading):
            return None
        head = _compound_head(word, german)
        if head is None:
            return None  # "Open-source", "Pin-Priorität": an adjective or a common noun
        word = head or word
        word = _acronym_singular(word)
        shouted = all_caps(word) and len(word) >= SHOUTED_CHARS and word.isalpha()
        if shouted:
            word = word[0] + word[1:].lower()  # "DESCRIPTION", "ENCIMA": a shouted word, read as written
        tokens = [word]
    name = " ".join(tokens)
    if len(name) < lx.MIN_NAME_CHARS:
        return None
    if query_mode and single and tokens[0].lower() in lx.QUERY_STOPWORDS:
        return None
    end = start + len(name) if single else run[-1][0] + len(run[-1][1])
    before, after = masked[max(0, start - 40):start], masked[end:end + 80]
    category, strength = classify(tokens, name, before, after)
    # In a title line every word is capitalised: an all-capitals word there is no acronym.
    strong = any(strong_word(t) and not (title_like and t.isupper()) for t in tokens)
    by_follower = single and category == lx.ARTIFACT and strength == 1  # "Lektion 1.1", "Multiple packages"
    if german and (strength == 0 or by_follower) and not (single and strong):
        # German capitalises every noun: a run of them is no name; an acronym in it is ("Befehle APT").
        named = next((t for t in tokens if strong_word(t) and len(t) >= lx.MIN_NAME_CHARS), None)
        if named is None or single:
            return None
        start += name.index(named)
        named = _acronym_singular(named)
        tokens, name, single = [named], named, True
        end = start + len(named)
    # A word after a list number, a label ("Package: perl") or opening a sentence is capitalised
    # by position: a follower ("Multiple packages", "Lesson 1.1") does not make it a name.
    opening = start in openers or after_opener or masked[end:end + 2] == ": "
    weak = not strong and (strength == 0 or by_follower)
    tentative = not query_mode and weak and ((single and (opening or shouted)) or title_like)
    group = 2 if (not single or strength >= 1) else 3
    return Mention(start, name, category, strength, group, tentative)
