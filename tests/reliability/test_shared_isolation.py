"""Shared knowledge bases never leak private data (SPEC §3): over many probes, a reader's
question (with and without `workspace: "handbook"`) returns the handbook's passages and the
reader's own, never another user's private passage.  Counted into the reliability report."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import Client, running_server
from tests.reliability import recorder

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

USERS = ("alice", "bob", "carol", "dave")
ROUNDS = 400 if recorder.LONG else 80
SHARED = json.dumps({"handbook": {"read": ["*"], "write": ["alice"], "search_by_default": True}})
HANDBOOK = "# Lockers\n\nLockers are assigned by the facilities team; every locker code has four digits.\n"


def secret(user: str) -> str:
    return f"LOCKER-{user.upper()}-{sum(map(ord, user)) * 37}"


def private_note(user: str) -> str:
    return f"# {user}'s notes\n\nThe locker code of {user} is {secret(user)}. Only {user} knows it.\n"


async def ok(client: Client, user: str, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_as(user, tool, arguments)
    assert not result.is_error, result.content
    return result


def seen(result: Any) -> str:
    return json.dumps(result.structured_content) + "".join(str(getattr(part, "text", "")) for part in result.content)


async def test_a_readers_question_never_returns_another_users_private_passage(home: Path) -> None:
    rng = random.Random(29)
    leaks: list[str] = []
    own_hits = handbook_hits = probes = 0
    env = {"LIGHTRAG_MCP_SHARED_KBS": SHARED, "LIGHTRAG_MCP_MAX_REQUESTS": "0"}
    async with running_server(home, **env) as client:
        await client.wait_ready()
        await ok(client, "alice", "upload_to_lightrag", upload("lockers.md", HANDBOOK, workspace="handbook"))
        for user in USERS:
            await ok(client, user, "upload_to_lightrag", upload(f"{user}.md", private_note(user)))
        for _ in range(ROUNDS):
            asker, about = rng.choice(USERS), rng.choice(USERS)
            arguments = {"query": f"What is the locker code of {about}?", "mode": rng.choice(["naive", "mix"])}
            if rng.random() < 0.3:
                arguments["workspace"] = "handbook"
            text = seen(await ok(client, asker, "lightrag_query", arguments))
            probes += 1
            leaks += [f"{asker} saw {other}'s secret" for other in USERS if other != asker and secret(other) in text]
            own_hits += secret(asker) in text
            handbook_hits += "facilities team" in text
    recorder.record(
        "isolation",
        "shared_knowledge_base_probes",
        inputs_tried=probes,
        calls_answered=probes,
        cross_user_leaks=len(leaks),
        answers_with_own_data=own_hits,
        answers_with_shared_data=handbook_hits,
    )
    assert leaks == [], leaks[:20]
    # the property was exercised: the handbook and the asker's own notes both answered
    assert handbook_hits >= probes // 2 and own_hits >= probes // 5, (handbook_hits, own_hits, probes)


def upload(filename: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"filename": filename, "content": base64.b64encode(text.encode()).decode(), **extra}
