"""When a reader of a shared knowledge base loads again (rag_worker.storage.shared_readers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rag_worker.storage.shared_readers import commit_stamp, is_shared, settled


def test_the_commit_stamp_changes_with_a_committed_file_and_ignores_the_rest(tmp_path: Path) -> None:
    (tmp_path / "kv_store_full_docs.json").write_text("{}")
    (tmp_path / "vdb_chunks.json").write_text("{}")
    stamp = commit_stamp(tmp_path)
    (tmp_path / "mcp_audit.jsonl").write_text("{}\n")  # not LightRAG's committed state
    (tmp_path / ".lock").write_text("{}")
    assert commit_stamp(tmp_path) == stamp
    (tmp_path / "vdb_chunks.json").write_text('{"data": []}')
    assert commit_stamp(tmp_path) != stamp


def test_a_workspace_without_local_files_has_a_stamp_that_never_changes(tmp_path: Path) -> None:
    assert commit_stamp(tmp_path / "never-written") == () == commit_stamp(tmp_path)


def test_a_commit_is_loaded_only_once_its_files_have_settled(tmp_path: Path) -> None:
    path = tmp_path / "graph_chunk_entity_relation.graphml"
    path.write_text("<graphml/>")
    assert not settled(commit_stamp(tmp_path))
    old = time.time() - 5
    os.utime(path, (old, old))
    assert settled(commit_stamp(tmp_path))


def test_only_shared_workspaces_are_read_without_their_lock() -> None:
    assert is_shared("shared_handbook_b4128df29f37")
    assert not is_shared("u_alice_0123456789ab") and not is_shared("default")
