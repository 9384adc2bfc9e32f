"""E-mails (.eml, RFC 822 / MIME) to text: the headers a reader sees, the body, and the attachments.

Parsed with the standard library's `email` package (modern policy: encoded words, charsets and
transfer encodings decoded).  The body is the plain-text part, else the HTML part read as a
page; attachments (and forwarded messages) are yielded as `containers.Item`s, so each is
read by its own format's extractor and named `mail.eml/attachment.pdf`.
"""

from __future__ import annotations

import email
import email.policy
import logging
import re
from collections.abc import Iterator
from email.message import EmailMessage, Message

from .containers import Item, extract_items, read_contained
from .extracted import ExtractedDocument, ExtractOptions, count_words
from .html_text import extract_html

logger = logging.getLogger(__name__)

_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
# The first lines of an e-mail are header fields; these are the ones every mail program writes.
_HEADER_LINE_RE = re.compile(rb"^(?:From|To|Subject|Date|Received|Return-Path|Message-ID|MIME-Version|Delivered-To|"
                             rb"X-[A-Za-z-]+|Content-Type):[ \t]", re.IGNORECASE | re.MULTILINE)
_SNIFF_BYTES = 8192


def looks_like_email(data: bytes) -> bool:
    """True when the start is RFC 822 header lines: at least two known fields before the first blank line."""
    head = data[:_SNIFF_BYTES].split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    return b"\x00" not in head and len(_HEADER_LINE_RE.findall(head)) >= 2


def parse_email(data: bytes) -> EmailMessage:
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)  # the default policy's message factory
    return message


def _header_value(message: Message, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, TypeError, IndexError):  # a malformed header is one field's loss
        logger.info("email: header %s unreadable", name, exc_info=True)
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _part_text(part: Message) -> str:
    """A text part decoded with its declared charset (replacement characters for bytes it cannot decode)."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:  # an unknown charset name
        return payload.decode("utf-8", errors="replace")


def email_head(message: EmailMessage) -> ExtractedDocument:
    """The e-mail's own text: `From: …`, `To: …`, `Date: …`, `Subject: …` lines and the body; its title is the subject."""
    lines = [f"{name}: {value}" for name in _SHOWN_HEADERS if (value := _header_value(message, name))]
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        text = _part_text(body)
        if body.get_content_subtype() == "html" and text.strip():
            try:
                text = extract_html(text.encode("utf-8")).text
            except Exception:  # noqa: BLE001 - a body that is no page is kept as it is
                logger.info("email: HTML body unreadable", exc_info=True)
        lines += ["", text.strip()]
    text = "\n".join(lines).strip()
    subject = _header_value(message, "Subject") or None
    return ExtractedDocument(text=text, pages=1, words=count_words(text), page_offsets=[0], title=subject)


def email_attachments(message: EmailMessage) -> Iterator[Item]:
    """The attached files (and forwarded messages, as `.eml`), named as the sender named them."""
    for number, part in enumerate(message.iter_attachments(), start=1):
        if part.get_content_type() == "message/rfc822":
            inner = part.get_payload()
            forwarded = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(forwarded, Message):
                yield Item(f"{_safe_name(part.get_filename(), number, 'forwarded')}.eml".replace(".eml.eml", ".eml"),
                           forwarded.as_bytes(policy=email.policy.default))
            continue
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes) and payload:
            yield Item(_safe_name(part.get_filename(), number, "attachment"), payload)


def _safe_name(name: str | None, number: int, fallback: str) -> str:
    """An attachment's file name without folders (a sender may write `../x`), or `attachment-2`."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base or f"{fallback}-{number}"


def extract_email(data: bytes, options: ExtractOptions) -> ExtractedDocument:
    """An e-mail's headers and body, then each attachment under its `mail.eml/attachment` heading."""
    message = parse_email(data)
    return extract_items(email_attachments(message), options.filename or "message.eml", options, read_contained,
                         head=email_head(message),
                         empty_message="The e-mail has no text and no attachment that could be read.")
