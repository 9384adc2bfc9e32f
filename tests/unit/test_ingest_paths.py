"""Server-side paths: the allowed roots, escapes refused, folder walks (issue 5 item 2)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from protocol import ErrorCode, RagError
from rag_worker.ingest.paths import AllowedRoots, FolderRules, document_name, walk_folder
from rag_worker.ingest.regular_files import read_file


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """data/ (allowed) beside data2/ and outside/ (not allowed)."""
    data = tmp_path / "data"
    (data / "proj" / "src").mkdir(parents=True)
    (data / "proj" / "docs").mkdir()
    (data / "proj" / "node_modules" / "lib").mkdir(parents=True)
    (data / "proj" / "src" / "app.py").write_text("def main():\n    return 1\n")
    (data / "proj" / "src" / "README.md").write_text("# Source\n")
    (data / "proj" / "docs" / "README.md").write_text("# Docs\n")
    (data / "proj" / "docs" / "draft.md").write_text("# Draft\n")
    (data / "proj" / "node_modules" / "lib" / "index.js").write_text("module.exports = 1;\n")
    (data / "proj" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (data / "proj" / "empty.txt").write_text("")
    (data / "proj" / ".gitignore").write_text("docs/draft.md\n")
    (tmp_path / "data2").mkdir()
    (tmp_path / "data2" / "secret.md").write_text("# Secret\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("# Secret\n")
    return tmp_path


def roots(tree: Path) -> AllowedRoots:
    return AllowedRoots.from_sources([str(tree / "data")], [])


def code_of(call) -> ErrorCode:  # type: ignore[no-untyped-def]
    with pytest.raises(RagError) as caught:
        call()
    return caught.value.code


def test_a_path_inside_a_root_resolves_absolute_or_relative(tree: Path) -> None:
    allowed = roots(tree)
    real, root = allowed.resolve("proj/src/app.py")
    assert real == tree / "data" / "proj" / "src" / "app.py" and root == tree / "data"
    assert allowed.resolve(str(tree / "data" / "proj"))[0] == tree / "data" / "proj"


def test_escapes_are_forbidden_and_never_reveal_what_exists_outside(tree: Path) -> None:
    allowed = roots(tree)
    (tree / "data" / "proj" / "out.md").symlink_to(tree / "outside" / "secret.md")
    for escape in [
        "../outside/secret.md",  # '..' out of the root
        "proj/../../outside/secret.md",
        str(tree / "outside" / "secret.md"),  # absolute, outside
        str(tree / "data2" / "secret.md"),  # /data2 is not inside /data (prefix trap)
        "../data2/secret.md",
        "proj/out.md",  # a symlink pointing out
        str(tree / "outside" / "missing.md"),  # missing outside: still FORBIDDEN, not FILE_NOT_FOUND
        "/etc/passwd",
    ]:
        assert code_of(lambda escape=escape: allowed.resolve(escape)) == ErrorCode.FORBIDDEN, escape


def refusal(call) -> RagError:  # type: ignore[no-untyped-def]
    with pytest.raises(RagError) as caught:
        call()
    return caught.value


def test_path_refusals_echo_the_client_path_and_never_name_the_servers_folders(tree: Path) -> None:
    allowed = roots(tree)
    for path in ["/etc/passwd", "../outside/secret.md", "proj/nope.md", "x" * 300, "a/" * 2100]:
        error = refusal(lambda path=path: allowed.resolve(path))
        text = f"{error.message} {error.suggested_action}"
        assert str(tree) not in text and "data" not in text, text
    assert "'/etc/passwd' is outside the folders this server may read" in refusal(
        lambda: allowed.resolve("/etc/passwd")
    ).message


def test_an_over_long_path_or_name_is_an_invalid_parameter_not_a_storage_error(tree: Path) -> None:
    allowed = roots(tree)
    for path in ["a/" * 2048, "x" * 4096, "proj/" + "n" * 256, str(tree / "data" / ("y" * 300))]:
        error = refusal(lambda path=path: allowed.resolve(path))
        assert error.code == ErrorCode.INVALID_PARAMETER and not error.retryable
        assert "too long" in error.message and len(error.message) < 300


def test_missing_inside_is_file_not_found_and_no_roots_is_forbidden(tree: Path) -> None:
    assert code_of(lambda: roots(tree).resolve("proj/nope.md")) == ErrorCode.FILE_NOT_FOUND
    assert code_of(lambda: AllowedRoots(()).resolve("anything.md")) == ErrorCode.FORBIDDEN
    assert code_of(lambda: roots(tree).resolve("proj/\x00.md")) == ErrorCode.INVALID_PARAMETER


def test_client_roots_count_and_missing_roots_are_ignored(tree: Path) -> None:
    allowed = AllowedRoots.from_sources([str(tree / "nope")], [str(tree / "outside")])
    assert allowed.paths == ((tree / "outside").resolve(),)
    assert allowed.resolve("secret.md")[0] == tree / "outside" / "secret.md"


def test_a_symlink_inside_the_roots_is_followed_to_its_target(tree: Path) -> None:
    (tree / "data" / "link.md").symlink_to(tree / "data" / "proj" / "docs" / "README.md")
    assert roots(tree).resolve("link.md")[0] == tree / "data" / "proj" / "docs" / "README.md"


def test_documents_are_named_by_root_folder_and_relative_path(tree: Path) -> None:
    data = tree / "data"
    assert document_name(data / "proj" / "src" / "README.md", data) == "data/proj/src/README.md"
    assert document_name(data / "proj" / "docs" / "README.md", data) != document_name(
        data / "proj" / "src" / "README.md", data
    )


def test_a_walk_skips_vendored_ignored_binary_and_empty_files(tree: Path) -> None:
    folder = tree / "data" / "proj"
    listing = walk_folder(folder, roots(tree), FolderRules())
    found = sorted(path.relative_to(folder).as_posix() for path in listing.files)
    assert found == ["docs/README.md", "src/README.md", "src/app.py"]  # node_modules, .gitignore'd draft skipped
    reasons = dict(listing.skipped)
    assert reasons["logo.png"] == "unsupported file type"
    assert reasons["empty.txt"] == "empty file"


def test_include_exclude_recursive_and_gitignore_switch(tree: Path) -> None:
    folder = tree / "data" / "proj"
    only_md = walk_folder(folder, roots(tree), FolderRules(include=["*.md"], use_gitignore=False))
    assert sorted(p.name for p in only_md.files) == ["README.md", "README.md", "draft.md"]
    no_docs = walk_folder(folder, roots(tree), FolderRules(exclude=["docs/"]))
    assert all("docs" not in p.parts for p in no_docs.files)
    top = walk_folder(folder / "src", roots(tree), FolderRules(recursive=False))
    assert sorted(p.name for p in top.files) == ["README.md", "app.py"]
    flat = walk_folder(folder, roots(tree), FolderRules(recursive=False))
    assert flat.files == []


def test_a_walk_never_follows_links_out_and_stops_at_the_file_bound(tree: Path) -> None:
    folder = tree / "data" / "proj"
    (folder / "src" / "leak.md").symlink_to(tree / "outside" / "secret.md")
    (folder / "outdir").symlink_to(tree / "outside", target_is_directory=True)
    listing = walk_folder(folder, roots(tree), FolderRules())
    assert all(tree / "outside" not in p.parents for p in listing.files)
    reasons = dict(listing.skipped)
    assert reasons["src/leak.md"] == "symlink to a file outside the allowed directories"
    assert reasons["outdir"] == "symlinked folder (not followed)"
    bounded = walk_folder(folder, roots(tree), FolderRules(max_files=2))
    assert len(bounded.files) == 2 and bounded.truncated


def test_large_files_are_skipped_in_walks_and_refused_on_read(tree: Path) -> None:
    big = tree / "data" / "proj" / "big.txt"
    big.write_text("x" * 5000)
    listing = walk_folder(tree / "data" / "proj", roots(tree), FolderRules(max_file_bytes=1000))
    assert dict(listing.skipped)["big.txt"].startswith("larger than")
    assert code_of(lambda: read_file(big, 1000)) == ErrorCode.FILE_TOO_LARGE
    assert read_file(big, 10_000) == b"x" * 5000


def test_read_refuses_a_file_swapped_for_a_symlink(tree: Path) -> None:
    target = tree / "data" / "proj" / "swap.md"
    os.symlink(tree / "outside" / "secret.md", target)
    assert code_of(lambda: read_file(target, 10_000)) == ErrorCode.FORBIDDEN


def test_read_refuses_a_fifo_at_once_instead_of_blocking(tree: Path) -> None:
    fifo = tree / "data" / "proj" / "pipe.txt"
    os.mkfifo(fifo)
    error = refusal(lambda: read_file(fifo, 10_000))  # a blocking open would wait here for a writer
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT and "named pipe (FIFO), not a regular file" in error.message


def test_read_refuses_a_device_and_a_socket(tree: Path) -> None:
    device = tree / "data" / "proj" / "zero.txt"
    os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: endless bytes
    error = refusal(lambda: read_file(device, 10_000))
    assert error.code == ErrorCode.UNSUPPORTED_FORMAT and "a device, not a regular file" in error.message
    sock_path = tree / "data" / "proj" / "s.txt"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        error = refusal(lambda: read_file(sock_path, 10_000))
        assert error.code == ErrorCode.UNSUPPORTED_FORMAT and "a socket, not a regular file" in error.message
    finally:
        server.close()


def test_a_walk_skips_fifos_devices_and_sockets(tree: Path) -> None:
    os.mkfifo(tree / "data" / "proj" / "pipe.md")
    os.mknod(tree / "data" / "proj" / "zero.md", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    listing = walk_folder(tree / "data" / "proj", roots(tree), FolderRules())
    reasons = dict(listing.skipped)
    assert reasons["pipe.md"] == reasons["zero.md"] == "not a regular file"
    assert not any(path.name in {"pipe.md", "zero.md"} for path in listing.files)


def test_a_fifo_named_gitignore_does_not_block_the_walk(tree: Path) -> None:
    os.mkfifo(tree / "data" / "proj" / "src" / ".gitignore")  # read blocking, this would wait for a writer
    listing = walk_folder(tree / "data" / "proj", roots(tree), FolderRules())
    assert tree / "data" / "proj" / "src" / "app.py" in listing.files


def test_a_symlink_to_a_device_outside_the_roots_is_forbidden(tree: Path) -> None:
    (tree / "data" / "proj" / "zero.md").symlink_to("/dev/zero")
    assert code_of(lambda: roots(tree).resolve("proj/zero.md")) == ErrorCode.FORBIDDEN


# --- LibreChat attachments: uploads/<user>/<file_id>__<original name> ----------------------
FILE_ID_A = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"
FILE_ID_B = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"


@pytest.fixture
def uploads(tmp_path: Path) -> Path:
    """A LibreChat user's upload folder with two versions of report.pdf and another file."""
    folder = tmp_path / "uploads" / "6650f1c2a9b8e7d6c5b4a392"
    folder.mkdir(parents=True)
    older = folder / f"{FILE_ID_A}__report.pdf"
    older.write_bytes(b"%PDF-1.4 older")
    newer = folder / f"{FILE_ID_B}__report.pdf"
    newer.write_bytes(b"%PDF-1.4 newer")
    os.utime(older, (1_700_000_000, 1_700_000_000))
    (folder / f"{FILE_ID_A}__notes.md").write_text("# Notes\n")
    return folder


