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


def workbook_with_comments(*, threaded: bool) -> bytes:
    """A workbook (openpyxl) with a note on B2, as Excel writes one; with `threaded`, also the threaded
    comment and its reply that Excel 365 writes, the note then being Excel's copy for old versions."""
    import io
    import zipfile

    import openpyxl
    from openpyxl.comments import Comment

    from tests.fixtures.documents import rewrite_zip

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Budget"
    sheet.append(["project", "amount"])
    sheet.append(["Orinoco", 4200])
    note = "[Threaded comment] Your version of Excel allows you to read this threaded comment." if threaded else (
        "Ingrid Dahl: Approved by the board in May.")
    sheet["B2"].comment = Comment(note, "Ingrid Dahl")
    out = io.BytesIO()
    workbook.save(out)
    data = out.getvalue()
    if not threaded:
        return data
    rels_part = "xl/worksheets/_rels/sheet1.xml.rels"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        rels = archive.read(rels_part).decode()
    relation = ('<Relationship Id="rIdT1" Target="../threadedComments/threadedComment1.xml" '
                'Type="http://schemas.microsoft.com/office/2017/10/relationships/threadedComment"/>')
    threads = (
        '<ThreadedComments xmlns="http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments">'
        '<threadedComment ref="B2" personId="{P1}" id="{C1}"><text>Approved by the board in May.</text></threadedComment>'
        '<threadedComment ref="B2" personId="{P2}" id="{C2}" parentId="{C1}"><text>Paid on 3 June.</text></threadedComment>'
        "</ThreadedComments>"
    )
    persons = (
        '<personList xmlns="http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments">'
        '<person displayName="Ingrid Dahl" id="{P1}"/><person displayName="Olav Berg" id="{P2}"/></personList>'
    )
    return rewrite_zip(
        data,
        replace={rels_part: rels.replace("</Relationships>", relation + "</Relationships>").encode()},
        add={"xl/threadedComments/threadedComment1.xml": threads.encode(), "xl/persons/person.xml": persons.encode()},
    )


def test_excel_threaded_comments_and_replies_are_indexed_on_their_sheet_without_the_old_versions_copy() -> None:
    text = extract_document(workbook_with_comments(threaded=True), DocFormat.XLSX).text
    assert "Comment B2: Ingrid Dahl: Approved by the board in May." in text
    assert "Comment B2: reply Olav Berg: Paid on 3 June." in text
    assert "Your version of Excel" not in text


def test_excel_notes_are_indexed_with_their_author_once() -> None:
    text = extract_document(workbook_with_comments(threaded=False), DocFormat.XLSX).text
    assert "Comment B2: Ingrid Dahl: Approved by the board in May." in text
    assert text.count("Ingrid Dahl") == 1
