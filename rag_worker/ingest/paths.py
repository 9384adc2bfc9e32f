"""Files on the server's disk: only inside the allowed roots, and folders walked safely.

The allowed roots are `LIGHTRAG_MCP_ALLOWED_DIRS` plus the client's MCP roots (VS Code
offers its workspace folders).  A configured entry may hold `{user}`, replaced by the caller's
user id for that call only (`/app/uploads/{user}` on a server shared by many users): such an
entry gives no root to a call without a user, or whose user id is not a safe single path
component, so no caller reaches another user's folder or a parent of it.  A path is resolved first — symlinks and `..` included —
and then must lie inside a root as a path, not as a string prefix (`/data2` is not inside
`/data`).  A folder walk never follows symlinked folders, re-checks every symlinked file,
skips what `.gitignore` files and the default skip list name (vendored, generated, binary),
and stops at a bound on the number of files.

A document read from disk is named by its path relative to its root, prefixed with the
root's folder name (`myproject/src/app.py`): two `README.md` in different folders are two
documents, and indexing the same tree again finds the same names.

LibreChat keeps a chat attachment as `uploads/<user>/<file_id>__<original name>`: with that
folder as a root, a bare original name finds the attachment (the newest of that name), and
documents are named without the `<file_id>__` prefix.

Every file read by path goes through `regular_files.read_file` (a `.gitignore` through its
`open_regular`), so a FIFO, a device or a socket in an allowed folder is refused instead of
blocking the worker.  Messages never name the server's directories: a refusal echoes only (a
shortened copy of) what the client sent.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from protocol import ErrorCode, RagError

from .formats import extension_of, supported_extensions
from .regular_files import open_regular, short
from .validation import format_size

# Folders and files a code or documents tree carries that are not worth indexing.
DEFAULT_SKIPS = (
    ".git/",
    ".hg/",
    ".svn/",
    "node_modules/",
    "bower_components/",
    "__pycache__/",
    ".venv/",
    "venv/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".cache/",
    ".idea/",
    ".gradle/",
    "dist/",
    "build/",
    "target/",
    "vendor/",
    "site-packages/",
    "*.egg-info/",
    "coverage/",
    "htmlcov/",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.lock",
    "package-lock.json",
    "pnpm-lock.yaml",
    "*.pyc",
    ".DS_Store",
)


#: Longest path and path component a client may send (Linux's PATH_MAX and NAME_MAX, in bytes).
MAX_PATH_BYTES = 4095
MAX_NAME_BYTES = 255
#: The most of one `.gitignore` a walk reads.
MAX_GITIGNORE_BYTES = 1 << 20

#: What a configured allowed directory holds where the caller's user id goes.
USER_PLACEHOLDER = "{user}"
#: A user id that may stand in a path: one component, nothing that climbs or separates
#: (LibreChat's ids are 24-hex-digit ObjectIds).
_SAFE_PATH_USER = re.compile(r"[A-Za-z0-9_-]{1,128}")


def configured_for_user(configured: Iterable[str], user_id: str | None) -> list[str]:
    """The configured allowed directories for one caller, `{user}` replaced by its user id.

    An entry holding `{user}` is dropped when the call has no user or the id is not a safe
    single path component (letters, digits, '-', '_')."""
    safe_user = user_id if user_id is not None and _SAFE_PATH_USER.fullmatch(user_id) else None
    entries = []
    for entry in configured:
        if USER_PLACEHOLDER not in entry:
            entries.append(entry)
        elif safe_user is not None:
            entries.append(entry.replace(USER_PLACEHOLDER, safe_user))
    return entries


@dataclass(frozen=True)
class AllowedRoots:
    """The directories path ingestion may read, resolved, less the server's data directory.

    `excluded` (WORKING_DIR) holds every user's knowledge bases: never readable by path, even
    under an allowed directory that contains it, or one user could index another's files."""

    paths: tuple[Path, ...]
    excluded: tuple[Path, ...] = ()

    @classmethod
    def from_sources(
        cls,
        configured: Iterable[str],
        client_roots: Iterable[str],
        user_id: str | None = None,
        data_dir: str | None = None,
    ) -> AllowedRoots:
        """Existing directories among the configured (for the caller `user_id`) and the client's
        roots, resolved, deduplicated; `data_dir` excluded."""
        found: list[Path] = []
        for raw in [*configured_for_user(configured, user_id), *client_roots]:
            try:
                path = Path(raw).expanduser().resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if path.is_dir() and path not in found:
                found.append(path)
        excluded = (Path(os.path.realpath(data_dir)),) if data_dir else ()
        return cls(tuple(found), excluded)

    def is_excluded(self, real: Path) -> bool:
        return any(real == path or path in real.parents for path in self.excluded)

    def containing(self, real: Path) -> Path | None:
        """The innermost root that contains the resolved path `real`, if any (none in the data directory)."""
        if self.is_excluded(real):
            return None
        inside = [root for root in self.paths if real == root or root in real.parents]
        return max(inside, key=lambda root: len(root.parts)) if inside else None

    def _attachment(self, name: str) -> tuple[Path, Path] | None:
        """The newest `<file_id>__<name>` directly inside a root (a LibreChat attachment), if any."""
        if not name or "/" in name or os.sep in name or name in {".", ".."}:
            return None
        found: list[tuple[float, Path, Path]] = []
        for root in self.paths:
            try:
                children = list(os.scandir(root))
            except OSError:
                continue
            for child in children:
                if child.name == name or original_name(child.name) != name:
                    continue
                real = Path(os.path.realpath(child.path))
                inside = self.containing(real)  # a symlinked attachment must still resolve inside a root
                if inside is not None and real.is_file():
                    found.append((real.stat().st_mtime, real, inside))
        if not found:
            return None
        _, real, root = max(found, key=lambda entry: entry[0])
        return real, root

    def resolve(self, raw: str) -> tuple[Path, Path]:
        """(resolved path, its root) for a client's path, or FORBIDDEN / FILE_NOT_FOUND.

        A relative path is tried against each root in turn.  Whether a path outside the
        roots exists is never revealed.
        """
        if not self.paths:
            raise RagError(
                ErrorCode.FORBIDDEN,
                "Reading files from the server's disk is not enabled: no allowed directories are configured "
                "and the client offered no workspace folders (MCP roots).",
                suggested_action=(
                    "Upload the file with upload_to_lightrag instead, or ask the administrator to set "
                    "LIGHTRAG_MCP_ALLOWED_DIRS."
                ),
            )
        text = _checked_path_text(raw)
        candidate = Path(text).expanduser()
        candidates = [candidate] if candidate.is_absolute() else [root / candidate for root in self.paths]
        inside_missing = False
        for path in candidates:
            try:
                real = Path(os.path.realpath(path))
                root = self.containing(real)
                if root is None:
                    continue
                if real.exists():
                    return real, root
            except OSError:  # a name the file system refuses (too long, a loop): treated as absent
                pass
            inside_missing = True
        attachment = self._attachment(text)
        if attachment is not None:
            return attachment
        if inside_missing:
            raise RagError(
                ErrorCode.FILE_NOT_FOUND,
                f"'{short(text)}' does not exist inside the folders this server may read.",
                suggested_action="Check the path (a relative path is taken from each folder this server may read).",
            )
        raise RagError(
            ErrorCode.FORBIDDEN,
            f"'{short(text)}' is outside the folders this server may read (symlinks and '..' are resolved "
            "before the check).",
            suggested_action="Choose a path inside a folder this server may read, or upload the file instead.",
        )


