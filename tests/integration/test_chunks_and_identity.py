"""Through the real server: stored chunks never hold a cut character, and a document is its
name and its bytes (SPEC §4 Ingestion rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine_rows import engine_rows
from tests.integration.harness import Client, running_server
from tests.integration.test_core_flow import sources_of, upload

pytestmark = pytest.mark.anyio

GERMAN = (
    "Die Größe der Übersetzung hängt von äußeren Umständen ab. Straßenbäume säumen die Flüsse, über die "
    "Brücken führen. Öffentliche Einrichtungen übernehmen Verantwortung für Bürgerinnen und Bürger. "
)
CHINESE = "量子计算机利用量子比特进行运算。研究人员在实验室中测量了纠缠态的保真度！这项技术会改变密码学吗？"
ARABIC = "تعتبر اللغة العربية من أقدم اللغات السامية. هل يمكن للحاسوب أن يفهم النصوص العربية؟ "
EMOJI = "Familie 👨\u200d👩\u200d👧\u200d👦 und Flaggen 🇩🇪🇯🇵 mit Akzenten: café, naïve, Ångström. "
MIXED = "\n\n".join(
    (GERMAN * (1 + n % 3)) + (CHINESE * (1 + n % 2)) + (ARABIC if n % 3 == 0 else "") + (EMOJI if n % 4 == 0 else "")
    for n in range(24)
)
ORCHID = "# Orchid survey\n\nThe ORCHID-3390 survey counted 412 ghost orchids in the Fakahatchee Strand, led by Mara Quist.\n"


def data_of(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content




def test_lightrag_own_chunker_would_cut_characters_of_this_text() -> None:
    """The text below is one LightRAG 1.5.7's token-slice chunker damages (so the next test means something)."""
    from lightrag.chunker import chunking_by_token_size

    from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer

    chunks = chunking_by_token_size(make_offline_tokenizer(), MIXED, None, False, 40, 240)
    assert sum(chunk["content"].count("\ufffd") for chunk in chunks) > 0


async def test_stored_chunks_of_german_cjk_arabic_and_emoji_text_hold_no_replacement_character(home: Path) -> None:
    data_dir = home / "data"
    async with running_server(home, WORKING_DIR=str(data_dir), LIGHTRAG_MCP_WAIT_SECONDS="120") as client:
        result = await upload(client, "gemischt.md", MIXED, "text/markdown")
        assert result["status"] == "processed" and result["chunks"] > 5
        chunks = [c for c in engine_rows(data_dir, "lightrag_doc_chunks").values() if c["full_doc_id"] == result["document_id"]]
        assert len(chunks) == result["chunks"]
        assert sum(chunk["content"].count("\ufffd") for chunk in chunks) == 0
        assert all(chunk["tokens"] <= 240 for chunk in chunks)


async def listed_names(client: Client, **arguments: Any) -> list[str]:
    listing = data_of(await client.call("lightrag_list_documents", arguments))
    return [doc["filename"] for doc in listing["documents"]]


async def test_a_different_file_with_the_same_text_is_a_document_of_its_own(home: Path) -> None:
    data_dir = home / "data"
    async with running_server(home, WORKING_DIR=str(data_dir)) as client:
        first = await upload(client, "A.md", ORCHID, "text/markdown")
        second = await upload(client, "B.md", ORCHID, "text/markdown")
        assert (first["action"], second["action"]) == ("indexed", "indexed")
        assert second["status"] == "processed" and second["document_id"] != first["document_id"]
        assert sorted(await listed_names(client)) == ["A.md", "B.md"]
        assert await listed_names(client, search_query="B.md") == ["B.md"]
        found = sources_of(await client.call("lightrag_query", {"query": "How many ghost orchids did ORCHID-3390 count?", "mode": "naive"}))
        assert {"A.md", "B.md"} <= {source["filename"] for source in found}
        again = await upload(client, "B.md", ORCHID, "text/markdown")
        assert (again["action"], again["document_id"]) == ("already_indexed", second["document_id"])
        status = engine_rows(data_dir, "lightrag_doc_status")
        assert not [doc_id for doc_id in status if doc_id.startswith("dup-")]
        assert all(row["status"] == "processed" for row in status.values())


async def test_deleting_the_copy_leaves_the_original_whole(home: Path) -> None:
    async with running_server(home) as client:
        first = await upload(client, "A.md", ORCHID, "text/markdown")
        second = await upload(client, "B.md", ORCHID, "text/markdown")
        deleted = data_of(await client.call("lightrag_delete_documents", {"document_ids": [second["document_id"]]}))
        assert deleted["deleted_documents"] == [second["document_id"]]
        assert await listed_names(client) == ["A.md"]
        found = sources_of(await client.call("lightrag_query", {"query": "How many ghost orchids did ORCHID-3390 count?", "mode": "mix"}))
        assert found and {source["filename"] for source in found} == {"A.md"}
        assert any("412 ghost orchids" in source["content"] for source in found)
        assert first["document_id"] in {source["document_id"] for source in found}


async def test_new_bytes_under_the_same_name_replace_even_when_the_text_is_unchanged(home: Path) -> None:
    async with running_server(home) as client:
        first = await upload(client, "notes.md", ORCHID, "text/markdown")
        resaved = await upload(client, "notes.md", ORCHID.replace("\n", "\r\n"), "text/markdown")  # other bytes, same text
        assert (resaved["action"], resaved["document_id"]) == ("replaced", first["document_id"])
        assert await listed_names(client) == ["notes.md"]


async def test_inserted_text_is_identified_by_its_title_and_text(home: Path) -> None:
    async with running_server(home) as client:
        first = data_of(await client.call("lightrag_insert_text", {"text": ORCHID, "title": "orchids"}))
        again = data_of(await client.call("lightrag_insert_text", {"text": ORCHID, "title": "orchids"}))
        other = data_of(await client.call("lightrag_insert_text", {"text": ORCHID, "title": "orchids copy"}))
        assert (again["action"], again["document_id"]) == ("already_indexed", first["document_id"])
        assert other["action"] == "indexed" and other["status"] == "processed"
        assert sorted(await listed_names(client)) == ["orchids copy.txt", "orchids.txt"]