def test_a_bare_original_name_finds_the_newest_librechat_attachment(uploads: Path) -> None:
    real, root = AllowedRoots.from_sources([str(uploads)], []).resolve("report.pdf")
    assert real.name == f"{FILE_ID_B}__report.pdf" and root == uploads.resolve()


def test_an_attachment_document_is_named_by_its_bare_original_name(uploads: Path) -> None:
    real, root = AllowedRoots.from_sources([str(uploads)], []).resolve("notes.md")
    assert document_name(real, root) == "notes.md"  # no file id, and no folder naming the user id


def test_a_file_id_lookalike_deeper_in_a_folder_keeps_its_folder(uploads: Path) -> None:
    nested = uploads / "sub" / f"{FILE_ID_A}__deep.md"
    nested.parent.mkdir()
    nested.write_text("# Deep\n")
    assert document_name(nested.resolve(), uploads.resolve()) == f"{uploads.name}/sub/deep.md"


def test_an_unknown_attachment_name_is_not_found(uploads: Path) -> None:
    with pytest.raises(RagError) as caught:
        AllowedRoots.from_sources([str(uploads)], []).resolve("missing.pdf")
    assert caught.value.code is ErrorCode.FILE_NOT_FOUND


def test_an_attachment_symlinked_out_of_the_root_is_not_served(uploads: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n")
    (uploads / f"{FILE_ID_B}__secret.md").symlink_to(secret)
    with pytest.raises(RagError) as caught:
        AllowedRoots.from_sources([str(uploads)], []).resolve("secret.md")
    assert caught.value.code is ErrorCode.FILE_NOT_FOUND


def test_the_servers_data_folder_is_never_readable_even_inside_an_allowed_one(tree: Path) -> None:
    data_dir = tree / "data" / "lightrag-data"
    (data_dir / "u_bob_123").mkdir(parents=True)
    (data_dir / "u_bob_123" / "kv_store_full_docs.json").write_text('{"secret": "Bob\'s notes"}')
    allowed = AllowedRoots.from_sources([str(tree / "data")], [], data_dir=str(data_dir))
    assert code_of(lambda: allowed.resolve(str(data_dir / "u_bob_123" / "kv_store_full_docs.json"))) == ErrorCode.FORBIDDEN
    assert code_of(lambda: allowed.resolve("lightrag-data/u_bob_123/kv_store_full_docs.json")) == ErrorCode.FORBIDDEN
    listing = walk_folder(tree / "data", allowed, FolderRules())
    assert not any("lightrag-data" in str(path) for path in listing.files)
    assert ("lightrag-data", "the server's data folder (never indexed)") in listing.skipped
