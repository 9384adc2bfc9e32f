"""Files that hold other files: ZIP archives of documents and e-mails (.eml) with attachments.

Each item inside is detected and extracted like an upload of its own, by its row of the
format table, and becomes a section of one document headed by its path, `archive.zip/inner.pdf`
or `mail.eml/attachment.pdf`, so a passage found in it names the file it came from.  Items
count against one shared budget however deep they sit: at most `MAX_ITEMS` files,
`MAX_EXPANDED_BYTES` unpacked, `MAX_DEPTH` containers deep, and a zip entry may not
expand more than `MAX_ENTRY_RATIO`-fold (a zip bomb).  Items that cannot be read are
listed in the warnings with the reason; the container is refused only when none can.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from protocol.errors import ErrorCode, RagError

from .extracted import PAGE_SEPARATOR, ExtractedDocument, ExtractOptions, count_words
from .failures import Failure, refuse
from .ooxml import MAX_ENTRY_RATIO, MAX_UNCOMPRESSED_BYTES, RATIO_CHECK_MIN_BYTES, office_kind, open_zip
from .validation import format_size
from .zip_packages import package_kind
from .zip_scan import zip_bomb

logger = logging.getLogger(__name__)

MAX_ITEMS = 500
MAX_EXPANDED_BYTES = MAX_UNCOMPRESSED_BYTES
MAX_DEPTH = 3  # a zip in a zip in a zip is read; one more level is not
#: Warnings listing skipped items stop after this many (the rest are counted).
_MAX_LISTED = 10


@dataclass
class ContainerBudget:
    """What is left to unpack of one upload, shared by every container nested in it."""

    items: int = MAX_ITEMS
    bytes: int = MAX_EXPANDED_BYTES

    def take(self, size: int, name: str) -> None:
        """Count one item of `size` bytes; refuses the upload when the budget is spent."""
        self.items -= 1
        self.bytes -= size
        if self.items < 0:
            raise refuse(
                Failure.TOO_MANY_ENTRIES,
                f"The file holds more than {MAX_ITEMS} files (counting those inside nested archives and e-mails); "
                "at most that many are indexed from one upload.",
                details={"max_items": MAX_ITEMS},
            )
        if self.bytes < 0:
            raise zip_bomb(f"its files expand to more than {format_size(MAX_EXPANDED_BYTES)} (at {name})")


@dataclass
class Item:
    """One file inside a container: its path inside it and its bytes."""

    name: str
    data: bytes


@dataclass
class _Sections:
    """The combined document, page by page, with each item's pages renumbered."""

    pages: list[str] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    empty_pages: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def add(self, path: str, document: ExtractedDocument) -> None:
        base = len(self.pages)
        bounds = [*document.page_offsets, len(document.text) + len(PAGE_SEPARATOR)]
        pages = [document.text[start : end - len(PAGE_SEPARATOR)] for start, end in zip(bounds, bounds[1:], strict=False)]
        pages = pages or [document.text]
        pages[0] = f"## {path}\n\n{pages[0]}"
        self.pages.extend(pages)
        self.ocr_pages.extend(base + page for page in document.ocr_pages)
        self.empty_pages.extend(base + page for page in document.empty_pages)
        self.warnings.extend(f"{path}: {warning}" for warning in document.warnings)


def extract_items(
    items: Iterator[Item],
    outer: str,
    options: ExtractOptions,
    extract: Callable[[Item, ExtractOptions], ExtractedDocument],
    *,
    head: ExtractedDocument | None = None,
    empty_message: str,
) -> ExtractedDocument:
    """One document from `head` (an e-mail's own text) and the items `items` yields, each a section
    headed `outer/name`; `extract` reads one item (detection and its format's extractor)."""
    sections = _Sections()
    if head is not None:
        sections.pages.append(head.text)
        sections.warnings.extend(head.warnings)
    budget = options.container_budget or ContainerBudget()
    for item in items:
        path = f"{outer}/{item.name}"
        budget.take(len(item.data), path)
        inner = dataclasses.replace(options, filename=path, container_depth=options.container_depth + 1,
                                    container_budget=budget)
        if inner.container_depth > MAX_DEPTH:
            raise refuse(
                Failure.NESTED_TOO_DEEP,
                f"{path} is inside more than {MAX_DEPTH} nested archives or e-mails; at most {MAX_DEPTH} levels are opened.",
                details={"max_depth": MAX_DEPTH},
            )
        try:
            sections.add(path, extract(item, inner))
        except RagError as exc:
            if exc.code is ErrorCode.RESOURCE_LIMIT_EXCEEDED:
                raise  # a bomb inside refuses the whole upload
            sections.skipped.append(f"{path} ({_reason(exc.message)})")
    if not any(page.strip() for page in sections.pages):
        reason = f" Skipped: {'; '.join(sections.skipped[:_MAX_LISTED])}." if sections.skipped else ""
        raise refuse(Failure.NO_TEXT, empty_message + reason)
    return _document(sections, head)


