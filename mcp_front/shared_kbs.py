"""Shared knowledge bases in the front (SPEC §3): who may use one, and the search by default.

Rights are decided here, before the worker hears of the call: `workspace: "handbook"` names
the configured shared knowledge base (never a private one of that name); a reading tool needs
`read`, a mutating one `write` (the catalogue knows which), else FORBIDDEN naming the rule.

A question without `workspace` also searches every shared knowledge base marked
`search_by_default` that the caller may read.  The front fans the question out, one worker call
per knowledge base, and merges the passages by relevance (`merged_query`), each source naming
its knowledge base.  Merging here, not in the worker: the rights were checked here, each
sub-call is an ordinary one-workspace call (a reader process opens the handbook read-only for
it), and the worker's query path stays one workspace wide.
When the caller asks for an answer (not only passages), every knowledge base is asked for its
passages and, once merged, the worker writes one answer from all of them in the caller's own
workspace (`m.ANSWER`, with its LLM; none configured: the merged passages are the result).

The listing's shared rows count their documents by asking the worker to list each shared
workspace (its first row: the count an open or a committed doc-status store gives).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

import anyio

from config.settings import Settings
from config.shared_kbs import Member, SharedKnowledgeBase, caller_member
from mcp_front.identity import Identity
from mcp_front.knowledge_bases import in_knowledge_base
from mcp_front.tools import Tool
from protocol import ErrorCode, MethodSpec, RagError
from protocol import methods as m
from protocol.context import DEFAULT_KNOWLEDGE_BASE

log = logging.getLogger("mcp_front.shared_kbs")

NO_RESULTS_STATUS = "no_results"
NO_RESULTS_NOTE_START = "NO_RESULTS_FOUND"  # the worker's note when the caller's own knowledge base found nothing


class Serve(Protocol):
    """Serves one call as `who` in one workspace, by the tool's worker method or `method`."""

    def __call__(
        self, who: Identity, arguments: dict[str, Any], knowledge_base: str | None, method: MethodSpec | None = None, /
    ) -> Awaitable[dict[str, Any]]: ...


def reached(settings: Settings, identity: Identity, tool: Tool, knowledge_base: str | None) -> Identity:
    """The caller acting in the knowledge base the call names: a shared one (rights checked
    first: FORBIDDEN naming the rule), else the caller's own default or named one."""
    shared = shared_target(settings, identity, tool, knowledge_base)
    if shared is not None:
        return in_shared(identity, shared)
    return in_knowledge_base(identity, knowledge_base, settings.default_workspace)


async def answer(
    settings: Settings,
    tool: Tool,
    identity: Identity,
    knowledge_base: str | None,
    arguments: dict[str, Any],
    serve: Serve,
) -> dict[str, Any]:
    """Serve a call in the knowledge base it names (`reached`); a question without `workspace`
    also searches the shared ones by default, and the listing shows the shared ones."""
    own = reached(settings, identity, tool, knowledge_base)
    shared = settings.shared_kbs.lookup(knowledge_base) if knowledge_base else None
    if shared is not None:
        return await serve(own, arguments, shared.name)
    # bypass retrieves nothing (the LLM alone answers): nothing to search in a shared knowledge base
    also = [] if arguments.get("mode") == "bypass" else searched_too(settings, identity, tool, knowledge_base)
    if not also:
        result = await serve(own, arguments, knowledge_base)
        if tool.method is m.LIST_KNOWLEDGE_BASES:
            result = with_shared_rows(result, await counted(shared_rows(settings, identity), identity, settings, serve))
        return result
    written = wants_answer(arguments, tool)
    merged = await searched(identity, own, also, tool, arguments, serve, passages_only=written)
    if written and merged["status"] != NO_RESULTS_STATUS:
        merged = answered(merged, await serve(own, answer_arguments(arguments, tool, merged), None, m.ANSWER))
    return merged


