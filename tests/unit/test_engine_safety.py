"""Two guards the worker puts around LightRAG's saves (rag_worker.storage.lightrag_setup): the graph file is
serialized in memory before it is written, and a query whose closing cache save fails still
answers.  Both were found by the disk-full fault test (tests/reliability/test_faults.py)."""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from types import SimpleNamespace

import networkx
import pytest

from rag_worker.storage.lightrag_setup import _graph_saves_through_memory, _query_done_best_effort

pytestmark = pytest.mark.anyio


def sample_graph() -> networkx.Graph:
    graph = networkx.Graph()
    graph.add_node("Helena Vargas", entity_type="person", description="Led the ZEBRA-7741 project.")
    graph.add_node("Berlin", entity_type="location", description="A city.")
    graph.add_edge("Helena Vargas", "Berlin", description="works in", weight=1.0)
    return graph


def test_the_graph_file_is_written_whole_and_a_failed_write_is_a_plain_os_error(tmp_path: Path) -> None:
    _graph_saves_through_memory()
    _graph_saves_through_memory()  # idempotent: the worker may import LightRAG more than once
    assert getattr(networkx.write_graphml, "through_memory", False)
    target = tmp_path / "graph.graphml"
    networkx.write_graphml(sample_graph(), str(target))
    back = networkx.read_graphml(target)
    assert dict(back.nodes(data=True)) == dict(sample_graph().nodes(data=True))
    assert back.edges["Helena Vargas", "Berlin"]["description"] == "works in"
    with pytest.raises(OSError) as full:  # /dev/full: every write fails with ENOSPC, like a full disk
        networkx.write_graphml(sample_graph(), "/dev/full")
    assert full.value.errno == errno.ENOSPC


async def test_a_query_whose_cache_save_fails_still_answers(caplog: pytest.LogCaptureFixture) -> None:
    saves: list[str] = []

    async def full_disk() -> None:
        saves.append("tried")
        raise OSError(errno.ENOSPC, "No space left on device")

    rag = SimpleNamespace(llm_response_cache=SimpleNamespace(index_done_callback=full_disk))
    with caplog.at_level(logging.WARNING, logger="rag_worker.storage.lightrag_setup"):
        await _query_done_best_effort(rag)()  # no exception: the query's answer goes back
    assert saves == ["tried"] and "could not be saved after a query" in caplog.text
