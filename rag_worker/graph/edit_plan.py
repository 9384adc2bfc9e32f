"""Validation of a `lightrag_update_entity` request against the graph as it is, before
anything is written: the entity, merge sources and relationship targets exist, a rename
does not land on an existing name unless merging is allowed, every value is storable.
The result is an `EditPlan` of resolved names that `rag_worker.graph.entity_update` applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol import ErrorCode, RagError

#: Node attributes LightRAG owns: set through dedicated fields, never as free properties.
RESERVED_ATTRIBUTES = frozenset(
    {
        "entity_id",
        "entity_name",
        "entity_type",
        "description",
        "source_id",
        "file_path",
        "created_at",
        "truncate",
        "labels",
    }
)
SEPARATOR = "<SEP>"  # LightRAG's multi-value separator: never inside a name


@dataclass
class RelationshipAdd:
    target: str
    description: str
    keywords: str | None
    weight: float | None


@dataclass
class EditPlan:
    """A validated edit: resolved names and what each step will do."""

    name: str
    exists: bool
    merge_sources: list[str] = field(default_factory=list)
    description: str | None = None
    entity_type: str | None = None
    append: bool = False
    properties: dict[str, str | None] = field(default_factory=dict)
    add_labels: list[str] = field(default_factory=list)
    remove_labels: list[str] = field(default_factory=list)
    remove_relationships: list[str] = field(default_factory=list)
    add_relationships: list[RelationshipAdd] = field(default_factory=list)
    new_name: str | None = None
    allow_merge: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def touched(self) -> set[str]:
        """Existing entities the edit may change (snapshot before applying)."""
        names = {*self.merge_sources, *self.remove_relationships, *(r.target for r in self.add_relationships)}
        if self.exists:
            names.add(self.name)
        if self.new_name is not None:
            names.add(self.new_name)
        return names


def invalid(message: str, **kw: Any) -> RagError:
    return RagError(ErrorCode.INVALID_UPDATE, message, **kw)


def check_text(value: str, where: str) -> str:
    """A value LightRAG can store in every graph backend (raises INVALID_UPDATE otherwise)."""
    from lightrag.utils import graph_attribute_value_rejection

    if graph_attribute_value_rejection(value) is not None:
        raise invalid(f"{where} contains characters that cannot be stored (control characters).")
    return value


async def resolve(graph: Any, name: str) -> str | None:
    """The stored name for `name`: as given, or in LightRAG's normalized spelling."""
    from lightrag.utils import normalize_entity_name

    if await graph.has_node(name):
        return name
    normalized: str = normalize_entity_name(name)  # lightrag ships no py.typed: Any to mypy
    if normalized and normalized != name and await graph.has_node(normalized):
        return normalized
    return None


async def _not_found(graph: Any, name: str, code: ErrorCode, what: str) -> RagError:
    try:
        similar = [label for label in await graph.search_labels(name, 5) if isinstance(label, str)]
    except Exception:
        similar = []
    hint = f" Similar names: {', '.join(similar)}." if similar else ""
    return RagError(code, f"{what} '{name}' does not exist in the knowledge graph.{hint}", details={"similar": similar})


async def plan_update(rag: Any, args: dict[str, Any]) -> EditPlan:
    """Check the whole request against the graph as it is now; raises before any change."""
    from lightrag.utils import normalize_entity_name

    graph = rag.chunk_entity_relation_graph
    updates = args.get("updates") or {}
    options = args["update_options"]
    requested = check_text(args["entity_id"].strip(), "entity_id")
    if SEPARATOR in requested:
        raise invalid(f"Entity names cannot contain {SEPARATOR}.")
    create = bool(options["create_if_missing"])
    resolved = await resolve(graph, requested)
    if resolved is None and not create:
        raise await _not_found(graph, requested, ErrorCode.ENTITY_NOT_FOUND, "Entity")
    name = resolved or normalize_entity_name(requested)
    if not name:
        raise invalid("entity_id is empty once normalized.")
    plan = EditPlan(name=name, exists=resolved is not None, append=options["merge_mode"] == "append")
    plan.allow_merge = bool(options["allow_merge"])

    wanted = [key for key, value in updates.items() if value not in (None, "", [], {})]
    if not wanted and not args.get("merge_entities") and plan.exists:
        raise invalid(
            "Nothing to change: give at least one of updates.description, entity_type, properties, "
            "add_labels, remove_labels, new_name, add_relationships, remove_relationships, or merge_entities."
        )
    await _plan_merge(graph, plan, args.get("merge_entities") or [])
    _plan_fields(plan, updates)
    if not plan.exists and not plan.merge_sources and plan.description is None:
        raise invalid("A new entity needs updates.description (what it is).")
    await _plan_rename(graph, plan, updates.get("new_name"))
    await _plan_relationships(graph, plan, updates)
    return plan


