"""Knowledge-graph read methods: export, search, browse relationships."""

from __future__ import annotations

from protocol.schema import MethodSpec, obj, open_object

# Schemas: filled by the graph work package (issue 6, items 1-4).
GET_GRAPH = MethodSpec("graph/get", obj({}), open_object())
SEARCH_ENTITIES = MethodSpec("graph/search_entities", obj({}), open_object())
ENTITY_RELATIONSHIPS = MethodSpec("graph/entity_relationships", obj({}), open_object())
