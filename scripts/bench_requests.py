#!/usr/bin/env python3
"""Embedding and LLM requests per query: through this server against LightRAG alone (the floor).

Both sides use the same local OpenAI-compatible fake (tests/fakes/openai_server.py: the real
`openai` binding runs, nothing leaves the machine) and the same generated documents.  The
server is driven over stdio as LibreChat drives it; LightRAG is built in-process exactly as
the worker builds it (`rag_worker.storage.lightrag_setup.new_lightrag`) and asked with
`aquery_llm`.  Each question is new (LightRAG's LLM cache would hide requests), and each
side's requests are counted by the fake during that one call.

Run from the project root::

    .venv/bin/python scripts/bench_requests.py --docs 5 --questions 4
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import anyio

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from scripts.corpus import generated_documents  # noqa: E402
from tests.fakes.openai_server import FakeLLMServer  # noqa: E402
from tests.integration.harness import running_server  # noqa: E402

MODES = ("naive", "local", "global", "hybrid", "mix")
DIM = 64


def llm_env(fake: FakeLLMServer) -> dict[str, str]:
    host = fake.openai_base_url
    return {
        "LLM_BINDING": "openai", "LLM_MODEL": "fake-chat", "LLM_BINDING_HOST": host, "LLM_BINDING_API_KEY": "sk-bench",
        "EMBEDDING_BINDING": "openai", "EMBEDDING_MODEL": "fake-embed", "EMBEDDING_DIM": str(DIM),
        "EMBEDDING_BINDING_HOST": host, "EMBEDDING_BINDING_API_KEY": "sk-bench",
    }


def questions(mode: str, count: int, side: str) -> list[str]:
    return [f"What did the {side} report say about topic {n} ({mode})?" for n in range(count)]


def counted(fake: FakeLLMServer) -> tuple[int, int, int]:
    """(embedding requests, texts embedded, chat requests) since the last reset."""
    embeddings = fake.requests_for(endpoint="embeddings")
    texts = sum(len(r.body.get("input") or []) if isinstance(r.body.get("input"), list) else 1 for r in embeddings)
    return len(embeddings), texts, len(fake.requests_for(endpoint="chat"))


async def through_server(fake: FakeLLMServer, docs: list[tuple[str, str]], count: int) -> dict[str, list[tuple[int, int, int]]]:
    home = Path(tempfile.mkdtemp(prefix="bench-requests-"))
    per_mode: dict[str, list[tuple[int, int, int]]] = {}
    async with running_server(home, **llm_env(fake)) as client:
        for name, text in docs:
            content = base64.b64encode(text.encode()).decode()
            await client.call("upload_to_lightrag", {"filename": name.replace(".pdf", ".md"), "content": content})
        for mode in MODES:
            per_mode[mode] = []
            for question in questions(mode, count, "server"):
                fake.reset()
                result = await client.call("lightrag_query", {"query": question, "mode": mode})
                if result.is_error:
                    raise SystemExit(f"the server failed a {mode} query: {result.content[0]}")
                per_mode[mode].append(counted(fake))
    return per_mode


async def through_lightrag(fake: FakeLLMServer, docs: list[tuple[str, str]], count: int) -> dict[str, list[tuple[int, int, int]]]:
    from lightrag import QueryParam

    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import new_lightrag

    components = await build_components(load_settings(llm_env(fake)), anyio.CapacityLimiter(2))
    working_dir = Path(tempfile.mkdtemp(prefix="bench-requests-floor-"))
    rag = await new_lightrag(working_dir, f"floor-{uuid.uuid4().hex[:8]}", components)
    per_mode: dict[str, list[tuple[int, int, int]]] = {}
    try:
        await rag.ainsert([text for _, text in docs], file_paths=[name for name, _ in docs])
        for mode in MODES:
            per_mode[mode] = []
            for question in questions(mode, count, "floor"):
                fake.reset()
                await rag.aquery_llm(question, QueryParam(mode=mode, enable_rerank=False))
                per_mode[mode].append(counted(fake))
    finally:
        await rag.finalize_storages()
    return per_mode


def mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def report(server: dict[str, Any], floor: dict[str, Any]) -> None:
    print("| mode | embedding requests / query (server · LightRAG) | texts embedded | LLM requests | equal |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        s_req, s_txt, s_llm = (mean([row[i] for row in server[mode]]) for i in range(3))
        f_req, f_txt, f_llm = (mean([row[i] for row in floor[mode]]) for i in range(3))
        same = "yes" if (s_req, s_llm) == (f_req, f_llm) else "no"
        print(f"| {mode} | {s_req:.2f} · {f_req:.2f} | {s_txt:.2f} · {f_txt:.2f} | {s_llm:.2f} · {f_llm:.2f} | {same} |")


async def main_async(args: argparse.Namespace) -> None:
    docs = generated_documents(args.docs, fmt="text")
    with FakeLLMServer(embedding_dim=DIM) as fake:
        server = await through_server(fake, docs, args.questions)
        floor = await through_lightrag(fake, docs, args.questions)
    print(f"{args.docs} documents, {args.questions} new questions per mode, openai binding against a local fake")
    report(server, floor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5)
    parser.add_argument("--questions", type=int, default=4)
    anyio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
