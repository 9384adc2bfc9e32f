#!/usr/bin/env python3
"""Graph export benchmark: a real 1,000-entity LightRAG graph exported in every format.

Builds the graph in a fresh data directory with a LightRAG instance made exactly as the worker
makes one (`rag_worker.storage.lightrag_setup.new_lightrag` on the embedded components), inserting entities
and relations through its graph storage (a preferential-attachment graph: a few hubs, many
leaves, about two relations per entity, LightRAG-shaped attributes), then measures:

* direct: the worker's own code in this process: read + index the graph, choose the
  subgraph, statistics, and building each format (median / p95 of `--repeat` runs);
* server: `lightrag_get_graph` through the real server over stdio (front + worker) for each
  format, with the export's size and whether it came inline or as a file.

    .venv/bin/python scripts/bench_graph.py [--nodes 1000] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.corpus import _CITIES, _FIRST, _LAST, _ORGS, _PRODUCTS, _TOPICS  # noqa: E402

FORMATS = ["json", "graphml", "gexf", "cypher", "mermaid"]
TYPES = ["person", "organization", "location", "product", "concept", "event", "method"]
WORKSPACE = "default"


def entity_names(count: int, rnd: random.Random) -> list[str]:
    pools = [[f"{a} {b}" for a in _FIRST for b in _LAST], list(_ORGS), list(_CITIES), list(_PRODUCTS)]
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        base = rnd.choice(rnd.choice(pools))
        name = base if base not in seen else f"{base} {rnd.choice(_TOPICS).title()} {len(names)}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def graph_data(
    count: int, seed: int = 7
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, dict[str, Any]]]]:
    """Nodes and edges shaped like LightRAG's (preferential attachment, ~2 relations per entity)."""
    rnd = random.Random(seed)
    names = entity_names(count, rnd)
    now = int(time.time())
    nodes = []
    for index, name in enumerate(names):
        doc = f"doc-{index % 97:032x}"
        words = " ".join(rnd.choice(_TOPICS) for _ in range(18))
        nodes.append(
            (
                name,
                {
                    "entity_id": name,
                    "entity_type": rnd.choice(TYPES),
                    "description": f"{name} appears in report {index % 97} about {words}.",
                    "source_id": f"{doc}-chunk-{index % 5:03d}<SEP>{doc}-chunk-{(index + 1) % 5:03d}",
                    "file_path": f"report-{index % 97}.pdf",
                    "created_at": now,
                    "truncate": "",
                },
            )
        )
    edges = []
    targets = [names[0], names[1]]
    seen: set[tuple[str, str]] = set()
    for name in names[2:]:
        for target in {rnd.choice(targets), rnd.choice(targets)}:
            pair = (min(name, target), max(name, target))
            if pair in seen or name == target:
                continue
            seen.add(pair)
            keywords = ",".join(sorted({"co-occurrence", rnd.choice(_TOPICS), rnd.choice(_TOPICS)}))
            edges.append(
                (
                    name,
                    target,
                    {
                        "weight": float(rnd.randint(1, 5)),
                        "description": f"{name} and {target} are mentioned together.",
                        "keywords": keywords,
                        "source_id": "doc-0-chunk-000",
                        "file_path": "report-0.pdf",
                        "created_at": now,
                        "truncate": "",
                    },
                )
            )
            targets.extend([name, target])
    return nodes, edges


async def build_graph(data_dir: Path, count: int) -> tuple[int, int]:
    """Write the graph into `data_dir`'s default workspace through LightRAG's graph storage."""
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag

    import_lightrag()
    components = await build_components(load_settings({"WORKING_DIR": str(data_dir)}), anyio.CapacityLimiter(4))
    rag = await new_lightrag(data_dir, WORKSPACE, components)
    nodes, edges = graph_data(count)
    storage = rag.chunk_entity_relation_graph
    await storage.upsert_nodes_batch(nodes)
    await storage.upsert_edges_batch(edges)
    await storage.index_done_callback()
    await rag.finalize_storages()
    return len(nodes), len(edges)


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


async def timed(repeat: int, step: Callable[[], Awaitable[Any]]) -> tuple[dict[str, float], Any]:
    samples, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = await step()
        samples.append(time.perf_counter() - started)
    return summary(samples), result