async def _plan_merge(graph: Any, plan: EditPlan, names: list[str]) -> None:
    for raw in names:
        source = await resolve(graph, check_text(raw.strip(), "merge_entities"))
        if source is None:
            raise await _not_found(graph, raw, ErrorCode.ENTITY_NOT_FOUND, "Entity to merge")
        if source == plan.name:
            raise invalid(f"'{raw}' is the entity itself; list only other entities in merge_entities.")
        if source not in plan.merge_sources:
            plan.merge_sources.append(source)


def _plan_fields(plan: EditPlan, updates: dict[str, Any]) -> None:
    if updates.get("description") is not None:
        description = check_text(updates["description"].strip(), "updates.description")
        if not description:
            raise invalid("updates.description is empty.")
        plan.description = description
    if updates.get("entity_type") is not None:
        entity_type = check_text(updates["entity_type"].strip(), "updates.entity_type")
        if not entity_type:
            raise invalid("updates.entity_type is empty.")
        plan.entity_type = entity_type
    for key, value in (updates.get("properties") or {}).items():
        if key in RESERVED_ATTRIBUTES:
            raise invalid(
                f"'{key}' is managed by the knowledge graph and cannot be set as a property; "
                "use updates.description, entity_type, new_name or the label fields."
            )
        plan.properties[key] = None if value is None else check_text(value, f"property {key}")
    plan.add_labels = [check_text(label.strip(), "add_labels") for label in updates.get("add_labels") or []]
    plan.remove_labels = [label.strip() for label in updates.get("remove_labels") or []]
    if any("," in label or not label for label in plan.add_labels):
        raise invalid("Labels must be non-empty and cannot contain commas.")
    both = set(plan.add_labels) & set(plan.remove_labels)
    if both:
        raise invalid(f"Labels both added and removed: {', '.join(sorted(both))}.")


async def _plan_rename(graph: Any, plan: EditPlan, new_name: str | None) -> None:
    from lightrag.utils import normalize_entity_name

    if not new_name:
        return
    raw = check_text(new_name.strip(), "updates.new_name")
    if SEPARATOR in raw:
        raise invalid(f"Entity names cannot contain {SEPARATOR}.")
    existing = await resolve(graph, raw)
    target = existing or normalize_entity_name(raw)
    if not target:
        raise invalid("updates.new_name is empty once normalized.")
    if target == plan.name:
        plan.warnings.append(f"The entity is already named '{target}'; no rename needed.")
        return
    if existing is not None and existing not in plan.merge_sources and not plan.allow_merge:
        raise RagError(
            ErrorCode.UPDATE_CONFLICT,
            f"An entity named '{existing}' already exists, so '{plan.name}' cannot be renamed to it.",
            suggested_action="Choose another name, or set update_options.allow_merge to merge into that entity.",
            retryable=False,
        )
    plan.new_name = target


async def _plan_relationships(graph: Any, plan: EditPlan, updates: dict[str, Any]) -> None:
    from lightrag.utils_graph import relation_evidence_count

    owners = [plan.name, *plan.merge_sources] if plan.exists else list(plan.merge_sources)
    for raw in updates.get("remove_relationships") or []:
        target = await _relationship_target(graph, plan, raw)
        if not any([await graph.has_edge(owner, target) for owner in owners]):
            raise invalid(f"There is no relationship between '{plan.name}' and '{target}' to remove.")
        if target not in plan.remove_relationships:
            plan.remove_relationships.append(target)
    seen: set[str] = set()
    for item in updates.get("add_relationships") or []:
        target = await _relationship_target(graph, plan, item["target"])
        if target in seen:
            raise invalid(f"'{target}' appears twice in add_relationships.")
        seen.add(target)
        weight = item.get("weight")
        edge = await graph.get_edge(plan.name, target) if plan.exists else None
        if edge is not None and weight is not None and target not in plan.remove_relationships:
            floor = relation_evidence_count(str(edge.get("source_id") or ""))
            if weight < floor:
                raise invalid(
                    f"The relationship with '{target}' is backed by {floor} passages; its weight must be at least {floor}."
                )
        plan.add_relationships.append(
            RelationshipAdd(
                target=target,
                description=check_text(item["description"].strip(), "relationship description"),
                keywords=check_text(item["keywords"].strip(), "relationship keywords")
                if item.get("keywords")
                else None,
                weight=None if weight is None else float(weight),
            )
        )
        if not plan.add_relationships[-1].description:
            raise invalid(f"The relationship with '{target}' needs a description.")


async def _relationship_target(graph: Any, plan: EditPlan, raw: str) -> str:
    target = await resolve(graph, raw.strip())
    if target is None:
        raise await _not_found(graph, raw, ErrorCode.RELATIONSHIP_TARGET_NOT_FOUND, "Relationship target")
    if target in (plan.name, plan.new_name):
        raise invalid(f"An entity cannot have a relationship with itself ('{target}').")
    if target in plan.merge_sources:
        raise invalid(f"'{target}' is being merged into this entity, so it cannot be a relationship target.")
    return target
