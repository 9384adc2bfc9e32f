"""The decisions of lightrag_delete_documents that need no LightRAG: when a document may be
deleted, what cascade_delete=false refuses, and the bounds of the arguments."""

from __future__ import annotations

import jsonschema
import pytest

from protocol import ErrorCode
from protocol.methods.documents import DELETE_DOCUMENTS
from rag_worker.operations.deletion import Contribution, DeleteOptions, Failure, readiness, restrict_failure


@pytest.mark.parametrize(
    ("state", "busy", "force", "expected"),
    [
        ("processed", False, False, "ready"),
        ("failed", False, False, "ready"),
        ("processed", True, False, "indexing"),  # LightRAG refuses every delete while its pipeline runs
        ("processed", True, True, "indexing"),  # force never interrupts a running indexing job
        ("pending", False, False, "unfinished"),
        ("processing", False, False, "unfinished"),
        ("pending", False, True, "ready"),  # stuck with nothing indexing: force removes it
        ("processing", True, True, "indexing"),
    ],
)
def test_when_a_document_may_be_deleted(state: str, busy: bool, force: bool, expected: str) -> None:
    assert readiness(state, busy, force) == expected


def test_options_default_to_cascade_without_backup_or_force() -> None:
    def options(sent: dict | None) -> DeleteOptions:  # as the worker gets them: defaults filled in
        arguments = {"document_ids": ["doc-1"]} | ({} if sent is None else {"delete_options": sent})
        return DeleteOptions.from_args(DELETE_DOCUMENTS.with_defaults(arguments)["delete_options"])

    assert options(None) == DeleteOptions(cascade=True, backup=False, force=False)
    assert options({"cascade_delete": False, "force_delete": True}) == DeleteOptions(False, False, True)


def contribution(only_entities: list[str], only_relations: list[tuple[str, str]]) -> Contribution:
    return Contribution(
        "doc-1", "notes.md", {"file_path": "notes.md"}, {}, only_entities=only_entities, only_relations=only_relations
    )


def test_without_cascade_a_document_that_alone_supports_graph_items_is_refused() -> None:
    failure = restrict_failure(contribution(["QUASAR-5521"], [("Lisbon", "QUASAR-5521")]))
    assert failure is not None and failure.code == ErrorCode.DELETION_FORBIDDEN
    assert "QUASAR-5521" in failure.message and "cascade_delete=true" in failure.as_dict()["suggested_action"]
    assert failure.document_id == "notes.md" and not failure.retryable  # reported under the id the caller sent


def test_without_cascade_a_document_whose_graph_items_are_all_shared_may_go() -> None:
    assert restrict_failure(contribution([], [])) is None


def test_a_failure_carries_its_codes_default_advice() -> None:
    failure = Failure("doc-x", ErrorCode.DOCUMENT_NOT_FOUND, "No such document.")
    assert failure.as_dict() == {
        "document_id": "doc-x",
        "error_code": "DOCUMENT_NOT_FOUND",
        "error_message": "No such document.",
        "retryable": False,
        "suggested_action": ErrorCode.DOCUMENT_NOT_FOUND.info.suggested_action,
    }


@pytest.mark.parametrize(
    "arguments",
    [
        {"document_ids": []},  # at least one id
        {"document_ids": [f"doc-{i}" for i in range(101)]},  # at most 100
        {"document_ids": ["x" * 256]},  # each id bounded
        {"document_ids": [""]},
        {"document_ids": ["doc-1"], "delete_options": {"soft_delete": True}},  # closed options
    ],
)
def test_arguments_outside_the_bounds_are_rejected_by_the_schema(arguments: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, DELETE_DOCUMENTS.params_schema)
