"""Turn one chunk of text into units (sentences, headings, code declarations) and candidates.

The first half of the built-in extractor: it walks Markdown structure (fences,
headings, lists, tables, block quotes), raw source files, and LightRAG's heading
breadcrumb, and records every entity mention with the sentence it occurs in.
``text_entities`` then selects, describes and relates the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import text_lexicon as lx
from .code_entities import (
    code_ratio,
    comment_text,
    fence_language,
    has_declaration,
    is_code_line,
    looks_like_code,
    scan_code,
)
from .stopwords import detect_language
from .text_scan import Mention, scan_sentence
from .text_sentences import bounded, clean_inline, ends_sentence, split_sentences

MAX_NAME_CHARS = 100

_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_HEADING_SYMBOLS_RE = re.compile(r"^[^\w(\"'`]+|[^\w)\"'`?!.]+$")  # emoji / decoration at the ends
_HEADING_NUMBER_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+")


@dataclass
class Unit:
    """A sentence, heading or code declaration, with the entity keys it mentions."""

    text: str  # cleaned text, used verbatim in descriptions
    kind: str  # "prose", "heading" or "code"
    section: int  # index of the governing heading unit, -1 for none
    mentions: list[tuple[int, str]] = field(default_factory=list)  # (offset, entity key)
    language: str = ""  # a prose sentence's language, when it says so itself


@dataclass
class Candidate:
    """An entity candidate, merged case-insensitively across its mentions."""

    key: str
    name: str
    category: str
    strength: int  # confidence of the category: 0 guess, 1 context cue, 2 explicit
    group: int  # 0 heading, 1 code declaration, 2 named entity, 3 weak mention
    first: int
    count: int = 0
    tentative: bool = False
    decl: str = ""  # fixed leading description (headings, code declarations)
    level: int = 0  # heading level


_OPENER = {")": "(", "]": "[", "}": "{"}
_CLOSER = {"(": ")", "[": "]", "{": "}"}
_NAME_EDGE_PUNCT = " \t.,;:!?\"'`"


def _strip_name(name: str) -> str:
    """Trim punctuation around a name, keeping brackets that are balanced inside it."""
    name = name.strip(_NAME_EDGE_PUNCT)
    while name and name[-1] in _OPENER and name.count(name[-1]) > name.count(_OPENER[name[-1]]):
        name = name[:-1].rstrip()
    while name and name[0] in _CLOSER and name.count(name[0]) > name.count(_CLOSER[name[0]]):
        name = name[1:].lstrip()
    if name.count("(") > name.count(")"):
        name = name[: name.rfind("(")].rstrip()  # "Title (unclosed" -> "Title"
    return bounded(name.strip(_NAME_EDGE_PUNCT), MAX_NAME_CHARS)


def _is_subsequence(letters: str, initials: str) -> bool:
    remaining = iter(initials)
    return bool(letters) and all(letter in remaining for letter in letters)


class DocumentBuilder:
    """Collects units, candidates and relations for one chunk of text."""

    def __init__(self, language: str = "en") -> None:
        self.language = language  # "en", "de", "fr" or "es": which function words apply
        self.units: list[Unit] = []
        self.cands: dict[str, Candidate] = {}
        self.order = 0
        self.code_rels: list[tuple[str, str, str, str]] = []  # (a, b, kind, description)
        self.heading_stack: list[tuple[int, int]] = []  # (level, unit index)
        self.subsections: list[tuple[int, int]] = []  # (parent unit, child unit)

    # -- candidates ---------------------------------------------------------
    def add(self, name: str, category: str, strength: int, group: int,
            tentative: bool = False, decl: str = "", level: int = 0) -> str | None:
        """Register one mention; returns the candidate key, or None for an unusable name."""
        name = _strip_name(name)
        if len(name) < lx.MIN_NAME_CHARS or not any(ch.isalpha() for ch in name):
            return None
        key = name.casefold()
        self.order += 1
        cand = self.cands.get(key)
        if cand is None:
            cand = Candidate(key, name, category, strength, group, self.order, tentative=tentative)
            self.cands[key] = cand
        else:
            if cand.name.isupper() and not name.isupper() and len(name) > 3:
                cand.name = name  # "VICKSBURG" then "Vicksburg": the name is written the reader's way
            cand.tentative = cand.tentative and tentative
            cand.group = min(cand.group, group)
            if strength > cand.strength:
                cand.category, cand.strength = category, strength
        if decl and not cand.decl:
            cand.decl, cand.level = decl, level
        cand.count += 1
        return key

    def current_section(self) -> int:
        """Unit index of the innermost open heading, -1 before the first one."""
        return self.heading_stack[-1][1] if self.heading_stack else -1

    # -- structure ----------------------------------------------------------
    def add_heading(self, raw: str, level: int, synthetic_path: str = "") -> None:
        """A heading: an entity (H1 = document title) that owns the text below it."""
        text = _HEADING_NUMBER_RE.sub("", clean_inline(raw).replace("`", "")).strip().rstrip(":")
        if not text or not any(ch.isalpha() for ch in text):
            return
        while self.heading_stack and self.heading_stack[-1][0] >= level:
            self.heading_stack.pop()
        parent = self.current_section()
        if synthetic_path:
            decl = f'Document section "{text}" (section path: {synthetic_path}).'
        elif level == 1:
            decl = f'"{text}" is the title of the document.'
        else:
            decl = f'"{text}" is a section heading of the document.'
        category = lx.CONTENT if level == 1 and not synthetic_path else lx.CONCEPT
        key = self.add(text, category, 1, 0, decl=decl, level=level)
        if key is None:
            return
        index = len(self.units)
        self.units.append(Unit(text, "heading", parent, [(0, key)]))
        if parent >= 0:
            self.subsections.append((parent, index))
        self.heading_stack.append((level, index))

    def add_prose(self, text: str) -> None:
        """A paragraph, list item or table row: split into sentences and scanned."""
        text = clean_inline(text)
        if not text:
            return
        section = self.current_section()
        for sentence in split_sentences(text):
            # A manual's untranslated paragraph: a sentence says its own language when it can.
            language = detect_language(sentence, default=self.language)
            mentions = scan_sentence(sentence, language=language)
            unit = Unit(sentence, "prose", section, language=language)
            for m in mentions:
                key = self.add(m.name, m.category, m.strength, m.group, tentative=m.tentative)
                if key is not None:
                    unit.mentions.append((m.start, key))
            self._type_acronyms(sentence, mentions)
            self.units.append(unit)

    def _type_acronyms(self, sentence: str, mentions: list[Mention]) -> None:
        """"Python Software Foundation (PSF": the acronym is what the name before it is."""
        for long, short in zip(mentions, mentions[1:], strict=False):
            between = sentence[long.start + len(long.name):short.start]
            if between.strip() != "(" or not short.name.isupper() or " " not in long.name:
                continue
            initials = "".join(w[0] for w in long.name.split() if w[0].isupper())
            if _is_subsequence(short.name.replace("-", ""), initials):
                cand, source = self.cands.get(short.name.casefold()), self.cands.get(long.name.casefold())
                if cand and source and source.strength > cand.strength:
                    cand.category, cand.strength = source.category, source.strength

    def add_code(self, lines: list[str], language: str) -> None:
        """A code block: its declarations become entities, its structure relations."""
        section = self.current_section()
        for decl in scan_code(lines, language):
            lang = f"{decl.language} " if decl.language else ""
            if decl.kind == "class":
                what, category = f"{lang}class", lx.ARTIFACT
            elif decl.kind == "method":
                what, category = f"{lang}method of class {decl.parent}", lx.METHOD
            else:
                what, category = f"{lang}function", lx.METHOD
            text = f"{decl.name} is a {what}, declared as `{decl.signature}`."
            if decl.doc:
                text += f" {decl.doc.rstrip('.')}."
            key = self.add(decl.name, category, 2, 1, decl=text)
            if key is None:
                continue
            self.units.append(Unit(text, "code", section, [(0, key)]))
            if decl.parent:
                self.code_rels.append((decl.parent, decl.name, "defines",
                                       f"Class {decl.parent} defines the method {decl.name}: `{decl.signature}`."))
            for callee in decl.calls:
                self.code_rels.append((decl.name, callee, "calls",
                                       f"Function {decl.name} calls {callee} in its body."))


def _fence_info(line: str) -> tuple[str, str] | None:
    """(fence marker, info string) of a fence line, else None."""
    match = _FENCE_RE.match(line)
    return (match.group(1), match.group(2)) if match else None


def _starts_inside_fence(lines: list[str], fences: list[int]) -> bool:
    """Whether the chunk was cut out of the middle of a fenced code block.

    LightRAG chunks by tokens, so a chunk can begin inside a block: its first
    fence then closes a block instead of opening one. A fence with an info string
    (```bash) can only open a block (CommonMark), which settles most cases;
    otherwise the text before the first fence is compared with the text after it.
    """
    infos = [_fence_info(lines[i]) or ("", "") for i in fences[:2]]
    if not infos or infos[0][1]:
        return False
    if len(infos) > 1 and infos[1][1]:
        return True
    before = code_ratio(lines[: fences[0]])
    after_end = fences[1] if len(fences) > 1 else len(lines)
    return before >= 0.5 and before > code_ratio(lines[fences[0] + 1: after_end])


def _heading_text(line: str) -> tuple[int, str] | None:
    """Level and text of a Markdown heading line; None for shell/code comments."""
    match = _HEADING_RE.match(line)
    if not match:
        return None
    text = _HEADING_SYMBOLS_RE.sub("", match.group(2))
    if len(text) > 100 or len(text.split()) > 12 or any(ch in text for ch in "=;${}<>\\"):
        return None  # too long or code-like to be a title: keep it as text
    return len(match.group(1)), text


def _parse_source(builder: DocumentBuilder, lines: list[str]) -> None:
    """A chunk of a raw source file: declarations, plus comments/docstrings as prose."""
    builder.add_code(lines, "")
    paragraph: list[str] = []
    for line in lines + [""]:
        text = comment_text(line) if line.strip() and not is_code_line(line) else ""
        if text:
            paragraph.append(text)
        elif paragraph:
            builder.add_prose(" ".join(paragraph))
            paragraph.clear()


# A line ending in one of these continues on the next line whatever its length.
_JOINING_END_CHARS = ".!?…。！？,;:-–—(/&+"
_SHORT_LINE_SHARE = 0.6


def _wrap_width(lines: list[str]) -> int:
    """The width the text is wrapped at: the 90th percentile of its line lengths."""
    lengths = sorted(len(line.strip()) for line in lines if line.strip())
    return lengths[(len(lengths) * 9) // 10] if lengths else 0


def _ends_unit(line: str, width: int) -> bool:
    """Whether a line ends a sentence, title or item, so the next line starts a new one.

    Text extracted from PDFs keeps its layout lines: titles, table cells and
    definition terms are short lines with no closing punctuation, and joining
    them with the next line makes run-on "names" ("Landfill and Waste According");
    a line that closes a sentence is not continued by a lowercase term either.
    """
    line = line.rstrip()
    if not line or ends_sentence(line):
        return bool(line)
    return width >= 40 and len(line) < width * _SHORT_LINE_SHARE and line[-1] not in _JOINING_END_CHARS


def parse_document(builder: DocumentBuilder, text: str) -> None:
    """Walk the lines: fences, headings, tables, list items, paragraphs."""
    lines = text.split("\n")
    width = _wrap_width(lines)
    fences = [i for i, line in enumerate(lines) if _FENCE_RE.match(line)]
    if not fences and (looks_like_code(lines) or (has_declaration(lines) and code_ratio(lines) >= 0.2)):
        _parse_source(builder, lines)
        return
    paragraph: list[str] = []
    code: list[str] = []
    code_lang = ""
    fence = ""
    if _starts_inside_fence(lines, fences):
        fence = (_fence_info(lines[fences[0]]) or ("```", ""))[0]

    def flush() -> None:
        if paragraph:
            builder.add_prose(" ".join(paragraph))
            paragraph.clear()

    for line in lines:
        fence_match = _FENCE_RE.match(line)
        if fence:
            # A closing fence repeats the opening character, at least as long, with
            # no info string (CommonMark); "```python" inside a block is content.
            if fence_match and fence_match.group(1)[0] == fence[0] \
                    and len(fence_match.group(1)) >= len(fence) and not fence_match.group(2):
                builder.add_code(code, code_lang)
                code, fence = [], ""
            else:
                code.append(line)
            continue
        if fence_match:
            flush()
            fence, code_lang = fence_match.group(1), fence_language(fence_match.group(2))
            continue
        stripped = line.strip()
        heading = _heading_text(line)
        if heading:
            flush()
            builder.add_heading(heading[1], heading[0])
        elif not stripped:
            flush()
        elif stripped.startswith("|"):
            flush()
            if not _TABLE_RULE_RE.match(stripped):
                cells = [c.strip() for c in stripped.strip("|").split("|") if c.strip()]
                builder.add_prose("; ".join(cells) + ".")
        elif _LIST_ITEM_RE.match(line):
            flush()
            paragraph.append(_LIST_ITEM_RE.sub("", line, count=1))
        elif stripped.startswith(">"):
            quoted = stripped.lstrip("> ").strip()
            if quoted:
                paragraph.append(quoted)
            else:
                flush()  # an empty quote line separates quoted paragraphs
        else:
            if paragraph and _ends_unit(paragraph[-1], width):
                flush()
            paragraph.append(stripped)
    flush()
    if fence and code:
        builder.add_code(code, code_lang)  # unterminated fence: chunk cut inside a block
