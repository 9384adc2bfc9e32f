"""Find classes, functions and methods declared in source code, with regexes only.

Used by the built-in extractor for fenced code blocks in Markdown and for chunks
of raw source files (``lightrag_index_codebase``). It recognises the declaration
forms of the common languages (Python, JavaScript/TypeScript, Go, Rust, Java, C#,
Kotlin, Ruby) and records which class a method belongs to and which declared
functions call each other, so the graph carries the code's structure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Language names for Markdown fence info strings.
_FENCE_LANGUAGES: dict[str, str] = {
    "py": "Python", "python": "Python", "python3": "Python", "js": "JavaScript",
    "javascript": "JavaScript", "jsx": "JavaScript", "mjs": "JavaScript",
    "ts": "TypeScript", "typescript": "TypeScript", "tsx": "TypeScript",
    "go": "Go", "golang": "Go", "rs": "Rust", "rust": "Rust", "java": "Java",
    "kt": "Kotlin", "kotlin": "Kotlin", "cs": "C#", "csharp": "C#", "c#": "C#",
    "rb": "Ruby", "ruby": "Ruby", "swift": "Swift", "scala": "Scala",
    "php": "PHP", "cpp": "C++", "c++": "C++", "c": "C",
}

_NAME = r"[A-Za-z_$][\w$]*"
_MODIFIERS = (
    r"(?:(?:public|private|protected|internal|abstract|final|static|sealed|partial|"
    r"data|open|export|default|declare)\s+)*"
)

# (pattern, kind, language guess). Each pattern has a ``name`` group. Order
# matters: the first match wins, so the class form is tried before the
# Java-style method form that would otherwise also match ``public class X``.
_DECLARATIONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(rf"^\s*(?:@\w+(?:\([^)]*\))?\s+)*{_MODIFIERS}"
                rf"(?:class|interface|struct|enum|trait|record|protocol|object)\s+(?P<name>{_NAME})"),
     "class", ""),
    (re.compile(r"^\s*type\s+(?P<name>[A-Za-z_]\w*)\s+(?:struct|interface)\b"), "class", "Go"),
    (re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>(?:self\.)?[A-Za-z_]\w*[?!]?)"), "function", "Python"),
    (re.compile(rf"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>{_NAME})\s*[(<]"),
     "function", "JavaScript"),
    (re.compile(rf"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>{_NAME})\s*(?::[^=]+)?=\s*(?:async\s+)?"
                rf"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|{_NAME}\s*=>)"),
     "function", "JavaScript"),
    (re.compile(r"^\s*func\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_]\w*)\s*[\[(]"), "function", "Go"),
    (re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+"
                r"(?P<name>[A-Za-z_]\w*)"), "function", "Rust"),
    (re.compile(r"^\s*(?:(?:public|private|protected|internal|static|final|abstract|synchronized|"
                r"override|virtual|async|extern|inline|suspend)\s+)+(?:fun\s+)?[\w<>\[\],.?]*\s*"
                r"(?P<name>[A-Za-z_]\w*)\s*\("), "function", "Java"),
    (re.compile(r"^\s*fun\s+(?:<[^>]*>\s*)?(?P<name>[A-Za-z_]\w*)\s*\("), "function", "Kotlin"),
)

# A method inside a class body of a brace language: ``  name(args) {``.
_BRACE_METHOD_RE = re.compile(
    rf"^\s+(?:static\s+)?(?:async\s+)?(?:get\s+|set\s+)?(?P<name>{_NAME})\s*\([^)]*\)\s*(?::[^{{]+)?\{{\s*$"
)
_NOT_METHOD_NAMES = frozenset(
    "if for while switch catch function return with elif else try constructor".split()
)

# Lines that say "this is source code" when they appear outside a fence.
_CODE_HINT_RE = re.compile(
    r"^\s*(?:(?:async\s+)?def\s|class\s|import\s|from\s+[\w.]+\s+import\s|#include\b|"
    r"package\s|using\s|func\s|fn\s|pub\s|public\s|private\s|protected\s|const\s|let\s|"
    r"var\s|function\b|return\b|@\w|if\s*\(|for\s*\(|while\s*\(|[{}\])]|//|/\*|\*/|#!)"
    r"|[;{}]\s*$|\)\s*(?:->\s*[\w\[\], .|]+)?:\s*$"
)
_DOC_LINE_RE = re.compile(r'^\s*(?:[rRbBuU]?"""|[rRbBuU]?\'\'\'|#(?!!)|//+|/\*+|\*)\s?(.*)$')


@dataclass
class CodeDecl:
    """One declaration found in a code block."""

    name: str
    kind: str  # "class", "function" or "method"
    language: str
    signature: str
    doc: str
    parent: str | None = None  # enclosing class, for methods
    calls: list[str] = field(default_factory=list)


def fence_language(info: str) -> str:
    """Map a Markdown fence info string (```py) to a language name, or ``""``."""
    return _FENCE_LANGUAGES.get(info.strip().lower(), "")


