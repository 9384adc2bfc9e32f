"""The wire contract between `mcp_front` and `rag_worker`: framing, messages, methods, errors.

Both processes import this package; nothing here does I/O policy or imports LightRAG.
"""

from protocol.endpoint import JsonRpcEndpoint, OutgoingRequest, PeerGone
from protocol.errors import ERROR_TABLE, ErrorCode, JsonRpcCode, RagError
from protocol.framing import FrameError, FrameReader, FrameTooLarge, decode_frame, encode_frame
from protocol.messages import ErrorObject, InvalidMessage, Notification, Request, Response, parse_message
from protocol.methods import METHODS, PROTOCOL_VERSION
from protocol.schema import MethodSpec

__all__ = [
    "ERROR_TABLE",
    "ErrorCode",
    "ErrorObject",
    "FrameError",
    "FrameReader",
    "FrameTooLarge",
    "InvalidMessage",
    "JsonRpcEndpoint",
    "JsonRpcCode",
    "METHODS",
    "MethodSpec",
    "Notification",
    "OutgoingRequest",
    "PROTOCOL_VERSION",
    "PeerGone",
    "RagError",
    "Request",
    "Response",
    "decode_frame",
    "encode_frame",
    "parse_message",
]
