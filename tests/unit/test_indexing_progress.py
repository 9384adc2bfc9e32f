"""Progress through LightRAG 1.5.7's merge stage, read from its pipeline messages
(`merge_nodes_and_edges`), and the sentence a model relays about a document still indexing."""

from __future__ import annotations

from rag_worker.operations.progress import merge_phase, still_indexing

DOC = "doc-4a7c"
FILE = "annual-report.pdf"
MERGE = [
    f"Chunk 2369 of 2369 extracted 12 Ent + 9 Rel {DOC}-chunk-2368",
    f"Merging stage 1/1: {FILE}",
    f"Phase 0: Writing recovery indexes for {DOC}: 5120 candidate entities, 7310 candidate relations",
    f"Phase 1: Processing 5120 entities from {DOC} (async: 8)",
    f"Phase 2: Processing 7310 relations from {DOC} (async: 8)",
]


def test_each_merge_phase_moves_the_estimate_on() -> None:
    seen = [merge_phase(MERGE[:end], DOC, FILE) for end in range(2, len(MERGE) + 1)]
    percents = [percent for percent, _ in seen]
    assert percents == sorted(percents) and len(set(percents)) == len(percents), seen
    assert seen[-2][1] == "merging 5,120 entities into the graph"
    assert seen[-1][1] == "merging 7,310 relations into the graph"


def test_after_its_merge_completes_the_document_is_being_saved() -> None:
    done = [*MERGE, "Completed merging: 5120 entities, 0 extra entities, 7310 relations"]
    assert merge_phase(done, DOC, FILE) == (97, "saving the graph and its vectors")


def test_another_documents_completed_merge_does_not_move_this_one() -> None:
    other = [*MERGE[:-1], "Merging stage 2/2: other.pdf", "Phase 2: Processing 4 relations from doc-other (async: 8)",
             "Completed merging: 40 entities, 0 extra entities, 4 relations"]
    assert merge_phase(other, DOC, FILE) == (86, "merging 5,120 entities into the graph")


def test_another_documents_merge_does_not_move_this_one() -> None:
    other = [*MERGE, "Merging stage 2/2: other.pdf", "Phase 1: Processing 40 entities from doc-other (async: 8)"]
    assert merge_phase(other, DOC, FILE) == merge_phase(MERGE, DOC, FILE)


def test_before_any_merge_message_the_document_is_at_the_end_of_reading() -> None:
    assert merge_phase(MERGE[:1], DOC, FILE) == (80, "merging into the graph")


def test_a_retry_while_indexing_says_it_is_being_indexed_with_its_track_id_and_state() -> None:
    document = {"filename": FILE, "status": "parsing", "track_id": "upload_1-doc-4a7c"}
    text = still_indexing(document, again=True)
    assert "still being indexed" in text and "nothing was added twice" in text
    assert "state parsing" in text and "upload_1-doc-4a7c" in text and "already indexed" not in text
