"""Per-user isolation as a property (issue 8, item 3).

One server, three users (the `userId` call param, as patched LibreChat sends it, or
`_meta["lightrag/userId"]`). A seeded random interleaving of rounds; in each round up to
three different users act at the same time: upload a Markdown file, insert text, run a
batch of texts, query (naive, local, the simple form), list documents, get the status of
documents, delete one of their own documents, search entities (fuzzy, semantic, exact),
get the graph as JSON, walk an entity's relationships, create/edit an entity, read the
audit log and the other usage statistics. Every document and entity carries user-unique tokens (a marker
such as MARKER-alice-17, an entity name such as Zorblax17Alice, a filename, the document
id the server gave it), and each user has a workspace name.

After EVERY call the whole answer (structuredContent and text) is scanned for any other
user's tokens: a hit is a cross-user leak. Queries and searches use words every user's
documents share ("Zorblax", "archive code"), so they would find the others' documents if
the workspaces were not separate. A user who names another user's document id
(status/delete) or entity gets DOCUMENT_NOT_FOUND / ENTITY_NOT_FOUND, and the owner still
has it afterwards.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from mcp_front.identity import META_USER_KEY, workspace_for
from tests.integration.harness import Client, running_server
from tests.reliability import recorder

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.reliability]

USERS = ("alice", "bob", "carol")
ROUNDS = 600 if recorder.LONG else 150
SEEDS = (8, 2024, 77) if recorder.LONG else (8,)
STAT_CATEGORIES = ("queries", "documents", "performance", "memory", "storage", "restarts", "audit")
GENERIC_QUERIES = [
    "Which archive code does Zorblax keep?",
    "Who maintains the Quorin archive?",
    "archive code MARKER",
]


@dataclass
class Document:
    owner: str
    document_id: str
    tokens: set[str]
    deleted: bool = False


@dataclass
class World:
    """What each user owns, and every token that ever belonged to them (deleted ones too)."""

    rng: random.Random
    tokens: dict[str, set[str]] = field(
        default_factory=lambda: {user: {workspace_for(user, "default")} for user in USERS}
    )
    documents: dict[str, Document] = field(default_factory=dict)
    entities: dict[str, list[str]] = field(default_factory=lambda: {user: [] for user in USERS})
    counter: int = 0
    calls: int = 0
    own_hits: int = 0  # answers that showed the caller their own tokens: the scan looks where data is
    leaks: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # probes answered as they should
    wrong: list[str] = field(default_factory=list)  # calls that should have worked, or probes answered wrongly
    to_verify: list[Document] = field(default_factory=list)  # probed documents: the owner must still have them
    # Other users' tokens a user named in their own calls (probes): their own audit log and
    # statistics may quote them back, which is no leak.
    sent: dict[str, set[str]] = field(default_factory=lambda: {user: set() for user in USERS})

    def new_tokens(self, user: str) -> dict[str, str]:
        self.counter += 1
        n, title = self.counter, user.capitalize()
        tokens = {
            "marker": f"MARKER-{user}-{n}",
            "entity": f"Zorblax{n}{title}",
            "filename": f"{user}-ledger-{n}.md",
            "title": f"{user}-note-{n}",
        }
        self.tokens[user].update(tokens.values())
        self.entities[user].append(tokens["entity"])
        return tokens

    def live(self, user: str) -> list[Document]:
        return [doc for doc in self.documents.values() if doc.owner == user and not doc.deleted]

    def others_live(self, user: str) -> list[Document]:
        return [doc for doc in self.documents.values() if doc.owner != user and not doc.deleted]

    def add_document(self, user: str, document_id: str, tokens: set[str]) -> None:
        self.tokens[user].add(document_id)
        self.documents[document_id] = Document(user, document_id, tokens | {document_id})


def document_text(tokens: dict[str, str]) -> str:
    entity, marker = tokens["entity"], tokens["marker"]
    return (
        f"# Ledger {tokens['title']}\n\n{entity} maintains the Quorin archive in Velmora. "
        f"The archive code of {entity} is {marker}.\n\nEvery Zorblax ledger names its keeper and its archive code.\n"
    )


def blob_of(result: types.CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    return (json.dumps(result.structured_content, ensure_ascii=False) + "\n" + "\n".join(texts)).lower()


def scan(
    world: World, caller: str, tool: str, result: types.CallToolResult, allowed: frozenset[str] = frozenset()
) -> None:
    """Record every other user's token found anywhere in the answer (`allowed`: what the caller sent)."""
    blob = blob_of(result)
    for owner, tokens in world.tokens.items():
        if owner == caller:
            world.own_hits += any(token.lower() in blob for token in tokens)
            continue
        for token in tokens - allowed:
            if token.lower() in blob:
                world.leaks.append(f"{caller} {tool}: saw {owner}'s {token}")


