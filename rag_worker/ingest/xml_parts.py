"""Reading XML parts of a checked package (DOCX footnotes, PPTX comments, OpenDocument content).

Every part has already passed `zip_scan.scan_entry` (bounded size, no entity declarations);
the parser here refuses entities, DTD loading and network access anyway, so no XML read by
the ingest code can expand or fetch anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from lxml import etree

# Word's tab and line-break elements separate words that sit in different runs.
_BREAKS = frozenset({"tab", "br", "cr"})
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def parse_xml(blob: bytes) -> etree._Element:
    """The root element of `blob`; raises `etree.XMLSyntaxError` on malformed XML."""
    return etree.fromstring(blob, parser=_PARSER)


def local_name(element: etree._Element) -> str:
    """`p` for `{urn:…}p`; "" for comments and processing instructions."""
    tag = element.tag
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def children_named(element: etree._Element, name: str) -> Iterator[etree._Element]:
    """Direct children whose local name is `name`, whatever their namespace."""
    return (child for child in element if local_name(child) == name)


def text_of(element: etree._Element, text_tags: Iterable[str] = ("t",)) -> str:
    """The text of the descendants named in `text_tags` (Word's `w:t`, DrawingML's `a:t`), on one line."""
    wanted = frozenset(text_tags)
    parts: list[str] = []
    for node in element.iter():
        name = local_name(node)
        if name in wanted:
            parts.append(node.text or "")
        elif name in _BREAKS:
            parts.append(" ")
    return " ".join("".join(parts).split())


def paragraphs_of(element: etree._Element, paragraph_tag: str = "p", text_tags: Iterable[str] = ("t",)) -> str:
    """The text of each paragraph below `element`, paragraphs separated by a space."""
    paragraphs = [text_of(p, text_tags) for p in element.iter() if local_name(p) == paragraph_tag]
    return " ".join(p for p in paragraphs if p)