def looks_like_code(lines: list[str]) -> bool:
    """True when most non-blank lines look like source code (a raw source chunk).

    Why: a chunk of a ``.py`` file has no fences, and its ``# comments`` would
    otherwise be read as Markdown headings and its statements as prose.
    """
    non_blank = [line for line in lines if line.strip()]
    if len(non_blank) < 3:
        return False
    hits = sum(1 for line in non_blank if _CODE_HINT_RE.search(line))
    return hits >= 3 and hits * 5 >= len(non_blank) * 2


def has_declaration(lines: list[str]) -> bool:
    """True when some line declares a class or function."""
    return any(pattern.match(line) for line in lines for pattern, _, _ in _DECLARATIONS)


def is_code_line(line: str) -> bool:
    """True for a line that reads as code rather than as comment or docstring prose."""
    return bool(_CODE_HINT_RE.search(line)) and not _DOC_LINE_RE.match(line)


def comment_text(line: str) -> str:
    """The prose of a comment / docstring line, without its comment markers."""
    match = _DOC_LINE_RE.match(line)
    text = match.group(1) if match else line
    return text.strip().strip("\"'").strip("*/").strip()


def code_ratio(lines: list[str]) -> float:
    """Share of non-blank lines that look like code (``#`` comment lines included)."""
    non_blank = [line for line in lines if line.strip()]
    if not non_blank:
        return 0.0
    hits = sum(1 for line in non_blank
               if _CODE_HINT_RE.search(line) or line.lstrip().startswith(("#", "$ ")))
    return hits / len(non_blank)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _signature(line: str) -> str:
    sig = " ".join(line.strip().split())
    sig = sig.rstrip("{").rstrip().rstrip(":").rstrip()
    return sig if len(sig) <= 160 else sig[:157].rstrip() + "..."


def _docstring(lines: list[str], start: int) -> str:
    """First comment or docstring line right after (or above) a declaration."""
    for idx in (start + 1, start + 2, start - 1):
        if 0 <= idx < len(lines) and lines[idx].strip():
            match = _DOC_LINE_RE.match(lines[idx])
            if match:
                text = match.group(1).strip().strip("\"'").strip("*/").strip()
                if text:
                    return text if len(text) <= 160 else text[:157].rstrip() + "..."
            if idx == start + 1:
                # The first body line is code, not a docstring: only look above.
                continue
    return ""


def scan_code(lines: list[str], language: str = "") -> list[CodeDecl]:
    """Return the declarations in ``lines`` (one code block), in source order.

    Methods are attributed to the innermost enclosing class by indentation, which
    holds for Python and for conventionally formatted brace languages. Calls are
    recorded only between functions declared in the same block, so the graph
    gets real edges rather than every identifier in the body.
    """
    decls: list[CodeDecl] = []
    bodies: list[tuple[int, int]] = []  # (decl index, indent) of open functions
    body_text: dict[int, list[str]] = {}
    class_stack: list[tuple[int, str]] = []  # (indent, class name)
    for line_no, line in enumerate(lines):
        if not line.strip():
            continue
        indent = _indent(line)
        while class_stack and indent <= class_stack[-1][0]:
            class_stack.pop()
        while bodies and indent <= bodies[-1][1]:
            bodies.pop()
        for decl_index, _ in bodies:
            body_text[decl_index].append(line)
        found: tuple[str, str, str] | None = None
        for pattern, kind, lang in _DECLARATIONS:
            match = pattern.match(line)
            if match:
                found = (match.group("name"), kind, lang)
                break
        if found is None and class_stack:
            match = _BRACE_METHOD_RE.match(line)
            if match and match.group("name") not in _NOT_METHOD_NAMES:
                found = (match.group("name"), "function", "")
        if found is None:
            continue
        name, kind, lang = found
        name = name.removeprefix("self.")
        if name.startswith("__") and name.endswith("__") or len(name) < 2:
            continue  # dunders and one-letter names are noise in a graph
        parent = class_stack[-1][1] if class_stack else None
        if kind == "function" and parent is not None:
            kind = "method"
        if lang == "Python" and not line.rstrip().endswith(":") and "(" not in line:
            lang = "Ruby"
        decls.append(CodeDecl(
            name=name, kind=kind, language=language or lang, signature=_signature(line),
            doc=_docstring(lines, line_no), parent=parent,
        ))
        if kind == "class":
            class_stack.append((indent, name))
        else:
            bodies.append((len(decls) - 1, indent))
            body_text[len(decls) - 1] = []
    _link_calls(decls, body_text)
    return decls


def _link_calls(decls: list[CodeDecl], body_text: dict[int, list[str]]) -> None:
    callables = [d.name for d in decls if d.kind != "class"]
    if len(callables) < 2 or not body_text:
        return
    # Longest names first so ``parse_all`` is not matched as ``parse``.
    ordered = sorted(dict.fromkeys(callables), key=lambda n: (-len(n), n))
    call_re = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, ordered)) + r")\s*\(")
    for index, lines in body_text.items():
        seen: dict[str, None] = {}
        for line in lines:
            for match in call_re.finditer(line):
                callee = match.group(1)
                if callee != decls[index].name:
                    seen.setdefault(callee, None)
        decls[index].calls = list(seen)[:8]