class DirectContext:
    """What the graph code needs from a request context: run CPU work in a thread."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(4)

    async def run_cpu(self, func: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(func, *args, limiter=self.limiter)


async def bench_direct(data_dir: Path, repeat: int) -> dict[str, Any]:
    """The worker's graph code in this process, on a freshly opened instance."""
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.graph.browse import GraphFilters, select_whole
    from rag_worker.graph.exports import render
    from rag_worker.graph.snapshot import read_snapshot
    from rag_worker.graph.statistics import graph_statistics
    from rag_worker.storage.lightrag_setup import new_lightrag

    components = await build_components(load_settings({"WORKING_DIR": str(data_dir)}), anyio.CapacityLimiter(4))
    rag = await new_lightrag(data_dir, WORKSPACE, components)
    ctx = DirectContext()
    results: dict[str, Any] = {}
    results["read_snapshot"], snapshot = await timed(repeat, lambda: read_snapshot(ctx, rag))
    results["select_1000"], selection = await timed(
        repeat, lambda: ctx.run_cpu(select_whole, snapshot, GraphFilters(), 1000, 2000)
    )
    results["statistics"], _ = await timed(repeat, lambda: ctx.run_cpu(graph_statistics, snapshot, selection))
    results["selected"] = {"nodes": len(selection.nodes), "edges": len(selection.edges)}
    for output_format in FORMATS:

        async def build(output_format: str = output_format) -> str:
            text: str = await ctx.run_cpu(render, output_format, snapshot, selection, True, "LR")
            return text

        timing, text = await timed(repeat, build)
        results[f"render_{output_format}"] = {**timing, "size_kb": round(len(text.encode()) / 1024, 1)}
    await rag.finalize_storages()
    return results


async def bench_server(data_dir: Path, home: Path, repeat: int) -> dict[str, Any]:
    """`lightrag_get_graph` over stdio for each format, 1,000 entities, all properties."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WORKING_DIR": str(data_dir),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_front"], env=env, cwd=str(home))
    results: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        warm = await session.call_tool("lightrag_get_graph", {"max_nodes": 5})  # opens the workspace
        assert not warm.is_error, warm.content
        for output_format in FORMATS:
            arguments = {"output_format": output_format, "max_nodes": 1000, "max_edges": 2000}

            async def call(arguments: dict[str, Any] = arguments) -> dict[str, Any]:
                result = await session.call_tool("lightrag_get_graph", arguments)
                assert not result.is_error, result.content
                return result.structured_content or {}

            timing, last = await timed(repeat, call)
            exported = last.get("export_file")
            size = (
                exported["size_bytes"]
                if exported
                else len((last.get("export") or orjson.dumps(last["nodes"]).decode()).encode())
            )
            results[output_format] = {
                **timing,
                "size_kb": round(size / 1024, 1),
                "delivery": "file" if exported else "inline",
                "server_processing_ms": round(last["metadata"]["processing_time_s"] * 1000, 1),
                "nodes": last["statistics"]["total_nodes"],
                "edges": last["statistics"]["total_edges"],
            }
    return results


async def run_all(data_dir: Path, home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Everything in one event loop (LightRAG's locks bind to the loop that first uses them)."""
    nodes, edges = await build_graph(data_dir, args.nodes)
    report: dict[str, Any] = {"graph": {"nodes": nodes, "edges": edges}, "repeat": args.repeat}
    report["direct"] = await bench_direct(data_dir, args.repeat)
    if not args.skip_server:
        report["server"] = await bench_server(data_dir, home, args.repeat)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        home = Path(tmp) / "home"
        data_dir = Path(tmp) / "data"
        home.mkdir()
        os.chdir(tmp)  # LightRAG reads ./.env
        report = anyio.run(run_all, data_dir, home, args)
        nodes, edges = report["graph"]["nodes"], report["graph"]["edges"]
    print(f"graph: {nodes} entities, {edges} relations; {args.repeat} runs each (median / p95 ms)")
    print("direct (worker code in-process):")
    for step, values in report["direct"].items():
        if step != "selected":
            print(
                f"  {step:<16} {values['median_ms']:>9.2f} {values['p95_ms']:>9.2f}"
                + (f"  {values['size_kb']} KB" if "size_kb" in values else "")
            )
    if "server" in report:
        print("server (lightrag_get_graph over stdio, 1,000 entities, all properties):")
        for output_format, values in report["server"].items():
            print(
                f"  {output_format:<8} {values['median_ms']:>9.2f} {values['p95_ms']:>9.2f}  {values['size_kb']} KB "
                f"{values['delivery']}; worker {values['server_processing_ms']} ms; "
                f"{values['nodes']} nodes / {values['edges']} edges"
            )
    if args.json:
        args.json.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
