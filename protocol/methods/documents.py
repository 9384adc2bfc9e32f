"""Document-management tool methods: list and delete documents."""

from __future__ import annotations

from protocol.schema import MethodSpec, obj, open_object

# Schemas: filled by the documents work package (issue 5, items 4-5).
LIST_DOCUMENTS = MethodSpec("documents/list", obj({}), open_object())
DELETE_DOCUMENTS = MethodSpec("documents/delete", obj({}), open_object())
