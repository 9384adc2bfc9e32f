"""Folder indexing on the embedded default: files per minute for a real tree (this project's
own source, tests and docs), then the incremental re-run (nothing changed) and a run after
one change.  Prints numbers; asserts nothing about time.

    .venv/bin/python scripts/bench_folder.py [--json]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import orjson

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from scripts.bench_support import RssSampler, front  # noqa: E402

TREES = ["protocol", "mcp_front", "rag_worker", "scripts", "tests", "README.md", "Makefile", "pyproject.toml"]


def copy_corpus(target: Path) -> Path:
    corpus = target / "corpus" / "lightrag-mcp"
    corpus.mkdir(parents=True)
    for name in TREES:
        source = PROJECT / name
        if source.is_dir():
            shutil.copytree(source, corpus / name, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
        elif source.exists():
            shutil.copy(source, corpus / name)
    return corpus


async def run_folder(client: Any, path: str, **arguments: Any) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await client.call("lightrag_insert_file", {"file_path": path, **arguments})
    assert not result.is_error, result.content
    view = result.structured_content
    while view["status"] not in {"completed", "failed", "cancelled"}:
        await anyio.sleep(0.5)
        view = (await client.call("lightrag_get_status", {"batch_id": view["batch_id"]})).structured_content
    return time.perf_counter() - started, view


async def main_async() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = copy_corpus(Path(tmp))
        async with front(Path(tmp) / "home", LIGHTRAG_MCP_ALLOWED_DIRS=str(corpus.parent)) as client:
            health = await client.wait_ready()
            sampler = RssSampler({"worker": health["components"]["worker"]["pid"]})
            async with sampler.running():
                first_s, first = await run_folder(client, corpus.name)
            second_s, second = await run_folder(client, corpus.name)
            (corpus / "README.md").write_text((corpus / "README.md").read_text() + "\nOne more line.\n")
            third_s, third = await run_folder(client, corpus.name)
    s1 = first["summary"]
    return {
        "files": s1["files_found"],
        "skipped": s1["skipped"],
        "failed": s1["failed"],
        "first_run_s": round(first_s, 1),
        "files_per_minute": round(60 * s1["files_found"] / first_s, 1),
        "unchanged_rerun_s": round(second_s, 2),
        "unchanged": second["summary"]["unchanged"],
        "one_change_rerun_s": round(third_s, 2),
        "replaced": third["summary"]["replaced"],
        "worker_rss_peak_mb": sampler.peak("worker"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    results = anyio.run(main_async)
    if args.json:
        sys.stdout.write(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for key, value in results.items():
            sys.stdout.write(f"{key:>22}: {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
