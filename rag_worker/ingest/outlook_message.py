"""Outlook messages (.msg) read as the e-mails they are (issue 27 item 14).

A .msg file is an OLE2 compound file (read with `olefile`, BSD) holding MAPI properties in the
layout MS-OXMSG documents: each string or binary property is a stream `__substg1.0_IIIITTTT`
(property id, type), fixed-size ones (dates) sit in `__properties_version1.0`, and each
attachment is a storage `__attach_version1.0_#NNNNNNNN` with its own properties (an attached
message is a sub-storage `__substg1.0_3701000D` laid out like a message).

The message is turned into a standard `email.message.EmailMessage` (From, To, Cc, Date, Subject,
the plain body, else the HTML one; attachments as MIME parts, attached messages as forwarded
`message/rfc822` parts) and read by the .eml reader, so its attachments are read by their own
formats, named `message.msg/attachment.pdf`, within the same bounds as an e-mail's.
"""

from __future__ import annotations

import codecs
import email.policy
import email.utils
import logging
import struct
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from io import BytesIO

import olefile

from .containers import MAX_DEPTH, MAX_EXPANDED_BYTES
from .email_message import extract_email
from .extracted import ExtractedDocument, ExtractOptions
from .failures import Failure, refuse
from .zip_scan import zip_bomb

logger = logging.getLogger(__name__)

# Property ids (MS-OXPROPS) of what a reader sees.
_SUBJECT = 0x0037
_SENDER_NAME = 0x0C1A
_SENDER_ADDRESS = 0x0C1F
_DISPLAY_TO = 0x0E04
_DISPLAY_CC = 0x0E03
_BODY = 0x1000
_HTML = 0x1013
_SUBMIT_TIME = 0x0039
_DELIVERY_TIME = 0x0E06
_INTERNET_CODEPAGE = 0x3FDE  # of the HTML body's bytes
_MESSAGE_CODEPAGE = 0x3FFD  # of the 8-bit string properties
_ATTACH_DATA = 0x3701
_ATTACH_LONG_NAME = 0x3707
_ATTACH_SHORT_NAME = 0x3704
_DISPLAY_NAME = 0x3001
# Property types: 8-bit string, UTF-16LE string, binary, embedded object (an attached message), time.
_STRING8, _UNICODE, _BINARY, _OBJECT, _SYSTIME = 0x001E, 0x001F, 0x0102, 0x000D, 0x0040
_ATTACHMENT_PREFIX = "__attach_version1.0_#"
_EMBEDDED = f"__substg1.0_{_ATTACH_DATA:04X}{_OBJECT:04X}"
_PROPERTIES = "__properties_version1.0"
# The properties stream starts with a header: 32 bytes for the message itself, 24 for an attached one.
_TOP_HEADER, _EMBEDDED_HEADER = 32, 24
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)


class _Storage:
    """One message (the file, or a message attached to it) inside the compound file."""

    def __init__(self, ole: olefile.OleFileIO, path: list[str], header: int) -> None:
        self.ole, self.path, self.header = ole, path, header

    def stream(self, name: str, limit: int = MAX_EXPANDED_BYTES) -> bytes | None:
        path = [*self.path, name]
        if not self.ole.exists(path) or self.ole.get_type(path) != olefile.STGTY_STREAM:
            return None
        if self.ole.get_size(path) > limit:
            raise zip_bomb(f"the Outlook message holds a part of more than {MAX_EXPANDED_BYTES:,} bytes")
        data: bytes = self.ole.openstream(path).read()
        return data

    def text(self, prop: int) -> str:
        """A string property, UTF-16 or 8-bit (in the message's code page), "" when absent."""
        unicode = self.stream(f"__substg1.0_{prop:04X}{_UNICODE:04X}")
        if unicode is not None:
            return unicode.decode("utf-16-le", errors="replace").rstrip("\x00")
        narrow = self.stream(f"__substg1.0_{prop:04X}{_STRING8:04X}")
        if narrow is None:
            return ""
        return narrow.decode(self.codepage(_MESSAGE_CODEPAGE, _INTERNET_CODEPAGE), errors="replace").rstrip("\x00")

    def binary(self, prop: int) -> bytes | None:
        return self.stream(f"__substg1.0_{prop:04X}{_BINARY:04X}")

    def fixed(self, prop: int, kind: int) -> bytes | None:
        """The 8-byte value of a fixed-size property from the properties stream."""
        table = self.stream(_PROPERTIES) or b""
        for offset in range(self.header, len(table) - 15, 16):
            tag = struct.unpack_from("<I", table, offset)[0]
            if tag == (prop << 16) | kind:
                return table[offset + 8 : offset + 16]
        return None

    def codepage(self, *props: int) -> str:
        """The Python codec of the first code page property present (windows-1252 when none is)."""
        number = 1252
        for prop in props:
            value = self.fixed(prop, 0x0003)
            if value:
                number = struct.unpack("<I", value[:4])[0]
                break
        name = {65001: "utf-8", 20127: "ascii", 28591: "latin-1"}.get(number, f"cp{number}")
        try:
            codecs.lookup(name)
        except LookupError:
            return "cp1252"
        return name

    def children(self, prefix: str) -> list[list[str]]:
        """The storages directly inside this one whose names start with `prefix`, in order."""
        depth = len(self.path)
        names = {entry[depth] for entry in self.ole.listdir(streams=False, storages=True)
                 if len(entry) > depth and entry[:depth] == self.path and entry[depth].startswith(prefix)}
        return [[*self.path, name] for name in sorted(names)]


