"""Knowledge-graph edit methods: update, create, rename and merge entities."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, nullable, number, obj, open_object, string

MAX_NAME = 256
MAX_DESCRIPTION = 10_000
MAX_PROPERTY_VALUE = 2_000
MAX_RELATIONSHIPS = 50
MAX_MERGE = 50

ENTITY_NAME = string(max_length=MAX_NAME, min_length=1)

PROPERTIES = {
    "type": "object",
    "description": (
        'Extra facts to set on the entity, e.g. {"website": "acme.example", "founded": "1999"}: string '
        "values; null removes a property. Use description and entity_type for those two fields."
    ),
    "maxProperties": 32,
    "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,63}$"},
    "additionalProperties": nullable(string(max_length=MAX_PROPERTY_VALUE)),
}

RELATIONSHIP_TO_ADD = obj(
    {
        "target": string("Name of the other entity (it must exist).", max_length=MAX_NAME, min_length=1),
        "description": string("What links the two entities, in a sentence.", max_length=MAX_DESCRIPTION, min_length=1),
        "keywords": string("Comma-separated relationship keywords, e.g. 'founded, leads'.", max_length=500),
        "weight": number("Strength of the relationship (default 1).", maximum=1000),
    },
    required=["target", "description"],
)

UPDATE_ENTITY = MethodSpec(
    "graph/update_entity",
    obj(
        {
            "entity_id": string(
                "The entity's name as lightrag_search_entities shows it, e.g. 'Acme Corporation'.",
                max_length=MAX_NAME,
                min_length=1,
            ),
            "updates": obj(
                {
                    "description": string(
                        "New description (replaces it, or is appended with merge_mode 'append').",
                        max_length=MAX_DESCRIPTION,
                        min_length=1,
                    ),
                    "entity_type": string("New type, e.g. PERSON, ORGANIZATION, CONCEPT.", max_length=64, min_length=1),
                    "properties": PROPERTIES,
                    "add_labels": array(
                        string(max_length=64, min_length=1), "Tags to add to the entity.", max_items=20
                    ),
                    "remove_labels": array(
                        string(max_length=64, min_length=1), "Tags to remove from the entity.", max_items=20
                    ),
                    "new_name": string(
                        "Rename the entity (its relationships follow). Renaming onto an existing entity "
                        "needs update_options.allow_merge.",
                        max_length=MAX_NAME,
                        min_length=1,
                    ),
                    "add_relationships": array(
                        RELATIONSHIP_TO_ADD,
                        "Relationships to create (an existing one with the same target is updated).",
                        max_items=MAX_RELATIONSHIPS,
                    ),
                    "remove_relationships": array(
                        ENTITY_NAME,
                        "Names of entities whose relationship with this entity is removed.",
                        max_items=MAX_RELATIONSHIPS,
                    ),
                },
                "What to change; at least one field (or merge_entities).",
            ),
            "update_options": obj(
                {
                    "merge_mode": string(
                        "replace (default): new values overwrite; append: description and property values "
                        "are added after the existing text.",
                        enum=["replace", "append"],
                        default="replace",
                    ),
                    "create_if_missing": boolean(
                        "Create the entity when it does not exist (needs a description).", default=False
                    ),
                    "allow_merge": boolean(
                        "When new_name is an existing entity, merge this entity into it.", default=False
                    ),
                }
            ),
            "merge_entities": array(
                ENTITY_NAME,
                "Duplicate entities to merge INTO this one: their descriptions and relationships move here "
                "and they are removed.",
                max_items=MAX_MERGE,
            ),
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
)
