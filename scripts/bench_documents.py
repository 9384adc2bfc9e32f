#!/usr/bin/env python3
"""Time lightrag_list_documents on a workspace with thousands of documents (prints numbers).

Indexing thousands of documents takes long, so the script writes their doc-status rows,
catalog records and per-document entity/relation rows straight into a fresh workspace's
real storages (the rows the listing reads), then calls the worker's own handler in-process
with several argument sets and prints median and p95 milliseconds.

    PYTHONPATH=. .venv/bin/python scripts/bench_documents.py --docs 3000 --repeat 20
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from config.settings import load_settings  # noqa: E402
from protocol import methods as m  # noqa: E402
from protocol.context import CallContext  # noqa: E402
from rag_worker.app import warm_up  # noqa: E402
from rag_worker.context import RequestContext, WorkerRuntime  # noqa: E402

CASES: dict[str, dict[str, Any]] = {
    "default page (50, newest first)": {},
    "200 per page, sorted by title": {"limit": 200, "sort_by": "title", "sort_order": "asc"},
    "search in metadata": {"search_query": "finance"},
    "status + date range": {"status_filter": "processed", "date_range": {"start_date": "2025-01-01"}},
    "last page by size": {"sort_by": "size", "offset": 2950},
}


async def populate(ws: Any, count: int) -> None:
    from lightrag.base import DocStatus

    rnd = random.Random(5)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rows: dict[str, dict[str, Any]] = {}
    for index in range(count):
        doc_id = f"doc-{index:06d}"
        created = start + timedelta(minutes=index)
        status = DocStatus.PROCESSED if rnd.random() > 0.05 else DocStatus.FAILED
        chunks = [f"{doc_id}-chunk-{n:03d}" for n in range(rnd.randint(1, 12))]
        rows[doc_id] = {
            "status": status,
            "content_summary": f"Document {index}",
            "content_length": rnd.randint(500, 50_000),
            "file_path": f"report-{index}.{rnd.choice(['pdf', 'md', 'txt', 'docx'])}",
            "created_at": created.isoformat(),
            "updated_at": (created + timedelta(seconds=rnd.uniform(1, 60))).isoformat(),
            "track_id": f"upload_{index}",
            "chunks_count": len(chunks),
            "chunks_list": chunks,
            "error_msg": "extraction failed" if status == DocStatus.FAILED else None,
            "metadata": {},
            "content_hash": f"{index:032x}",
        }
        await ws.catalog._kv.upsert(
            {
                doc_id: {
                    "filename": rows[doc_id]["file_path"],
                    "title": f"Quarterly report {index}",
                    "mime_type": "application/pdf",
                    "size_bytes": rnd.randint(1_000, 5_000_000),
                    "metadata": {"tags": [rnd.choice(["finance", "legal", "ops"])], "author": f"Author {index % 40}"},
                }
            }
        )
        names = [f"Entity {rnd.randint(0, 5000)}" for _ in range(rnd.randint(2, 30))]
        await ws.rag.full_entities.upsert({doc_id: {"entity_names": names, "count": len(names)}})
        pairs = [[names[0], name] for name in names[1:]]
        await ws.rag.full_relations.upsert({doc_id: {"relation_pairs": pairs, "count": len(pairs)}})
    await ws.rag.doc_status.upsert(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as data_dir:
        os.chdir(data_dir)  # LightRAG reads ./.env
        from rag_worker.handlers.documents import list_documents

        async def ignore(*_: Any) -> None:
            return None

        state = WorkerRuntime(load_settings({"WORKING_DIR": data_dir}), anyio.CapacityLimiter(4), ignore, ignore)
        async with anyio.create_task_group() as background:
            await warm_up(state, background.start_soon)  # as the worker server does
            ctx = RequestContext(state, 1, CallContext(workspace="bench_documents", correlation_id="bench"))
            ws = await state.engines.get(ctx.workspace)
            began = time.perf_counter()
            await populate(ws, options.docs)
            print(f"{options.docs} documents written in {time.perf_counter() - began:.1f}s")
            for name, arguments in CASES.items():
                times = []
                for _ in range(options.repeat):
                    began = time.perf_counter()
                    result = await list_documents(ctx, m.LIST_DOCUMENTS.with_defaults(arguments))
                    times.append((time.perf_counter() - began) * 1000)
                times.sort()
                p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
                print(
                    f"{name:36s} median {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms  "
                    f"({len(result['documents'])} shown of {result['pagination']['total_documents']})"
                )
            await state.close()
            background.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