async def call(
    world: World, client: Client, user: str, tool: str, arguments: dict[str, Any], allowed: frozenset[str] = frozenset()
) -> types.CallToolResult:
    world.sent[user] |= allowed
    with anyio.fail_after(300):
        if world.rng.random() < 0.3:  # identity from `_meta` (SPEC §3, second source) instead of the param
            result = await client.call(tool, arguments, meta={META_USER_KEY: user})
        else:
            result = await client.call_as(user, tool, arguments)
    world.calls += 1
    scan(world, user, tool, result, frozenset(world.sent[user]))
    return result


def data(result: types.CallToolResult) -> dict[str, Any]:
    return result.structured_content or {}


def expect_ok(world: World, user: str, tool: str, result: types.CallToolResult) -> dict[str, Any]:
    if result.is_error:
        world.wrong.append(
            f"{user} {tool} failed: {data(result).get('error_code')}: {data(result).get('error_message', '')[:200]}"
        )
    return data(result)


# --- actions --------------------------------------------------------------------------------


async def upload(world: World, client: Client, user: str) -> None:
    tokens = world.new_tokens(user)
    arguments = {
        "filename": tokens["filename"],
        "content": base64.b64encode(document_text(tokens).encode()).decode(),
        "mimeType": "text/markdown",
        "metadata": {"keeper": tokens["entity"]},
    }
    result = expect_ok(
        world, user, "upload_to_lightrag", await call(world, client, user, "upload_to_lightrag", arguments)
    )
    if result.get("document_id"):
        world.add_document(user, result["document_id"], set(tokens.values()))


async def insert_text(world: World, client: Client, user: str) -> None:
    tokens = world.new_tokens(user)
    arguments = {"text": document_text(tokens), "title": tokens["title"]}
    result = expect_ok(
        world, user, "lightrag_insert_text", await call(world, client, user, "lightrag_insert_text", arguments)
    )
    if result.get("document_id"):
        world.add_document(user, result["document_id"], set(tokens.values()))


async def batch(world: World, client: Client, user: str) -> None:
    items = [world.new_tokens(user) for _ in range(world.rng.choice([1, 2]))]
    arguments = {"items": [{"item_type": "text", "content": document_text(t), "title": t["title"]} for t in items]}
    result = expect_ok(
        world, user, "lightrag_batch_process", await call(world, client, user, "lightrag_batch_process", arguments)
    )
    for tokens, item in zip(items, result.get("results") or [], strict=False):
        if item.get("document_id"):
            world.add_document(user, item["document_id"], set(tokens.values()))


async def query(world: World, client: Client, user: str) -> None:
    mode = world.rng.choice(["naive", "local"])
    arguments = {"query": world.rng.choice(GENERIC_QUERIES), "mode": mode, "top_k": 60, "chunk_top_k": 30}
    result = await call(world, client, user, "lightrag_query", arguments)
    if result.is_error:
        expect_ok(world, user, f"lightrag_query {mode}", result)


async def simple_query(world: World, client: Client, user: str) -> None:
    arguments = {"query": world.rng.choice(GENERIC_QUERIES), "max_results": 50}
    expect_ok(world, user, "query_lightrag", await call(world, client, user, "query_lightrag", arguments))


async def list_documents(world: World, client: Client, user: str) -> None:
    arguments = {"limit": 200, **world.rng.choice([{}, {"search_query": "ledger"}, {"sort_by": "filename"}])}
    listed = expect_ok(
        world, user, "lightrag_list_documents", await call(world, client, user, "lightrag_list_documents", arguments)
    )
    for doc in listed.get("documents") or []:
        owner = world.documents.get(doc.get("id", ""))
        if owner is not None and owner.owner != user:  # also a token hit; named here for the report
            world.leaks.append(f"{user} lightrag_list_documents: listed {owner.owner}'s document {doc['id']}")


