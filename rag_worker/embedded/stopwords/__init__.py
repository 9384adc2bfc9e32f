"""Function words of the languages the built-in extractor reads closely: English, German,
French and Spanish.

Closed-class words (articles, pronouns, prepositions, conjunctions, auxiliaries and modal
verbs, determiners, question words) and the adverbs that open sentences ("Perhaps",
"Vielleicht", "Peut-être"): a capitalised one is never a name, they are stripped from the
start of a capitalised run ("Die APT-Einstellungsdatei" -> "APT-Einstellungsdatei") and they
are never a relation keyword. Written for this project (compact, one module per language) rather
than taken from a general stop-word list, whose content words ("system", "group", "bill")
would cut real names.

``detect_language`` picks the language of a chunk from how many of its words are function words
of each language; the extractor reads German capitalised nouns differently (they are not names).
"""

from __future__ import annotations

import functools
import re

from . import de, en, es, fr

FUNCTION_WORDS: dict[str, frozenset[str]] = {"en": en.WORDS, "de": de.WORDS, "fr": fr.WORDS, "es": es.WORDS}
#: Every language's function words: what a capitalised single word must not be in any text.
ALL_FUNCTION_WORDS: frozenset[str] = frozenset().union(*FUNCTION_WORDS.values())
#: Articles of every language: never the first word of a name ("Die Datei", "Les Misérables" aside).
ARTICLES: frozenset[str] = frozenset(
    "the a an der die das den dem des ein eine einer einen einem eines le la les l un une el los las lo "
    "unos unas".split()
)

_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Words that say little about the language: shared by several of them.
_SHARED = frozenset(w for w in ALL_FUNCTION_WORDS if sum(w in words for words in FUNCTION_WORDS.values()) > 1)
_MIN_HITS = 3
#: A function word that belongs to one language only, and that language.
_LANGUAGE_OF: dict[str, str] = {
    word: language for language, words in FUNCTION_WORDS.items() for word in words if word not in _SHARED
}


def detect_language(text: str, sample_words: int = 400, default: str = "en") -> str:
    """"en", "de", "fr" or "es": the language most of the text's function words belong to
    (``default`` when the text has too few of them to tell, e.g. a table or code)."""
    hits = dict.fromkeys(FUNCTION_WORDS, 0)
    for word in _WORD_RE.findall(text, 0, sample_words * 12)[:sample_words]:
        language = _LANGUAGE_OF.get(word.casefold())
        if language:
            hits[language] += 1
    best = max(hits, key=lambda language: (hits[language], language == "en"))
    return best if hits[best] >= _MIN_HITS else default


@functools.lru_cache(maxsize=8)
def function_words(language: str) -> frozenset[str]:
    """The language's function words together with English ones (technical texts mix them in)."""
    return FUNCTION_WORDS.get(language, en.WORDS) | en.WORDS
