"""Result text is written for a model's context window: each fact once, passages with their
source on the same line, lists as compact lines (SPEC §4)."""

from __future__ import annotations

import re
from typing import Any

from mcp_front.render import MAX_LIST_LINE, render_documents, render_json, render_query

PLANTED = "The VELVET-3390 turbine was designed by Marta Okafor in Porto."
DOC = "doc-7998de96edd1b669133b611e87985871"


def query_result(**overrides: Any) -> dict[str, Any]:
    result = {
        "query": "Who designed the VELVET-3390 turbine?",
        "mode": "mix",
        "status": "context_only",
        "answer": None,
        "sources": [
            {
                "document_id": DOC,
                "filename": "turbines.md",
                "chunk_id": f"{DOC}-chunk-000",
                "content": f"# Turbine programme\n\nThe programme reviews turbines across three sites. {PLANTED}",
                "relevance_score": 0.78,
                "positions": {"chunk_index": 0},
                "metadata": {},
            },
            {
                "document_id": DOC,
                "filename": "turbines.md",
                "chunk_id": f"{DOC}-chunk-001",
                "content": f"{PLANTED} Marta Okafor chose carbon blades because they resist salt corrosion.",
                "relevance_score": 0.61,
                "positions": {"chunk_index": 1},
                "metadata": {},
            },
        ],
        "entities": [
            {"name": "VELVET-3390", "type": "other", "description": PLANTED},
            {"name": "Marta Okafor", "type": "person", "description": f"{PLANTED}<SEP>An engineer from Porto."},
        ],
        "relationships": [
            {"source": "Marta Okafor", "target": "Porto", "keywords": "designed", "description": PLANTED},
            {"source": "Turbine programme", "target": "Marta Okafor", "description": f'Section "Turbine programme": {PLANTED}'},
        ],
        "metadata": {"chunks_used": 2, "entities_used": 2, "relations_used": 2, "processing_time_s": 0.02},
        "notes": [],
    }
    return {**result, **overrides}


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if len(s) >= 20]


def test_a_query_result_text_repeats_no_sentence() -> None:
    text = render_query(query_result())
    assert text.count(PLANTED) == 1
    found = [s for line in text.splitlines() for s in sentences(line)]
    assert len(found) == len(set(found))


def test_each_passage_is_on_one_line_with_its_source() -> None:
    lines = render_query(query_result()).splitlines()
    assert lines[0] == (
        f"[1] turbines.md ({DOC}, chunk 0, 0.78): # Turbine programme The programme reviews turbines across "
        f"three sites. {PLANTED}"
    )
    assert lines[1].startswith(f"[2] turbines.md ({DOC}, chunk 1, 0.61): … Marta Okafor chose carbon blades")


def test_entities_keep_only_what_the_passages_did_not_say() -> None:
    lines = render_query(query_result()).splitlines()
    assert lines[2:6] == [
        "Entities: VELVET-3390 (other)",
        "- Marta Okafor (person): … An engineer from Porto.",
        "Relations: Marta Okafor → Porto (designed); Turbine programme → Marta Okafor",
        "(mix · retrieved context · 2 passages, 2 entities, 2 relations · 0.02 s)",
    ]


def test_query_metadata_is_one_short_line_without_an_llm_note() -> None:
    last = render_query(query_result()).splitlines()[-1]
    assert last == "(mix · retrieved context · 2 passages, 2 entities, 2 relations · 0.02 s)"
    assert "LLM" not in render_query(query_result())


def test_an_answer_lists_sources_without_repeating_the_passages() -> None:
    text = render_query(query_result(answer="Marta Okafor designed it.", status="answered"))
    assert text.splitlines()[0] == "Marta Okafor designed it."
    assert f"Sources: [1] turbines.md ({DOC}, chunk 0, 0.78); [2] turbines.md ({DOC}, chunk 1, 0.61)" in text
    assert "carbon blades" not in text


def test_passages_without_sources_still_show() -> None:
    result = query_result(sources=[{"content": PLANTED, "relevance_score": 0.9}])
    assert render_query(result).splitlines()[0] == f"[1] (0.90): {PLANTED}"


def document(index: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"doc-{index:032x}",
        "title": "Quarterly engineering report.pdf",
        "filename": "Quarterly engineering report.pdf",
        "status": "processed",
        "created_at": "2025-11-20T08:00:00+00:00",
        "updated_at": "2025-11-20T08:01:00+00:00",
        "file_type": "pdf",
        "mime_type": "application/pdf",
        "file_size": 120_000,
        "pages": 12,
        "words": 3400,
        "chunk_count": 14,
        "entity_count": 31,
        "relationship_count": 40,
        "error_message": None,
        "metadata": {},
        "track_id": "upload_20251120_080000_abcd",
        "content_hash": "1d382bed494aceb5303b5f3b056b38e9",
        **extra,
    }


def listing(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "documents": docs,
        "pagination": {"total_documents": 120, "offset": 0, "limit": 50, "has_next": True},
        "statistics": {"total_documents": 120, "by_status": {"processed": 120}, "by_file_type": {"pdf": 120}},
        "filters": {"sort_by": "created_date", "sort_order": "desc"},
        "message": "Showing 1-50 of 120 document(s). The knowledge base holds 120 document(s): 120 processed. "
        "Next page: offset 50.",
    }


def test_a_document_is_one_line_of_at_most_150_characters() -> None:
    text = render_documents(listing([document(1)]))
    line = text.splitlines()[1]
    assert line == (
        f"doc-{1:032x} Quarterly engineering report.pdf processed · 12 p · 3,400 words · 14 chunks · "
        "31 entities · 2025-11-20"
    )


def test_the_listing_stays_within_150_characters_a_document() -> None:
    docs = [
        document(i, metadata={"tags": ["finance", "q3"] * 20}, error_message="x" * 500 if i % 2 else None)
        for i in range(50)
    ]
    lines = render_documents(listing(docs)).splitlines()
    assert len(lines) == 51  # the header once, then one line per document
    assert all(len(line) <= MAX_LIST_LINE for line in lines[1:])
    assert "error: x" in lines[2] and "error" not in lines[1]  # errors only when present


def test_generic_results_are_compact_lines_and_new_fields_still_show() -> None:
    text = render_json(
        {
            "message": "Knowledge base: 3 processed.",
            "counts": {"pending": 0, "processed": 3, "failed": 0},
            "pipeline": {"busy": False, "job_name": "glossary.md"},
            "documents": [{"id": "doc-1", "status": "processed", "error": None}],
            "brand_new_field": {"ocr_pages": [2, 3]},
        }
    )
    assert text.splitlines() == [
        "Knowledge base: 3 processed.",
        "counts: processed=3",
        "pipeline: busy=no, job_name=glossary.md",
        "documents (1):",
        "- id=doc-1, status=processed",
        "brand_new_field: ocr_pages=[2, 3]",
    ]