def _checked_path_text(raw: str) -> str:
    """The client's path, stripped; INVALID_PARAMETER when empty, with a NUL, or longer than a path may be."""
    text = raw.strip()
    if not text or "\x00" in text:
        raise RagError(ErrorCode.INVALID_PARAMETER, "file_path is empty or contains a NUL character.")
    encoded = text.encode("utf-8", "surrogateescape")
    longest = max(len(part) for part in encoded.split(b"/"))
    if len(encoded) > MAX_PATH_BYTES or longest > MAX_NAME_BYTES:
        raise RagError(
            ErrorCode.INVALID_PARAMETER,
            f"file_path '{short(text, 60)}' is too long: a path may have at most {MAX_PATH_BYTES} bytes and each "
            f"of its names at most {MAX_NAME_BYTES}.",
            suggested_action="Send a shorter path (a relative path is taken from each folder this server may read).",
        )
    return text


def document_name(real: Path, root: Path) -> str:
    """`<root folder name>/<path inside the root>`, with '/' separators; a LibreChat attachment
    (`<file_id>__<name>` directly in a root, the user's upload folder) is its bare original name,
    as the user knows it, never under the folder that names their user id."""
    relative = real.relative_to(root).as_posix()
    prefix = root.name or "root"
    if relative == ".":
        return prefix
    folder, _, name = relative.rpartition("/")
    if not folder and _LIBRECHAT_FILE_ID.match(name):
        return original_name(name)
    name = original_name(name)
    return f"{prefix}/{folder}/{name}" if folder else f"{prefix}/{name}"


