"""The worker's composition root: builds its long-lived parts and wires them together.

The worker server constructs a `WorkerRuntime` (settings, thread limiter, the pipe's
notify) and, once its task group runs, calls `warm_up`, which builds the parts every call
uses — the LightRAG engines of the workspaces and the batch-job runner, given the function
that runs a job — and does what must work before the worker says it is ready.  Lower layers
never import this module: each part receives what it needs from here.
"""

from __future__ import annotations

import gc
from pathlib import Path

import anyio

from protocol import methods as m
from rag_worker.context import WorkerRuntime
from rag_worker.operations.batches import run_batch
from rag_worker.operations.changes import announce_indexing_done
from rag_worker.operations.job_runner import BatchRunner, RunningJob
from rag_worker.storage.engine import EngineRegistry, Spawn
from rag_worker.storage.lightrag_setup import import_lightrag
from rag_worker.storage.workspace import Workspace

#: When the cycle collector runs: after 50,000 allocations not yet freed (Python's default: 700),
#: the older generations after 20 and 10 of those.  At the default, the rows and records a call
#: holds across its awaits survived young collections and set off full ones, each traversing
#: everything the worker keeps.  At 5,000 documents: indexing 100 documents ran 73 full
#: collections (12.6 s; 20 s of collection in all), now 5 (0.3 s; 4.7 s in all), for 64 MB more
#: worker memory; 15 relationship calls with the whole graph held ran 44-45 full collections of
#: 165-185 ms each, now 1.
GC_THRESHOLDS = (50_000, 20, 10)


async def warm_up(runtime: WorkerRuntime, spawn: Spawn) -> None:
    """Build the runtime's engines and batch runner; everything that must work before the worker is ready.

    `spawn` starts background work (indexing, batch jobs) that outlives the call that queued it."""
    runtime.spawn = spawn
    runtime.lightrag_version = await anyio.to_thread.run_sync(import_lightrag, limiter=runtime.limiter)

    async def announce_blocking(seconds: float, reason: str) -> None:
        await runtime.notify(m.BLOCKING, {"seconds": seconds, "reason": reason})

    async def run_job(running: RunningJob) -> None:
        await run_batch(runtime, running)

    async def indexing_done(ws: Workspace) -> None:
        await announce_indexing_done(runtime.notify, ws)

    runtime.engines = EngineRegistry(runtime.settings, runtime.limiter, spawn, announce_blocking, indexing_done)
    runtime.engines.check_data_dir()
    await anyio.to_thread.run_sync(runtime.engines.placement.check_servers)
    runtime.batches = BatchRunner(Path(runtime.settings.data_dir), spawn, run_job)
    spawn(runtime.batches.resume_all)  # batches a previous worker left unfinished
    spawn(runtime.engines.sweep_forever)  # idle workspaces close, their locks go to whoever needs them
    spawn(runtime.engines.start_engine_early)  # the first call does not wait for initdb
    # What start-up imported and built (LightRAG, numpy, the parsers: ~10^5 objects) lives as
    # long as the worker: out of every later collection, which a query's allocations trigger.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