async def searched(
    identity: Identity,
    own: Identity,
    also: list[SharedKnowledgeBase],
    tool: Tool,
    arguments: dict[str, Any],
    serve: Serve,
    *,
    passages_only: bool,
) -> dict[str, Any]:
    """The question asked of the caller's own knowledge base and of `also` at once, merged.

    The shared ones are asked for passages only (one answer is written); with `passages_only`
    the caller's own too, by the plain query method (nothing streamed per knowledge base)."""
    found: dict[str, dict[str, Any]] = {}
    failed: list[RagError] = []
    method = m.QUERY if passages_only else None

    async def search_own() -> None:
        try:  # raised after the group: the caller gets the error itself, not an exception group
            found[""] = await serve(own, shared_arguments(arguments, tool) if passages_only else arguments, None, method)
        except RagError as exc:
            failed.append(exc)

    async def search_shared(kb: SharedKnowledgeBase) -> None:
        try:  # a shared knowledge base that fails leaves the caller's own answer whole
            found[kb.name] = await serve(in_shared(identity, kb), shared_arguments(arguments, tool), kb.name, method)
        except RagError as exc:
            log.warning("searching shared knowledge base %s failed: %s", kb.name, exc.code.value)

    async with anyio.create_task_group() as tg:
        tg.start_soon(search_own)
        for kb in also:
            tg.start_soon(search_shared, kb)
    if failed:
        raise failed[0]
    return merged_query(found.pop(""), [(kb.name, found[kb.name]) for kb in also if kb.name in found])


def member(identity: Identity) -> Member:
    return caller_member(identity.user_id, identity.roles, identity.email)


def right_needed(tool: Tool) -> str:
    return "read" if tool.read_only else "write"


def shared_target(settings: Settings, identity: Identity, tool: Tool, knowledge_base: str | None) -> SharedKnowledgeBase | None:
    """The shared knowledge base a call names, once the caller's right to it is checked; None
    when the call names none (its own knowledge bases then).  FORBIDDEN naming the rule."""
    kb = settings.shared_kbs.lookup(knowledge_base) if knowledge_base else None
    if kb is None:
        return None
    right = right_needed(tool)
    if not kb.may(right, member(identity)):
        raise RagError(
            ErrorCode.FORBIDDEN,
            f"{kb.rule(right)}.",
            suggested_action=(
                f"Do not retry; ask the administrator for {right} access, or omit workspace to use your own knowledge base."
            ),
        )
    return kb


def in_shared(identity: Identity, kb: SharedKnowledgeBase) -> Identity:
    """The caller, acting in the shared knowledge base's workspace (audited as themselves)."""
    return dataclasses.replace(identity, workspace=kb.workspace)


def searched_too(settings: Settings, identity: Identity, tool: Tool, knowledge_base: str | None) -> list[SharedKnowledgeBase]:
    """The shared knowledge bases a question without `workspace` also searches."""
    if knowledge_base is not None or not tool.searches_shared:
        return []
    return settings.shared_kbs.searched_by_default(member(identity))


def shared_arguments(arguments: Mapping[str, Any], tool: Tool) -> dict[str, Any]:
    """A fanned-out question's arguments: passages only, when the tool can say so (one answer is written)."""
    shared = dict(arguments)
    if "only_context" in tool.method.params_schema.get("properties", {}):
        shared["only_context"] = True
    return shared


def wants_answer(arguments: Mapping[str, Any], tool: Tool) -> bool:
    """Does the call ask for a written answer the merged passages can feed (not only passages)?"""
    return "only_context" in tool.method.params_schema.get("properties", {}) and not arguments.get("only_context")


def answer_arguments(arguments: Mapping[str, Any], tool: Tool, merged: Mapping[str, Any]) -> dict[str, Any]:
    """`m.ANSWER`'s arguments: the question as asked and the merged passages and graph items."""
    wanted = m.ANSWER.params_schema["properties"]
    asked = {name: arguments[name] for name in wanted if name in arguments}
    sent = {key: [{name: item.get(name) for name in wanted[key]["items"]["properties"]} for item in merged[key]]
            for key in ("sources", "entities", "relationships")}  # fmt: skip
    return {**asked, **sent, "stream": tool.method is m.STREAM_QUERY}


