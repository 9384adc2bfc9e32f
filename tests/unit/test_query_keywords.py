"""The built-in keyword step (`rag_worker.embedded.text_query`): what LightRAG searches its
entity index (low level) and relation index (high level) with when no LLM is configured."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rag_worker.embedded.text_query import MAX_HIGH_LEVEL_NAMES, extract_query_keywords

KESTREL_PAGES = [
    "The Kestrel Array\n"
    "The Kestrel Array is a radio telescope built on the Altiplano plateau near San Pedro de Atacama in "
    "Chile. It consists of forty-eight dishes, each twelve metres across, spread over a baseline of nine "
    "kilometres. The array observes hydrogen emission from nearby galaxies and maps the magnetic fields "
    "of star-forming clouds.\n"
    "Construction began in March 2019 under the direction of Dr. Miriam Okonkwo, an astronomer at the "
    "University of Cape Town. The site was chosen for its dry air, its altitude of 5,000 metres and its "
    "distance from mobile phone networks, which would otherwise swamp the faint signals.\n"
    "Money\n"
    "In 2021 the Kestrel Array received 42 million euros from the Halvorsen Foundation, spread over six "
    "years. The European Southern Observatory provided the land lease and the power line, and the "
    "Chilean Ministry of Science paid for the access road.\n"
    "Instruments\n"
    "Each dish carries a cryogenic receiver cooled to fifteen kelvin. The correlator, designed by "
    "engineers at the Max Planck Institute for Radio Astronomy in Bonn, combines the signals of all "
    "dishes into images of the sky every ten seconds.",
    "Science Goals\n"
    "The first survey, called DEEPFIELD, will map neutral hydrogen in ten thousand galaxies out to a "
    "distance of one billion light years. A second programme studies pulsars in the Milky Way and times "
    "their pulses to detect gravitational waves with periods of several years.\n"
    "Operations\n"
    "The array is operated remotely from a control room in Santiago. A team of eleven technicians lives "
    "at the base camp at 2,900 metres and drives up to the dishes only for maintenance. Data flows over "
    "a fibre link to the archive in Garching, Germany.\n"
    "Timeline\n"
    "First light was achieved in November 2022. Full operations with all forty-eight dishes are planned "
    "for 2025. The team expects the array to run for at least twenty years.\n"
    "Partners\n"
    "Partners include the University of Cape Town, the Max Planck Institute for Radio Astronomy, the "
    "University of Chile and the Halvorsen Foundation. Prof. Daniel Reyes of the University of Chile "
    "leads the pulsar programme.",
]
KESTREL_QUESTION = "Who funded the Kestrel Array project and how much?"


def test_high_level_keywords_lead_with_the_names_asked_about() -> None:
    high, low = extract_query_keywords(KESTREL_QUESTION)
    assert low == ["Kestrel Array"]
    assert high[0] == "Kestrel Array" and {"funded", "project"} <= set(high)


def test_identifiers_lead_both_lists() -> None:
    high, low = extract_query_keywords("Who built the HERON-1000 prototype?")
    assert low == ["HERON-1000"]
    assert high == ["HERON-1000", "built", "prototype"]


def test_a_question_without_names_searches_relations_with_its_topic() -> None:
    high, low = extract_query_keywords("What is the secret launch code of the scheduler?")
    assert high == ["secret launch code", "secret", "launch", "code", "scheduler"]
    assert low == ["secret launch code", "scheduler"]


def test_many_names_leave_room_for_the_topic() -> None:
    query = "Did Alice Johnson, Bob Stone, Carol White and Dan Brown fund the Zurich observatory?"
    high, _ = extract_query_keywords(query)
    assert len([k for k in high if k[0].isupper()]) == MAX_HIGH_LEVEL_NAMES
    assert "fund" in high and "observatory" in high


def test_keywords_are_deduplicated_and_bounded() -> None:
    high, low = extract_query_keywords("Kestrel Array kestrel array " + " ".join(f"topic{i} word{i}" for i in range(20)))
    assert len(high) <= 8 and len(low) <= 8
    assert len({k.casefold() for k in high}) == len(high)


@pytest.fixture
async def kestrel_rag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """The two-page Kestrel Array PDF indexed as the worker indexes it (built-in extractor, packaged model)."""
    from config.settings import load_settings
    from rag_worker.bindings import build_components
    from rag_worker.ingest.pdf import extract_pdf
    from rag_worker.storage.lightrag_setup import import_lightrag, new_lightrag
    from tests.fixtures.documents import make_pdf

    monkeypatch.chdir(tmp_path)  # LightRAG reads ./.env
    import_lightrag()
    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    rag = await new_lightrag(tmp_path / "data", f"kestrel_{uuid.uuid4().hex[:8]}", components)
    text = extract_pdf(make_pdf(KESTREL_PAGES, title="The Kestrel Array")).text
    await rag.ainsert(text, file_paths=["kestrel-array.pdf"])
    try:
        yield rag
    finally:
        await rag.finalize_storages()


@pytest.mark.anyio
async def test_every_mode_finds_who_funded_the_kestrel_array(kestrel_rag: Any) -> None:
    # Global mode used to search relations with "funded, project" only, which scored under
    # LightRAG's cosine threshold against "received 42 million euros from": NO_RESULTS_FOUND.
    from protocol.methods import QUERY
    from rag_worker.operations.querying import query_param

    for mode in ("naive", "local", "global", "hybrid", "mix"):
        args = QUERY.with_defaults({"query": KESTREL_QUESTION, "mode": mode})
        result = await kestrel_rag.aquery_data(KESTREL_QUESTION, query_param(args, stream=False, with_llm=False))
        passages = [" ".join(str(c.get("content")).split()) for c in (result.get("data") or {}).get("chunks") or []]
        assert result["status"] == "success", (mode, result.get("message"))
        assert any("42 million euros from the Halvorsen Foundation" in p for p in passages), (mode, passages)
