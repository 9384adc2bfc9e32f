"""Through the real server: a fact planted in an ODT footnote is found by a query, and a name the
typesetter hyphenated across a line end becomes one entity that exact search finds (issue 13)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.fixtures.reader_documents import make_odt
from tests.integration.harness import running_server

pytestmark = pytest.mark.anyio


async def test_a_fact_in_an_odt_footnote_is_found_by_a_query(home: Path) -> None:
    data = make_odt(
        body="Maintenance log of the plant.",
        header="Plant records",
        footer="Confidential",
        footnote="The PELICAN-88 turbine was serviced by Ingrid Solberg.",
        comment="Checked.",
        title="Maintenance log",
    )
    async with running_server(home) as client:
        arguments = {
            "filename": "log.odt",
            "content": base64.b64encode(data).decode(),
            "mimeType": "application/vnd.oasis.opendocument.text",
        }
        uploaded = await client.call("upload_to_lightrag", arguments)
        assert not uploaded.is_error, uploaded.content
        assert uploaded.structured_content["status"] == "processed", uploaded.structured_content
        found = await client.call(
            "lightrag_query", {"query": "Who serviced the PELICAN-88 turbine?", "mode": "naive", "top_k": 3}
        )
        hits = [s for s in found.structured_content["sources"] if "Ingrid Solberg" in s["content"]]
        assert hits and hits[0]["filename"] == "log.odt", found.structured_content["sources"]


async def test_a_name_hyphenated_at_a_line_end_is_one_entity_exact_search_finds(home: Path) -> None:
    text = "The QUASAR-5521 reactor was commissioned by Helena Var-\ngas in Lisbon.\n"
    async with running_server(home) as client:
        uploaded = await client.call(
            "upload_to_lightrag",
            {"filename": "reactor.txt", "content": base64.b64encode(text.encode()).decode(), "mimeType": "text/plain"},
        )
        assert not uploaded.is_error, uploaded.content
        exact = await client.call(
            "lightrag_search_entities", {"query": "Helena Vargas", "search_options": {"search_type": "exact"}}
        )
        assert not exact.is_error, exact.content
        assert [e["name"] for e in exact.structured_content["entities"]] == ["Helena Vargas"]
