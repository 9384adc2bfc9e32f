"""Old binary Office files (DOC, XLS, PPT) and password-protected new ones: both are OLE2 compound files.

Neither can be read here, but the fix differs: a DOC wants converting to DOCX, an encrypted
DOCX (an `EncryptedPackage` stream inside a compound file) wants its password removed.  The
extension, else the declared MIME type, says which program's "Save As" to name.
"""

from __future__ import annotations

import struct
from io import BytesIO

from .failures import Failure

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# The stream name an encrypted OOXML package is stored under, as the directory holds it (UTF-16LE).
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
# The stream name prefix of an Outlook message's properties, as the directory holds it (UTF-16LE).
_MAPI_PROPERTY_STREAM = "__substg1.0_".encode("utf-16-le")

LEGACY_EXTENSIONS: dict[str, Failure] = {
    ".doc": Failure.LEGACY_WORD,
    ".dot": Failure.LEGACY_WORD,
    ".wps": Failure.LEGACY_WORD,
    ".xls": Failure.LEGACY_EXCEL,
    ".xlt": Failure.LEGACY_EXCEL,
    ".xlw": Failure.LEGACY_EXCEL,
    ".ppt": Failure.LEGACY_POWERPOINT,
    ".pps": Failure.LEGACY_POWERPOINT,
    ".pot": Failure.LEGACY_POWERPOINT,
}
_BY_TARGET = {
    ".docx": Failure.LEGACY_WORD,
    ".xlsx": Failure.LEGACY_EXCEL,
    ".pptx": Failure.LEGACY_POWERPOINT,
    "application/msword": Failure.LEGACY_WORD,
    "application/vnd.ms-excel": Failure.LEGACY_EXCEL,
    "application/vnd.ms-powerpoint": Failure.LEGACY_POWERPOINT,
}


def is_ole2(data: bytes) -> bool:
    """True for an OLE2 compound file (old Office, or an encrypted new one)."""
    return data.startswith(OLE2_MAGIC)


def is_encrypted_ooxml(data: bytes) -> bool:
    """True for a password-protected DOCX/XLSX/PPTX (an OLE2 file holding an `EncryptedPackage`)."""
    return is_ole2(data) and _ENCRYPTED_PACKAGE in data[:1_048_576]


def is_outlook_message(data: bytes) -> bool:
    """True for an Outlook .msg file (an OLE2 file whose streams hold MAPI properties, `__substg1.0_…`)."""
    if not is_ole2(data):
        return False
    if _MAPI_PROPERTY_STREAM in data[:1_048_576]:
        return True
    # A large message may keep its directory after its attachments: list it.
    import olefile

    try:
        with olefile.OleFileIO(BytesIO(data)) as ole:
            return any(entry[0].startswith("__substg1.0_") for entry in ole.listdir())
    except (OSError, ValueError, IndexError, struct.error):
        return False


def describe_ole2(data: bytes) -> str:
    """What an OLE2 file is, for messages."""
    if is_encrypted_ooxml(data):
        return "a password-protected Office file"
    if is_outlook_message(data):
        return "an Outlook message (MSG)"
    return "an old binary Office file (DOC, XLS or PPT)"


def legacy_failure(data: bytes, ext: str, mime: str | None) -> Failure | None:
    """The refusal for an OLE2 upload named or declared as Office, or a legacy extension; None otherwise."""
    if is_outlook_message(data):
        # Read when named .msg (or not named); named as an Office file, it is told its real type.
        return Failure.OUTLOOK_MESSAGE if ext and ext != ".msg" else None
    if ext in LEGACY_EXTENSIONS:
        return Failure.PASSWORD_PROTECTED_OFFICE if is_encrypted_ooxml(data) else LEGACY_EXTENSIONS[ext]
    if not is_ole2(data):
        return None
    if is_encrypted_ooxml(data):
        return Failure.PASSWORD_PROTECTED_OFFICE
    return _BY_TARGET.get(ext) or (_BY_TARGET.get(mime) if mime else None)