async def status(world: World, client: Client, user: str) -> None:
    own = world.live(user)
    others = world.others_live(user)
    if others and (not own or world.rng.random() < 0.5):
        target = world.rng.choice(others)
        result = await call(
            world,
            client,
            user,
            "lightrag_get_status",
            {"document_ids": [target.document_id]},
            frozenset({target.document_id}),
        )
        probe_answer(world, user, "lightrag_get_status", result, target)
    elif own:
        ids = [doc.document_id for doc in world.rng.sample(own, min(3, len(own)))]
        expect_ok(
            world,
            user,
            "lightrag_get_status",
            await call(world, client, user, "lightrag_get_status", {"document_ids": ids}),
        )
    else:
        expect_ok(world, user, "lightrag_get_status", await call(world, client, user, "lightrag_get_status", {}))


async def delete(world: World, client: Client, user: str) -> None:
    own = world.live(user)
    others = world.others_live(user)
    if others and (not own or world.rng.random() < 0.4):
        target = world.rng.choice(others)
        arguments = {"document_ids": [target.document_id]}
        result = await call(
            world, client, user, "lightrag_delete_documents", arguments, frozenset({target.document_id})
        )
        probe_answer(world, user, "lightrag_delete_documents", result, target)
    elif own:
        target = world.rng.choice(own)
        target.deleted = True  # from now on the owner may no longer have it, whatever the answer
        result = await call(world, client, user, "lightrag_delete_documents", {"document_ids": [target.document_id]})
        deleted = expect_ok(world, user, "lightrag_delete_documents", result).get("deleted_documents") or []
        if not result.is_error and target.document_id not in deleted:
            world.wrong.append(f"{user} could not delete their own document {target.document_id}: {deleted}")


def probe_answer(world: World, user: str, tool: str, result: types.CallToolResult, target: Document) -> None:
    """Naming another user's document: DOCUMENT_NOT_FOUND, and the owner keeps it."""
    code = data(result).get("error_code") if result.is_error else None
    if code == "DOCUMENT_NOT_FOUND":
        world.refusals.append(f"{user} {tool} {target.owner}'s document")
    else:
        world.wrong.append(f"{user} {tool} on {target.owner}'s document {target.document_id}: {code or 'success'}")
    world.to_verify.append(target)


async def search_entities(world: World, client: Client, user: str) -> None:
    kind = world.rng.choice(["fuzzy", "semantic", "exact"])
    allowed: frozenset[str] = frozenset()
    if kind == "exact":  # another user's entity name, exactly
        owner = world.rng.choice([u for u in USERS if u != user])
        names = world.entities[owner]
        query_text = world.rng.choice(names) if names else "Zorblax"
        allowed = frozenset({query_text})
    else:
        query_text = world.rng.choice(["Zorblax", "Zorblax archive keeper", "Quorin archive"])
    arguments = {"query": query_text, "search_options": {"search_type": kind}, "limit": 100}
    result = await call(world, client, user, "lightrag_search_entities", arguments, allowed)
    found = expect_ok(world, user, f"lightrag_search_entities {kind}", result)
    if kind == "exact" and allowed and found.get("entities"):
        world.leaks.append(f"{user} exact search for {query_text} found {len(found['entities'])} entities")


async def get_graph(world: World, client: Client, user: str) -> None:
    options: list[dict[str, Any]] = [{"max_nodes": 1000, "max_edges": 2000}, {"query": "Zorblax archive keeper"}]
    arguments = world.rng.choice(options)
    expect_ok(
        world,
        user,
        "lightrag_get_graph",
        await call(world, client, user, "lightrag_get_graph", {**arguments, "output_format": "json"}),
    )


async def relationships(world: World, client: Client, user: str) -> None:
    others = [name for owner in USERS if owner != user for name in world.entities[owner]]
    if others and world.rng.random() < 0.5:
        name = world.rng.choice(others)
        result = await call(
            world, client, user, "lightrag_get_entity_relationships", {"entity_id": name}, frozenset({name})
        )
        code = data(result).get("error_code") if result.is_error else None
        if code == "ENTITY_NOT_FOUND":
            world.refusals.append(f"{user} relationships of another user's entity")
        else:
            world.wrong.append(f"{user} got the relationships of another user's entity {name}: {code or 'success'}")
    elif world.entities[user]:
        name = world.rng.choice(world.entities[user])
        result = await call(
            world, client, user, "lightrag_get_entity_relationships", {"entity_id": name, "max_depth": 2}
        )
        if result.is_error and data(result).get("error_code") != "ENTITY_NOT_FOUND":  # it may have been deleted
            expect_ok(world, user, "lightrag_get_entity_relationships", result)


