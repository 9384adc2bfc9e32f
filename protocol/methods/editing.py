"""Knowledge-graph edit methods: update, create, rename and merge entities."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, nullable, number, obj, open_object, string

MAX_NAME = 256
MAX_DESCRIPTION = 10_000
MAX_PROPERTY_VALUE = 2_000
MAX_RELATIONSHIPS = 50
MAX_MERGE = 50

ENTITY_NAME = string(max_length=MAX_NAME, min_length=1)
LABELS = array(string(max_length=64, min_length=1), max_items=20)

PROPERTIES = {
    "type": "object",
    "description": 'e.g. {"url": "a.example"}; null removes one',
    "maxProperties": 32,
    "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"},
    "additionalProperties": nullable(string(max_length=MAX_PROPERTY_VALUE)),
}

RELATIONSHIP_TO_ADD = obj(
    {
        "target": ENTITY_NAME,
        "description": string(max_length=MAX_DESCRIPTION, min_length=1),
        "keywords": string("comma-separated", max_length=500),
        "weight": number(maximum=1000),
    },
    required=["target", "description"],
)

UPDATE_ENTITY = MethodSpec(
    "graph/update_entity",
    obj(
        {
            "entity_id": string("entity name", max_length=MAX_NAME, min_length=1),
            "updates": obj(
                {
                    "description": string(max_length=MAX_DESCRIPTION, min_length=1),
                    "entity_type": string(max_length=64, min_length=1),
                    "properties": PROPERTIES,
                    "add_labels": LABELS,
                    "remove_labels": LABELS,
                    "new_name": string(max_length=MAX_NAME, min_length=1),
                    "add_relationships": array(RELATIONSHIP_TO_ADD, max_items=MAX_RELATIONSHIPS),
                    "remove_relationships": array(ENTITY_NAME, "target names", max_items=MAX_RELATIONSHIPS),
                }
            ),
            "update_options": obj(
                {
                    "merge_mode": string(enum=["replace", "append"], default="replace"),
                    "create_if_missing": boolean(default=False),
                    "allow_merge": boolean("new_name may be an existing entity", default=False),
                }
            ),
            "merge_entities": array(ENTITY_NAME, "duplicates to merge in", max_items=MAX_MERGE),
        },
        required=["entity_id"],
    ),
    obj(
        {
            "entity_id": string(max_length=MAX_NAME),
            "created": boolean(),
            "renamed_from": nullable(string(max_length=MAX_NAME)),
            "renamed_to": nullable(string(max_length=MAX_NAME)),
            "merged": array(string(max_length=MAX_NAME), max_items=MAX_MERGE),
            "changes": open_object("Changed fields: {field: {before, after}} (long texts shortened)."),
            "relationships_added": array(open_object(), max_items=MAX_RELATIONSHIPS),
            "relationships_updated": array(open_object(), max_items=MAX_RELATIONSHIPS),
            "relationships_removed": array(string(max_length=MAX_NAME), max_items=MAX_RELATIONSHIPS),
            "changes_applied": open_object(
                "Counts: properties_updated, labels_added/removed, relationships_added/removed."
            ),
            "entity": open_object("The entity after the change: name, type, description, properties, labels, degree."),
            "warnings": array(string(max_length=1000), max_items=50),
            "processing_time_s": number(maximum=1e7),
            "message": string(max_length=4000),
        },
        closed=False,
    ),
    mutates=True,
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (UPDATE_ENTITY,)
__all__ = ["UPDATE_ENTITY"]
