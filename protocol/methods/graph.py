"""Knowledge-graph tool methods: export, search, browse relationships, edit entities."""

from __future__ import annotations

from protocol.schema import MethodSpec, obj, open_object

# Schemas: filled by the graph work packages (issue 6, items 1-5).
GET_GRAPH = MethodSpec("graph/get", obj({}), open_object())
SEARCH_ENTITIES = MethodSpec("graph/search_entities", obj({}), open_object())
ENTITY_RELATIONSHIPS = MethodSpec("graph/entity_relationships", obj({}), open_object())
UPDATE_ENTITY = MethodSpec("graph/update_entity", obj({}), open_object())
