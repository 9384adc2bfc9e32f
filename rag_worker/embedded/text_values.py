"""Dates and quantities in a sentence: values a reader looks up ("4 July 1863", "$4.2 million").

Only full dates (a day or a month with its year) and amounts with a unit or a currency are
taken: a bare year or number links unrelated documents and says nothing alone. The patterns
read English, German, French and Spanish; the unit list is short on purpose (money, data sizes,
physical units), so a number is an entity only when its unit says what it measures.
"""

from __future__ import annotations

import re

from . import text_lexicon as lx

_MONTH = r"(?:" + "|".join(sorted((re.escape(m) for m in lx.MONTHS), key=len, reverse=True)) + r")\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])"
_YEAR = r"(?:1[5-9]\d\d|20\d\d)"

_DATE_RE = re.compile(
    rf"\b{_YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"  # 2022-01-03
    rf"|\b{_MONTH}\s+{_DAY}(?:st|nd|rd|th)?,?\s+{_YEAR}\b"  # July 4, 1863
    rf"|\b{_DAY}(?:\.|st|nd|rd|th|er)?\s+(?:of\s+|de\s+)?{_MONTH}\s+(?:de\s+|del\s+)?{_YEAR}\b"  # 4 July 1863, 3. Januar 2022
    rf"|\b{_MONTH}\s+(?:de\s+|of\s+)?{_YEAR}\b",  # May 2000, mayo de 2000
    re.IGNORECASE,
)

_SCALE = r"(?:\s?(?:thousand|million|billion|trillion|bn|mn|m|k|Mio\.?|Mrd\.?|Millionen|Milliarden|millions?|milliards?|millones|mil\s+millones))?"
_NUMBER = r"\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?"
_UNIT = (
    r"(?:USD|EUR|GBP|CHF|JPY|dollars?|euros?|Euro|pounds?|francs?|yen"
    r"|[KMGTP]i?B|[KMGT]bit/s|bytes?|kg|mg|km|cm|mm|m²|km²|kWh|MWh|GWh|kW|MW|GW|MHz|GHz|Hz|V|mAh|°C|°F"
    r"|tonnes?|tons?|metres?|meters?|miles?|litres?|liters?|hectares?|acres?)"
)
_QUANTITY_RE = re.compile(
    rf"(?:[$€£¥]\s?(?:{_NUMBER}){_SCALE}"  # $4.2 million, € 300
    rf"|\b(?:{_NUMBER}){_SCALE}\s?{_UNIT})(?![\w/])",  # 42 million euros, 12 GB, 3,5 km
)


_DIGIT_RE = re.compile(r"\d")
_YEAR_DIGITS_RE = re.compile(r"(?<!\d)(?:1[5-9]|20)\d\d(?!\d)")


def value_spans(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, category) of every date and quantity in the sentence, in order."""
    if not _DIGIT_RE.search(sentence):
        return []  # every date has its year, every quantity its number
    spans = [(m.start(), m.end(), lx.DATE) for m in _DATE_RE.finditer(sentence)] if _YEAR_DIGITS_RE.search(sentence) else []
    taken = [(start, end) for start, end, _ in spans]
    for match in _QUANTITY_RE.finditer(sentence):
        if not any(start < match.end() and match.start() < end for start, end in taken):
            spans.append((match.start(), match.end(), lx.QUANTITY))
    return sorted(spans)
