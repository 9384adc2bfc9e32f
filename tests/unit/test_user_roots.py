"""Per-user allowed directories: `{user}` in LIGHTRAG_MCP_ALLOWED_DIRS is the caller's own folder."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from protocol import ErrorCode, RagError
from rag_worker.ingest.paths import AllowedRoots, configured_for_user
from rag_worker.operations.jobs import Job, JobItem

ALICE = "6650f1c2a9b8e7d6c5b4a392"  # LibreChat user ids are hex ObjectIds
BOB = "6650f1c2a9b8e7d6c5b4a393"
FILE_ID = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"


@pytest.fixture
def uploads(tmp_path: Path) -> Path:
    """LibreChat's uploads folder: one attachment for each of two users."""
    root = tmp_path / "uploads"
    for user, text in ((ALICE, "Alice's plan"), (BOB, "Bob's salary")):
        (root / user).mkdir(parents=True)
        (root / user / f"{FILE_ID}__{user[-3:]}-notes.md").write_text(f"# Notes\n\n{text}\n")
    return root


def code_of(call: object) -> ErrorCode:
    with pytest.raises(RagError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code


def test_user_placeholder_becomes_the_callers_id() -> None:
    assert configured_for_user(["/app/uploads/{user}", "/srv/shared"], ALICE) == [f"/app/uploads/{ALICE}", "/srv/shared"]


def test_a_call_without_a_user_gets_no_user_folder() -> None:
    assert configured_for_user(["/app/uploads/{user}", "/srv/shared"], None) == ["/srv/shared"]


@pytest.mark.parametrize("user", ["", "..", ".", "a/b", "a\\b", "../bob", "ann b", "ann.b", "{{LIBRECHAT_USER_ID}}", "é", "x" * 129])
def test_a_user_id_that_is_not_one_safe_path_component_gets_no_user_folder(user: str) -> None:
    assert configured_for_user(["/app/uploads/{user}"], user) == []


def test_entries_without_the_placeholder_are_kept_for_everyone() -> None:
    assert configured_for_user(["/a", "/b"], None) == ["/a", "/b"]
    assert configured_for_user(["/a", "/b"], "x") == ["/a", "/b"]


def test_a_user_reads_their_own_attachment_by_path_and_by_name(uploads: Path) -> None:
    roots = AllowedRoots.from_sources([str(uploads / "{user}")], [], ALICE)
    assert roots.paths == ((uploads / ALICE).resolve(),)
    own = uploads / ALICE / f"{FILE_ID}__392-notes.md"
    assert roots.resolve(str(own))[0] == own.resolve()
    assert roots.resolve("392-notes.md")[0] == own.resolve()


def test_a_user_cannot_read_another_users_attachment(uploads: Path) -> None:
    roots = AllowedRoots.from_sources([str(uploads / "{user}")], [], ALICE)
    bobs = uploads / BOB / f"{FILE_ID}__393-notes.md"
    assert code_of(lambda: roots.resolve(str(bobs))) is ErrorCode.FORBIDDEN
    assert code_of(lambda: roots.resolve(f"../{BOB}/{bobs.name}")) is ErrorCode.FORBIDDEN
    assert code_of(lambda: roots.resolve("393-notes.md")) is ErrorCode.FILE_NOT_FOUND  # not in her folder


def test_without_a_user_the_uploads_are_not_readable(uploads: Path) -> None:
    roots = AllowedRoots.from_sources([str(uploads / "{user}")], [], None)
    assert roots.paths == ()
    failure = code_of(lambda: roots.resolve(str(uploads / ALICE / f"{FILE_ID}__392-notes.md")))
    assert failure is ErrorCode.FORBIDDEN


def test_a_user_whose_folder_does_not_exist_yet_gets_no_root(uploads: Path) -> None:
    assert AllowedRoots.from_sources([str(uploads / "{user}")], [], "newcomer").paths == ()


def test_a_job_remembers_its_user_across_a_restart() -> None:
    job = Job.new("batch", "ws", {}, [], [JobItem(0, "file", "a.md")], ALICE)
    assert Job.from_json(job.to_json()).user_id == ALICE
    older = orjson.loads(job.to_json())
    del older["user_id"]  # a job file written before jobs recorded their user
    assert Job.from_json(orjson.dumps(older)).user_id is None
