"""Source code and configuration files: indexed as text under a `File: name (language)` line.

The header line puts the file name and language into the first chunk, so a question about
"the retry logic in the Go client" can find it.  Which extensions count, and the MIME types
clients send for them, live here; `formats.FORMATS` refers to them.
"""

from __future__ import annotations

from protocol.errors import ErrorCode, RagError

from .extracted import ExtractedDocument, count_words
from .text import EMPTY_TEXT_MESSAGE, require_text

LANGUAGES: dict[str, str] = {
    # The first few are what messages list as examples.
    ".py": "Python", ".js": "JavaScript", ".ts": "TypeScript", ".java": "Java", ".go": "Go", ".rs": "Rust",
    ".pyi": "Python", ".pyw": "Python", ".mjs": "JavaScript", ".cjs": "JavaScript", ".jsx": "JavaScript (JSX)",
    ".mts": "TypeScript", ".cts": "TypeScript", ".tsx": "TypeScript (TSX)",
    ".kt": "Kotlin", ".kts": "Kotlin", ".scala": "Scala", ".groovy": "Groovy", ".gradle": "Gradle",
    ".swift": "Swift", ".dart": "Dart",
    ".c": "C", ".h": "C header", ".cpp": "C++", ".cc": "C++", ".cxx": "C++", ".hpp": "C++ header",
    ".hh": "C++ header", ".hxx": "C++ header", ".m": "Objective-C", ".cs": "C#", ".fs": "F#", ".vb": "Visual Basic",
    ".rb": "Ruby", ".php": "PHP", ".pl": "Perl", ".pm": "Perl", ".lua": "Lua", ".r": "R", ".jl": "Julia",
    ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".clj": "Clojure", ".ml": "OCaml",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".fish": "shell", ".ps1": "PowerShell", ".bat": "batch",
    ".sql": "SQL", ".graphql": "GraphQL", ".proto": "Protocol Buffers", ".tf": "Terraform",
    ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".ini": "INI", ".cfg": "config", ".conf": "config",
    ".properties": "Java properties", ".xml": "XML", ".css": "CSS", ".scss": "SCSS", ".less": "Less",
    ".vue": "Vue", ".svelte": "Svelte", ".dockerfile": "Dockerfile", ".mk": "Makefile", ".cmake": "CMake",
}  # fmt: skip

# What clients send for these files: the registered types, the x- types of common systems,
# and the odd ones Python's `mimetypes` and browsers guess (.ts is "video/mp2t" or
# "text/vnd.trolltech.linguist", .rs "application/rls-services+xml").  The content check
# (it must be text) is what guards.
MIME_TYPES = frozenset(
    {
        "text/plain", "text/x-python", "text/x-script.python", "application/x-python", "application/x-python-code",
        "text/javascript", "application/javascript", "application/x-javascript", "text/jsx",
        "text/typescript", "application/typescript", "application/x-typescript", "text/x-typescript",
        "video/mp2t", "text/vnd.trolltech.linguist", "text/tsx",
        "text/x-java", "text/x-java-source", "text/x-kotlin", "text/x-scala", "text/x-groovy",
        "text/x-go", "text/x-rust", "text/rust", "application/rls-services+xml", "text/x-swift", "application/vnd.dart",
        "text/x-c", "text/x-csrc", "text/x-chdr", "text/x-c++", "text/x-c++src", "text/x-c++hdr", "text/x-objcsrc",
        "text/x-csharp", "text/x-ruby", "application/x-ruby", "text/x-php", "application/x-php",
        "application/x-httpd-php", "text/x-perl", "application/x-perl", "text/x-lua", "text/x-r", "text/x-haskell",
        "application/x-sh", "application/x-shellscript", "text/x-sh", "text/x-shellscript",
        "application/x-msdos-program", "application/x-bat", "text/x-powershell",
        "application/sql", "text/x-sql", "application/graphql", "text/x-protobuf",
        "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "application/toml", "text/x-toml",
        "text/x-ini", "text/x-properties", "application/xml", "text/xml", "text/css", "text/x-scss", "text/x-less",
        "text/x-dockerfile", "text/x-makefile", "text/x-cmake",
    }
)  # fmt: skip


def language_of(filename: str | None) -> str:
    """The language named by the file's extension, or "source code"."""
    if not filename or "." not in filename[1:]:
        return "source code"
    return LANGUAGES.get(filename[filename.rfind(".") :].lower(), "source code")


def extract_code(data: bytes, filename: str | None = None) -> ExtractedDocument:
    """A source file as text, headed `File: name (language)`; the title is the file name.

    Raises `UNSUPPORTED_FORMAT` if the bytes are not text and `EXTRACTION_FAILED` if the
    file holds only whitespace.
    """
    body = require_text(data)
    if not body.strip():
        raise RagError(ErrorCode.EXTRACTION_FAILED, EMPTY_TEXT_MESSAGE)
    name = filename or "untitled"
    text = f"File: {name} ({language_of(filename)})\n\n{body}"
    return ExtractedDocument(text=text, pages=1, words=count_words(text), page_offsets=[0], title=filename)