def answered(merged: dict[str, Any], written: Mapping[str, Any]) -> dict[str, Any]:
    """The merged result with the worker's answer (none: the passages stand, with its notes)."""
    notes = [*(merged.get("notes") or []), *(written.get("notes") or [])]
    if written.get("answer") is None:
        return {**merged, "notes": notes}
    return {**merged, "status": "answered", "answer": written["answer"], "notes": notes}


def merged_query(own: dict[str, Any], shared: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The caller's own result with the shared knowledge bases' passages merged in by relevance.

    As many passages as the largest single result holds (the same budget as one knowledge
    base), each tagged with its knowledge base; entities and relations are appended."""
    results = [(DEFAULT_KNOWLEDGE_BASE, own), *shared]
    sources = [
        {**source, "knowledge_base": name} for name, result in results for source in result.get("sources") or []
    ]
    budget = max(len(result.get("sources") or []) for _, result in results)
    sources.sort(key=lambda source: -1.0 if source.get("relevance_score") is None else float(source["relevance_score"]), reverse=True)
    merged = dict(own)
    merged["sources"] = sources[:budget]
    for key in ("entities", "relationships"):
        merged[key] = [item for _, result in results for item in result.get(key) or []][: max(len(own.get(key) or []), 60)]
    if own.get("status") == NO_RESULTS_STATUS and (merged["sources"] or merged["entities"]):
        merged["status"] = "context_only"
        merged["notes"] = [note for note in own.get("notes") or [] if not note.startswith(NO_RESULTS_NOTE_START)]
    metadata = dict(own.get("metadata") or {})
    metadata["chunks_used"] = len(merged["sources"])
    metadata["knowledge_bases"] = [name for name, _ in results]
    merged["metadata"] = metadata
    return merged


def shared_rows(settings: Settings, identity: Identity) -> list[dict[str, Any]]:
    """`lightrag_list_knowledge_bases` rows for the shared knowledge bases the caller may read."""
    caller = member(identity)
    rows = []
    for kb in settings.shared_kbs.readable(caller):
        rights = ["read", "write"] if kb.may("write", caller) else ["read"]
        rows.append(
            {
                "name": kb.name,
                "default": False,
                "documents": None,
                "shared": True,
                "rights": rights,
                "search_by_default": kb.search_by_default,
            }
        )
    return rows


async def counted(rows: list[dict[str, Any]], identity: Identity, settings: Settings, serve: Serve) -> list[dict[str, Any]]:
    """The shared rows with their document counts: the worker lists each shared workspace (its own
    row counts from the open store or the committed doc-status file); unknown (None) if that fails."""

    async def count(row: dict[str, Any]) -> None:
        kb = settings.shared_kbs.lookup(row["name"])
        try:
            listed = await serve(in_shared(identity, kb), {}, kb.name) if kb is not None else {}
            row["documents"] = (listed.get("knowledge_bases") or [{}])[0].get("documents")
        except RagError as exc:
            log.warning("counting shared knowledge base %s failed: %s", row["name"], exc.code.value)

    async with anyio.create_task_group() as tg:
        for row in rows:
            tg.start_soon(count, row)
    return rows


def with_shared_rows(result: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The listing with the shared knowledge bases after the caller's own."""
    if not rows:
        return result
    lines = [str(result.get("message") or "")]
    for row in rows:
        searched = ", searched by every question without workspace" if row["search_by_default"] else ""
        documents = "" if row["documents"] is None else f"{row['documents']} document{'s' if row['documents'] != 1 else ''}, "
        lines.append(f"- {row['name']}: {documents}shared, you may {' and '.join(row['rights'])}{searched}")
    return {**result, "knowledge_bases": [*result.get("knowledge_bases", []), *rows], "message": "\n".join(lines)}