async def edit_entity(world: World, client: Client, user: str) -> None:
    tokens = world.new_tokens(user)
    arguments = {
        "entity_id": tokens["entity"],
        "updates": {"description": f"Keeper of archive code {tokens['marker']}.", "entity_type": "person"},
        "update_options": {"create_if_missing": True},
    }
    expect_ok(
        world, user, "lightrag_update_entity", await call(world, client, user, "lightrag_update_entity", arguments)
    )


async def audit(world: World, client: Client, user: str) -> None:
    arguments = {"stat_categories": list(STAT_CATEGORIES), "time_range": "all", "audit_limit": 500}
    expect_ok(
        world,
        user,
        "lightrag_get_system_stats",
        await call(world, client, user, "lightrag_get_system_stats", arguments),
    )


Action = Callable[[World, Client, str], Awaitable[None]]
ACTIONS: list[tuple[Action, int]] = [
    (upload, 4),
    (insert_text, 3),
    (batch, 2),
    (query, 3),
    (simple_query, 2),
    (list_documents, 2),
    (status, 2),
    (delete, 2),
    (search_entities, 3),
    (get_graph, 2),
    (relationships, 2),
    (edit_entity, 2),
    (audit, 1),
]


async def verify_probed_documents(world: World, client: Client) -> None:
    """Documents another user tried to read or delete are still there for their owner."""
    for target in world.to_verify:
        if target.deleted:
            continue
        result = await call(world, client, target.owner, "lightrag_get_status", {"document_ids": [target.document_id]})
        if result.is_error:
            world.wrong.append(
                f"{target.owner} lost {target.document_id} after another user named it: {data(result).get('error_code')}"
            )
    world.to_verify.clear()


async def run_interleaving(client: Client, seed: int) -> World:
    world = World(random.Random(seed))
    actions, weights = zip(*ACTIONS, strict=True)
    for user in USERS:  # everyone starts with a document, so the first probes have targets
        await upload(world, client, user)
    for _ in range(ROUNDS):
        acting = world.rng.sample(USERS, world.rng.choice([1, 2, 3]))  # distinct users act at the same time
        chosen = [(user, world.rng.choices(actions, weights)[0]) for user in acting]
        async with anyio.create_task_group() as tg:
            for user, action in chosen:
                tg.start_soon(action, world, client, user)
        await verify_probed_documents(world, client)
    for user in USERS:  # a last full look at everything each user can see
        await list_documents(world, client, user)
        await get_graph(world, client, user)
    return world


@pytest.mark.parametrize("seed", SEEDS)
async def test_no_result_ever_carries_another_users_data(home: Path, seed: int) -> None:
    async with running_server(home, LIGHTRAG_MCP_MAX_REQUESTS="0") as client:
        before = await client.wait_ready()
        world = await run_interleaving(client, seed)
        after = await client.wait_ready()
    documents = len(world.documents)
    recorder.record(
        "isolation",
        f"interleaving_seed_{seed}",
        inputs_tried=world.calls,
        calls_answered=world.calls,
        cross_user_leaks=len(world.leaks),
        failed_calls=len(world.wrong),
        probes_refused=len(world.refusals),
        answers_with_own_data=world.own_hits,
        documents=documents,
        rounds=ROUNDS,
        worker_restarts_from_input=after["components"]["worker"]["restarts"]
        - before["components"]["worker"]["restarts"],
    )
    assert world.leaks == [], "\n".join(world.leaks[:30])
    assert world.wrong == [], "\n".join(world.wrong[:30])
    # the property was exercised: documents everywhere, probes refused, answers full of the caller's own data
    assert documents >= 3 * len(USERS) and len(world.refusals) >= 3 and world.own_hits >= world.calls // 3
    assert after["components"]["worker"]["restarts"] == 0


async def test_the_health_check_names_no_other_users_workspace(home: Path) -> None:
    """The health check (plain, detailed, with dependency probes) shows a user their own
    workspace only: another user's workspace name carries a slug of their user id."""
    world = World(random.Random(0))
    async with running_server(home, LIGHTRAG_MCP_MAX_REQUESTS="0") as client:
        for user in USERS:
            await insert_text(world, client, user)
        for user in USERS:
            for arguments in ({}, {"include_detailed": True}, {"check_dependencies": True}):
                result = await call(world, client, user, "lightrag_health_check", arguments)
                expect_ok(world, user, "lightrag_health_check", result)
    recorder.record(
        "isolation",
        "health_check",
        inputs_tried=world.calls,
        calls_answered=world.calls,
        cross_user_leaks=len(world.leaks),
    )
    assert world.wrong == [], world.wrong
    assert world.leaks == [], "\n".join(world.leaks)