def _date(storage: _Storage) -> str:
    for prop in (_SUBMIT_TIME, _DELIVERY_TIME):
        value = storage.fixed(prop, _SYSTIME)
        if value:
            ticks = struct.unpack("<Q", value)[0]
            try:
                return email.utils.format_datetime(_FILETIME_EPOCH + timedelta(microseconds=ticks // 10))
            except (OverflowError, ValueError):
                return ""
    return ""


def _header(value: str) -> str:
    """A property as one header line (a value may hold line breaks or NULs; headers cannot)."""
    return " ".join(value.replace("\x00", " ").split())


def _message(storage: _Storage, depth: int) -> EmailMessage:
    message = EmailMessage(policy=email.policy.default)
    sender = _header(storage.text(_SENDER_NAME))
    address = _header(storage.text(_SENDER_ADDRESS))
    for name, value in (
        ("From", f"{sender} <{address}>" if sender and "@" in address and sender != address else sender or address),
        ("To", _header(storage.text(_DISPLAY_TO))),
        ("Cc", _header(storage.text(_DISPLAY_CC))),
        ("Date", _date(storage)),
        ("Subject", _header(storage.text(_SUBJECT))),
    ):
        if value:
            try:
                message[name] = value
            except (ValueError, TypeError):  # a value the header parser rejects is one field's loss
                logger.info("msg: header %s unreadable", name, exc_info=True)
    body = storage.text(_BODY)
    html = storage.binary(_HTML) or storage.text(_HTML).encode("utf-8")
    if body.strip():
        message.set_content(body)
    elif html.strip():
        message.set_content(html.decode(storage.codepage(_INTERNET_CODEPAGE), errors="replace"), subtype="html")
    for number, path in enumerate(storage.children(_ATTACHMENT_PREFIX), start=1):
        _attach(message, _Storage(storage.ole, path, 8), number, depth)
    return message


def _attach(message: EmailMessage, attachment: _Storage, number: int, depth: int) -> None:
    name = (attachment.text(_ATTACH_LONG_NAME) or attachment.text(_ATTACH_SHORT_NAME)
            or attachment.text(_DISPLAY_NAME) or f"attachment-{number}")
    if attachment.ole.exists([*attachment.path, _EMBEDDED]):
        if depth >= MAX_DEPTH:
            raise refuse(Failure.NESTED_TOO_DEEP, f"The Outlook message holds messages attached more than {MAX_DEPTH} deep; "
                         f"at most {MAX_DEPTH} levels are opened.", details={"max_depth": MAX_DEPTH})
        inner = _message(_Storage(attachment.ole, [*attachment.path, _EMBEDDED], _EMBEDDED_HEADER), depth + 1)
        # The e-mail reader names an attached message `name.eml`.
        message.add_attachment(inner, filename=name.removesuffix(".msg").removesuffix(".eml"))
        return
    data = attachment.binary(_ATTACH_DATA)
    if data:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)


def msg_to_email(data: bytes) -> EmailMessage:
    """The Outlook message `data` as a standard e-mail; refuses a file olefile cannot open."""
    try:
        ole = olefile.OleFileIO(BytesIO(data))
    except (OSError, ValueError, struct.error) as exc:
        logger.info("msg: cannot open the compound file", exc_info=True)
        raise refuse(Failure.DAMAGED_DOCUMENT, "The Outlook message is damaged: its container cannot be opened.") from exc
    with ole:
        try:
            return _message(_Storage(ole, [], _TOP_HEADER), 0)
        except (OSError, ValueError, struct.error, UnicodeError) as exc:
            logger.info("msg: unreadable message", exc_info=True)
            raise refuse(Failure.DAMAGED_DOCUMENT, "The Outlook message is damaged: its properties cannot be read.") from exc


def extract_msg(data: bytes, options: ExtractOptions) -> ExtractedDocument:
    """An Outlook message's headers and body, then each attachment under its `message.msg/attachment` heading."""
    message = msg_to_email(data)
    return extract_email(message.as_bytes(policy=email.policy.default), options)
