"""Office details a reader sees or does not (issue 27, item 13): spreadsheet print placeholders
are not text, and a TSV/CSV title line above the column names is a title, not the header."""

from __future__ import annotations

from rag_worker.ingest.data_files import extract_csv
from rag_worker.ingest.extraction import extract_document
from rag_worker.ingest.formats import DocFormat
from tests.fixtures.reader_documents import make_ods_with_print_fields


def test_ods_print_placeholders_are_not_indexed_but_header_text_is() -> None:
    document = extract_document(make_ods_with_print_fields("MARLIN pump 4200", "Harbour office budget"), DocFormat.ODS)
    assert "Harbour office budget" in document.text and "MARLIN pump 4200" in document.text
    assert "???" not in document.text
    assert "99" not in document.text and "Page" not in document.text


def test_tsv_title_line_above_the_column_names_is_its_title_not_its_header() -> None:
    data = b"Sales report 2024\t\t\nregion\tamount\tmanager\nnorth\t4200\tIngrid Dahl\n"
    document = extract_csv(data)
    assert document.title == "Sales report 2024"
    assert document.text.splitlines() == ["Sales report 2024", "region: north; amount: 4200; manager: Ingrid Dahl"]


def test_csv_whose_first_row_names_the_columns_is_read_as_before() -> None:
    assert extract_csv(b"region,amount\nnorth,4200\n").text == "region: north; amount: 4200"
    assert extract_csv(b"name\nAda\nGrace\n").text == "name: Ada\nname: Grace"
