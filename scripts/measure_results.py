#!/usr/bin/env python3
"""What a model reads: the size of tool results and tool definitions, through the real server.

    .venv/bin/python scripts/measure_results.py            # results + tool definitions
    .venv/bin/python scripts/measure_results.py --tools    # tool definitions only (fast)

Inserts three documents (one with a planted sentence) through the real server over stdio,
then runs a naive query, a mix query, `query_lightrag` and a document listing, and prints for
each: characters of text content (what LibreChat passes to the model), how often the planted
sentence and its document id appear in that text, and the size of `structuredContent` as JSON.
Tool definitions are measured as LibreChat sends them: [{name, description, parameters}].
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.harness import Client, running_server  # noqa: E402

PLANTED = "The VELVET-3390 turbine was designed by Marta Okafor in Porto."
DOCUMENTS = {
    "turbines.md": (
        "# Turbine programme\n\nThe programme reviews wind and water turbines across three sites. "
        f"{PLANTED} Marta Okafor chose carbon blades because they resist salt corrosion.\n\n"
        "## Budget\n\nThe turbine budget was 12 million euros, approved by the Harbour Board.\n"
    ),
    "staffing.md": (
        "# Staffing\n\nThe maintenance team grew to 14 engineers. Training covers safety drills, "
        "inspection schedules and the reporting of defects in cooling loops.\n"
    ),
    "glossary.md": "# Glossary\n\nBlade: the rotating surface of a turbine. Nacelle: the housing on top of the tower.\n",
}
QUESTION = "Who designed the VELVET-3390 turbine?"
PROFILES = ("librechat", "default")


def definitions_size(tools: list[Any]) -> int:
    """Characters of the tool definitions in LibreChat's function form."""
    functions = [{"name": t.name, "description": t.description or "", "parameters": t.input_schema} for t in tools]
    return len(json.dumps(functions, separators=(",", ":")))


def measure(label: str, result: Any, document_id: str) -> dict[str, Any]:
    text = "\n\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    structured = json.dumps(result.structured_content or {}, separators=(",", ":"))
    return {
        "call": label,
        "text_chars": len(text),
        "planted": text.count(PLANTED),
        "doc_id": text.count(document_id) if document_id else 0,
        "structured_chars": len(structured),
        "error": bool(result.is_error),
    }


async def tool_sizes(home: Path) -> dict[str, tuple[int, int]]:
    sizes = {}
    for profile in PROFILES:
        (home / profile).mkdir()
        async with running_server(home / profile, LIGHTRAG_MCP_TOOLS=profile) as client:
            tools = (await client.session.list_tools()).tools
            sizes[profile] = (len(tools), definitions_size(tools))
    return sizes


async def result_sizes(home: Path) -> list[dict[str, Any]]:
    (home / "results").mkdir()
    async with running_server(home / "results", LIGHTRAG_MCP_TOOLS="all") as client:
        document_id = await insert_documents(client)
        calls: list[tuple[str, str, dict[str, Any]]] = [
            ("lightrag_query naive", "lightrag_query", {"query": QUESTION, "mode": "naive"}),
            ("lightrag_query mix", "lightrag_query", {"query": QUESTION, "mode": "mix"}),
            ("lightrag_query hybrid only_context", "lightrag_query", {"query": QUESTION, "mode": "hybrid", "only_context": True}),
            ("query_lightrag max_results=2", "query_lightrag", {"query": QUESTION, "max_results": 2}),
            ("lightrag_list_documents", "lightrag_list_documents", {}),
            ("lightrag_get_status", "lightrag_get_status", {"document_ids": [document_id]}),
            ("lightrag_search_entities", "lightrag_search_entities", {"query": "Marta Okafor"}),
        ]
        rows = []
        for label, name, arguments in calls:
            rows.append(measure(label, await client.call(name, arguments), document_id))
        return rows


async def insert_documents(client: Client) -> str:
    """Upload the documents; returns the id of the one holding the planted sentence."""
    planted_id = ""
    for filename, text in DOCUMENTS.items():
        result = await client.call("lightrag_insert_text", {"text": text, "title": filename})
        if result.is_error or not result.structured_content:
            raise SystemExit(f"insert of {filename} failed: {result.content}")
        if PLANTED in text:
            planted_id = str(result.structured_content.get("document_id") or "")
    return planted_id


def print_table(rows: list[dict[str, Any]]) -> None:
    header = f"{'call':38} {'text':>8} {'planted':>8} {'doc id':>7} {'structured':>11}"
    sys.stdout.write(header + "\n")
    for row in rows:
        flag = "  (error)" if row["error"] else ""
        sys.stdout.write(
            f"{row['call']:38} {row['text_chars']:>8,} {row['planted']:>8} {row['doc_id']:>7} "
            f"{row['structured_chars']:>11,}{flag}\n"
        )


async def main(tools_only: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for profile, (count, size) in (await tool_sizes(home)).items():
            sys.stdout.write(f"tool definitions, profile {profile}: {count} tools, {size:,} characters\n")
        if not tools_only:
            print_table(await result_sizes(home))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", action="store_true", help="measure tool definitions only")
    anyio.run(main, parser.parse_args().tools)