def _reason(message: str) -> str:
    """The reason without the list of supported types that may follow it, for one line per item."""
    return message.split(" Supported types:", 1)[0].rstrip(".")[:300]


def _document(sections: _Sections, head: ExtractedDocument | None) -> ExtractedDocument:
    offsets: list[int] = []
    position = 0
    for page in sections.pages:
        offsets.append(position)
        position += len(page) + len(PAGE_SEPARATOR)
    text = PAGE_SEPARATOR.join(sections.pages)
    warnings = list(sections.warnings)
    if sections.skipped:
        shown = "; ".join(sections.skipped[:_MAX_LISTED])
        more = f" and {len(sections.skipped) - _MAX_LISTED} more" if len(sections.skipped) > _MAX_LISTED else ""
        warnings.append(f"{len(sections.skipped)} file(s) inside were not indexed: {shown}{more}.")
    return ExtractedDocument(
        text=text,
        pages=len(sections.pages),
        words=count_words(text),
        page_offsets=offsets,
        title=head.title if head is not None else None,
        warnings=warnings,
        ocr_pages=sections.ocr_pages,
        empty_pages=sections.empty_pages,
    )


# ---------------------------------------------------------------- ZIP archives


def zip_items(data: bytes) -> Iterator[Item]:
    """The files of a zip archive, each read within its declared size (never more), directories and
    hidden or system files (`__MACOSX/`, `.DS_Store`) left out; unsafe archives are refused."""
    archive = open_zip(data)
    if archive is None:
        raise refuse(Failure.DAMAGED_ARCHIVE)
    with archive:
        for info in archive.infolist():
            name = info.filename
            base = name.rsplit("/", 1)[-1]
            if info.is_dir() or name.startswith("__MACOSX/") or base.startswith(".") or not base:
                continue
            if info.flag_bits & 0x1:
                raise refuse(Failure.ENCRYPTED_ARCHIVE)
            if info.file_size >= RATIO_CHECK_MIN_BYTES and info.file_size > MAX_ENTRY_RATIO * max(info.compress_size, 1):
                raise zip_bomb(f"{name} expands {info.file_size // max(info.compress_size, 1):,}-fold")
            if info.file_size > MAX_EXPANDED_BYTES:
                raise zip_bomb(f"{name} expands to more than {format_size(MAX_EXPANDED_BYTES)}")
            try:
                with archive.open(info) as stream:
                    content = stream.read(info.file_size)  # zipfile stops at the declared size and checks the CRC
            except (OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
                logger.info("zip: entry %s cannot be read", name, exc_info=True)
                raise refuse(Failure.DAMAGED_ARCHIVE, f"The archive is damaged: {name} cannot be unpacked.") from exc
            yield Item(name.replace("\\", "/").lstrip("/"), content)


def is_plain_zip(data: bytes) -> bool:
    """A zip that is not an Office, OpenDocument or EPUB package (those have their own rows)."""
    archive = open_zip(data)
    if archive is None:
        return False
    archive.close()
    return office_kind(data) is None and package_kind(data) is None


def read_contained(item: Item, options: ExtractOptions) -> ExtractedDocument:
    """One file inside an archive or e-mail, read by `options.read_item` (detection, then the item's
    row of the format table): set by `extraction.extract_document`. This module cannot import
    detection, which reads the format table, which lists the containers."""
    if options.read_item is None:
        raise RagError(ErrorCode.INTERNAL_ERROR, "An archive was read without a reader for its items.")
    document: ExtractedDocument = options.read_item(item, options)
    return document


def extract_zip(data: bytes, options: ExtractOptions) -> ExtractedDocument:
    """The text of every document in a ZIP archive, each under its `archive.zip/inner` heading."""
    return extract_items(zip_items(data), options.filename or "archive.zip", options, read_contained,
                         empty_message="No file in the archive could be read.")