#: LibreChat names a stored attachment `<file_id>__<original name>`, file_id a UUID.
_LIBRECHAT_FILE_ID = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}__(?=.)")


def original_name(filename: str) -> str:
    """`3f2a…-…__report.pdf` → `report.pdf`; any other name unchanged."""
    return _LIBRECHAT_FILE_ID.sub("", filename, count=1)


@dataclass(frozen=True)
class FolderRules:
    """What a folder walk takes: include/exclude globs (gitignore syntax), bounds."""

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    use_gitignore: bool = True
    recursive: bool = True
    max_file_bytes: int = 10 * 1024 * 1024
    max_files: int = 2000


@dataclass
class FolderListing:
    """The files a walk found to index, and what it skipped with the reason."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path inside the folder, reason)
    truncated: bool = False


def walk_folder(folder: Path, roots: AllowedRoots, rules: FolderRules) -> FolderListing:
    """Every indexable file under `folder` (resolved, inside `roots`), in a stable order."""
    listing = FolderListing()
    # Asked-for files (include globs) may be any supported type; unasked, images are left out.
    extensions = supported_extensions(walked_only=not rules.include)
    include = pathspec.PathSpec.from_lines("gitwildmatch", rules.include) if rules.include else None
    skip = pathspec.GitIgnoreSpec.from_lines([*DEFAULT_SKIPS, *rules.exclude])
    ignores: dict[Path, pathspec.GitIgnoreSpec] = {}

    def ignored(path: Path, is_dir: bool) -> bool:
        relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
        if skip.match_file(relative):
            return True
        for base, spec in ignores.items():
            if base == path.parent or base in path.parents:
                inner = path.relative_to(base).as_posix() + ("/" if is_dir else "")
                if spec.match_file(inner):
                    return True
        return False

    for current, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(current)
        if rules.use_gitignore and ".gitignore" in filenames:
            ignores[here] = _read_gitignore(here / ".gitignore")
        kept = []
        for name in sorted(dirnames):
            path = here / name
            if path.is_symlink():
                listing.skipped.append((_inside(path, folder), "symlinked folder (not followed)"))
            elif roots.is_excluded(path):
                listing.skipped.append((_inside(path, folder), "the server's data folder (never indexed)"))
            elif not ignored(path, is_dir=True):
                kept.append(name)
        dirnames[:] = kept if rules.recursive else []
        for name in sorted(filenames):
            path = here / name
            relative = _inside(path, folder)
            if ignored(path, is_dir=False) or (include is not None and not include.match_file(relative)):
                continue
            reason = _refusal(path, roots, extensions, rules.max_file_bytes)
            if reason:
                listing.skipped.append((relative, reason))
                continue
            if len(listing.files) >= rules.max_files:
                listing.truncated = True
                return listing
            listing.files.append(Path(os.path.realpath(path)))
    return listing


def _refusal(path: Path, roots: AllowedRoots, extensions: frozenset[str], max_bytes: int) -> str | None:
    """Why a file in a walk is not indexed, or None."""
    real = Path(os.path.realpath(path))
    if path.is_symlink() and roots.containing(real) is None:
        return "symlink to a file outside the allowed directories"
    try:
        info = real.stat()
    except OSError:
        return "unreadable"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if extension_of(path.name) not in extensions:
        return "unsupported file type"
    if info.st_size == 0:
        return "empty file"
    if info.st_size > max_bytes:
        return f"larger than {format_size(max_bytes)}"
    return None


def _read_gitignore(path: Path) -> pathspec.GitIgnoreSpec:
    """A folder's `.gitignore` rules; none when it is not a readable regular file (a FIFO must not block the walk)."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            lines = handle.read(MAX_GITIGNORE_BYTES).decode("utf-8", "replace").splitlines()[:5000]
    except (RagError, OSError):
        lines = []
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _inside(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()
