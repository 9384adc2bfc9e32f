"""Knowledge-graph edit methods: update, create, rename and merge entities."""

from __future__ import annotations

from protocol.schema import MethodSpec, obj, open_object

# Schema: filled by the editing work package (issue 6, item 5).
UPDATE_ENTITY = MethodSpec("graph/update_entity", obj({}), open_object())
