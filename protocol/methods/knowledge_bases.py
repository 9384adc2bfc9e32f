"""Knowledge base methods: list the caller's knowledge bases.

A tool call names a knowledge base with its `workspace` argument, which the front resolves
into the call's context (the worker never reads it); listing runs in the caller's own
workspace, the namespace its named knowledge bases nest in."""

from __future__ import annotations

from protocol.schema import MethodSpec, array, boolean, integer, nullable, obj, string

MAX_LISTED_KNOWLEDGE_BASES = 200

LIST_KNOWLEDGE_BASES = MethodSpec(
    "workspaces/list",
    obj({}),
    obj(
        {
            "knowledge_bases": array(
                obj(
                    {
                        "name": string("What to pass as `workspace` (default: omit it).", max_length=64),
                        "default": boolean("Your default knowledge base, used when workspace is omitted."),
                        "documents": nullable(
                            integer("Documents in it; null when not known without opening it.", maximum=10**9)
                        ),
                        "name_recorded": boolean("false: the name is shown as stored, its exact spelling unknown."),
                    },
                    closed=False,
                ),
                max_items=MAX_LISTED_KNOWLEDGE_BASES + 1,
            ),
            "more": integer("Knowledge bases not listed (over the listing's bound).", maximum=10**9),
            "message": string(max_length=20_000),
        },
        closed=False,
    ),
)

# The methods this area declares (METHODS is built from them) and what it exports to `protocol.methods`.
SPECS = (LIST_KNOWLEDGE_BASES,)
__all__ = ["LIST_KNOWLEDGE_BASES", "MAX_LISTED_KNOWLEDGE_BASES"]
