"""How far a document in LightRAG's pipeline has come, in words a model can relay.

Two stages after chunking: reading passages for entities (the first 80 % of the estimate; a
passage counts once LightRAG recorded its extraction in the chunk's cache list), then merging
into the graph. LightRAG 1.5.7 reports the merge only in its workspace pipeline status
(`merge_nodes_and_edges`: "Merging stage k/n: <file>", "Phase 0: Writing recovery indexes for
<doc id>", "Phase 1: Processing N entities from <doc id>", "Phase 2: Processing M relations from
<doc id>", then "Completed merging: …" naming no document, after which it saves every storage
(`_insert_done`) before it marks the document processed — on large knowledge bases the longest
step), so the merge's place is read from the newest of those lines naming this document.
"""

from __future__ import annotations

from typing import Any

from rag_worker.storage.workspace import Workspace

READING_SHARE = 80  # percent of the estimate for reading passages; the merge is the rest
HISTORY_SCAN = 400  # newest pipeline messages searched for this document's merge phase
# (LightRAG's message prefix, percent reached, stage as the model reads it: {n} is the count in the message)
SAVING = (97, "saving the graph and its vectors")
MERGE_PHASES = (
    ("Phase 2:", 92, "merging {n} relations into the graph"),
    ("Phase 1:", 86, "merging {n} entities into the graph"),
    ("Phase 0:", 83, "writing the graph's recovery indexes"),
    ("Merging stage", 81, "starting the merge into the graph"),
)


async def indexing_progress(ws: Workspace, doc_id: str, row: dict[str, Any]) -> dict[str, Any] | None:
    """`{chunks_done, chunks_total, percent, stage}` for a document in the pipeline; None before chunking."""
    chunk_ids = [str(c) for c in row.get("chunks_list") or []]
    if not chunk_ids:
        return None
    chunks = await ws.rag.text_chunks.get_by_ids(chunk_ids)
    read = sum(1 for chunk in chunks if isinstance(chunk, dict) and chunk.get("llm_cache_list"))
    progress = {"chunks_done": read, "chunks_total": len(chunk_ids),
                "percent": round(READING_SHARE * read / len(chunk_ids)), "stage": "reading passages"}
    if read == len(chunk_ids):
        percent, stage = merge_phase(await _pipeline_history(ws), doc_id, str(row.get("file_path") or ""))
        progress |= {"percent": percent, "stage": stage}
    return progress


def merge_phase(history: list[str], doc_id: str, file_path: str) -> tuple[int, str]:
    """(percent, stage) of this document's merge from the pipeline's messages, newest first
    (`file_path` as LightRAG stores it)."""
    named = (doc_id, f": {file_path}") if file_path else (doc_id,)  # "Merging stage k/n" names the file
    completed = False  # a "Completed merging" newer than any other document's merge message
    for message in reversed(history[-HISTORY_SCAN:]):
        if message.startswith("Completed merging"):
            completed = True
            continue
        phase = next((phase for phase in MERGE_PHASES if message.startswith(phase[0])), None)
        if phase is None:
            continue
        if not any(part in message for part in named):
            completed = False  # that completion was another document's
            continue
        if completed and phase[0] == MERGE_PHASES[0][0]:
            return SAVING
        return phase[1], phase[2].format(n=_count_in(message))
    return READING_SHARE, "merging into the graph"


def _count_in(message: str) -> str:
    """The first number of a phase message ("Phase 1: Processing 5120 entities …" → "5,120")."""
    for word in message.split():
        if word.isdigit():
            return f"{int(word):,}"
    return "the"


async def _pipeline_history(ws: Workspace) -> list[str]:
    from lightrag.kg.shared_storage import get_namespace_data

    try:
        status = await get_namespace_data("pipeline_status", workspace=ws.name)
    except Exception:  # never initialised: nothing has run
        return []
    history = status.get("history_messages") or []
    return [str(message) for message in list(history)[-HISTORY_SCAN:]]


def still_indexing(document: dict[str, Any], *, again: bool = False) -> str:
    """What a model can relay about a document still in the pipeline, with its state and the
    track id to ask again; `again`: this call sent the same file while it is being indexed."""
    progress = document.get("progress")
    if progress:
        where = (f"indexing, ~{progress['percent']}% done ({progress['chunks_done']} of {progress['chunks_total']} "
                 f"passages read{'; now ' + progress['stage'] if progress['stage'] != 'reading passages' else ''})")
    else:
        where = "queued for indexing" if document["status"] == "pending" else "being prepared for indexing"
    lead = "was uploaded before and is still being indexed, so nothing was added twice: it is" if again else "is"
    return (
        f"'{document['filename']}' {lead} {where} (state {document['status']}); it goes on in the background. "
        f"Ask again in a minute: lightrag_get_status with track_id {document['track_id']}."
    )
