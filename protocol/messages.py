"""JSON-RPC 2.0 message model for the worker pipe: requests, responses, notifications, errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.errors import JsonRpcCode, RagError

RequestId = int | str


class InvalidMessage(Exception):
    """A JSON value that is not a JSON-RPC 2.0 message."""


@dataclass(frozen=True)
class ErrorObject:
    """A JSON-RPC error object."""

    code: int
    message: str
    data: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire

    @classmethod
    def from_rag_error(cls, error: RagError) -> ErrorObject:
        return cls(JsonRpcCode.APPLICATION_ERROR, error.message, error.to_data())

    def to_rag_error(self) -> RagError:
        """The client-facing failure this error stands for."""
        return RagError.from_data(self.message, self.data)


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "method": self.method, "params": self.params}


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": self.method, "params": self.params}


@dataclass(frozen=True)
class Response:
    id: RequestId | None
    result: Any = None
    error: ErrorObject | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id}
        if self.error is not None:
            wire["error"] = self.error.to_wire()
        else:
            wire["result"] = self.result
        return wire


Message = Request | Notification | Response


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def parse_message(obj: Any) -> Message:
    """Classify a decoded frame; raises InvalidMessage for anything not JSON-RPC 2.0."""
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise InvalidMessage("not a JSON-RPC 2.0 object")
    if "method" in obj:
        method = obj["method"]
        params = obj.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            raise InvalidMessage("method must be a string and params an object")
        if "id" in obj:
            if not _valid_id(obj["id"]):
                raise InvalidMessage("request id must be a string or an integer")
            return Request(obj["id"], method, params)
        return Notification(method, params)
    if "id" in obj and ("result" in obj or "error" in obj):
        if obj["id"] is not None and not _valid_id(obj["id"]):
            raise InvalidMessage("response id must be a string, an integer or null")
        error = obj.get("error")
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("code"), int):
                raise InvalidMessage("error must be an object with an integer code")
            data = error.get("data")
            return Response(
                obj["id"],
                error=ErrorObject(
                    error["code"], str(error.get("message", "")), data if isinstance(data, dict) else None
                ),
            )
        return Response(obj["id"], result=obj.get("result"))
    raise InvalidMessage("neither a request, a notification nor a response")
