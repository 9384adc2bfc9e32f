"""The one error-code table of lightrag-mcp, and the exception that carries a code.

Every failure a client can see is one of the codes below (the seed-002 codes this server
raises plus the codes the SPEC adds for supervision, identity and ingestion; a code nothing
raises is not listed).  Each code has a default message, a suggested action written for the
calling agent, and whether a retry may help.

Exception tree::

    RagError                 a failure with an ErrorCode; safe to show to a client
    └── (nothing else)       any other exception is INTERNAL_ERROR: its text goes to the
                             log with the correlation id, never to the client

On the worker pipe a `RagError` travels as a JSON-RPC error object whose `data` carries
`error_code`, `suggested_action`, `retryable` and optional `details`
(see `protocol.messages.ErrorObject`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ErrorInfo:
    """What the table says about one code."""

    message: str
    suggested_action: str
    retryable: bool = False


class ErrorCode(enum.StrEnum):
    """Error codes a client may see, in `structuredContent.error_code`."""

    # General
    INVALID_PARAMETER = "INVALID_PARAMETER"
    FORBIDDEN = "FORBIDDEN"
    RATE_LIMITED = "RATE_LIMITED"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    # Supervision and workspaces
    WORKER_RESTARTED = "WORKER_RESTARTED"
    WORKSPACE_BUSY = "WORKSPACE_BUSY"
    REQUEST_CANCELLED = "REQUEST_CANCELLED"
    # LightRAG
    PROCESSING_TIMEOUT = "PROCESSING_TIMEOUT"
    INVALID_QUERY_MODE = "INVALID_QUERY_MODE"
    DOCUMENT_NOT_FOUND = "DOCUMENT_NOT_FOUND"
    ENTITY_NOT_FOUND = "ENTITY_NOT_FOUND"
    RELATIONSHIP_TARGET_NOT_FOUND = "RELATIONSHIP_TARGET_NOT_FOUND"
    INVALID_UPDATE = "INVALID_UPDATE"
    UPDATE_CONFLICT = "UPDATE_CONFLICT"
    DELETION_FORBIDDEN = "DELETION_FORBIDDEN"
    GRAPH_ACCESS_ERROR = "GRAPH_ACCESS_ERROR"
    STORAGE_ERROR = "STORAGE_ERROR"
    CONFIGURATION_ERROR = "CONFIGURATION_ERROR"
    # Ingestion and resources
    INVALID_METADATA = "INVALID_METADATA"
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    FILE_TOO_LARGE = "FILE_TOO_LARGE"
    UNSUPPORTED_FORMAT = "UNSUPPORTED_FORMAT"
    EXTRACTION_FAILED = "EXTRACTION_FAILED"
    PROCESSING_FAILED = "PROCESSING_FAILED"
    RESOURCE_LIMIT_EXCEEDED = "RESOURCE_LIMIT_EXCEEDED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    BACKUP_FAILED = "BACKUP_FAILED"

    @property
    def info(self) -> ErrorInfo:
        return ERROR_TABLE[self]


ERROR_TABLE: dict[ErrorCode, ErrorInfo] = {
    ErrorCode.INVALID_PARAMETER: ErrorInfo(
        "A parameter has an invalid value.",
        "Fix the parameter named in the message and call the tool again.",
    ),
    ErrorCode.FORBIDDEN: ErrorInfo(
        "This operation is not permitted for the caller.",
        "Do not retry; ask the administrator if access is needed.",
    ),
    ErrorCode.RATE_LIMITED: ErrorInfo(
        "Too many calls in a short time.",
        "Wait a minute, then call the tool again.",
        retryable=True,
    ),
    ErrorCode.SERVICE_UNAVAILABLE: ErrorInfo(
        "The knowledge-base service is temporarily unavailable after repeated failures.",
        "Wait about a minute, then retry; check lightrag_health_check for the cause.",
        retryable=True,
    ),
    ErrorCode.INTERNAL_ERROR: ErrorInfo(
        "An internal error occurred.",
        "Retry once; if it persists, report the correlation id to the administrator.",
        retryable=True,
    ),
    ErrorCode.WORKER_RESTARTED: ErrorInfo(
        "The knowledge-base worker stopped while handling this call and is being restarted.",
        "Call the tool again in a few seconds; acknowledged documents are not lost.",
        retryable=True,
    ),
    ErrorCode.WORKSPACE_BUSY: ErrorInfo(
        "This knowledge base is in use by another server process.",
        "Retry in a few seconds, or close the other client that uses the same knowledge base.",
        retryable=True,
    ),
    ErrorCode.REQUEST_CANCELLED: ErrorInfo(
        "The call was cancelled.",
        "Call the tool again if the result is still needed.",
        retryable=True,
    ),
    ErrorCode.PROCESSING_TIMEOUT: ErrorInfo(
        "The operation took longer than its time limit and was stopped.",
        # Timeouts come from a busy server (a large document indexing), not from the request's size.
        "The server was busy; ask again in a minute. After an upload or insert, lightrag_get_status "
        "(lightrag_list_documents without a track id) shows whether the document was queued.",
        retryable=True,
    ),
    ErrorCode.INVALID_QUERY_MODE: ErrorInfo(
        "Unknown query mode.",
        "Use one of: naive, local, global, hybrid, mix, bypass.",
    ),
    ErrorCode.DOCUMENT_NOT_FOUND: ErrorInfo(
        "Document not found.",
        "List documents with lightrag_list_documents and use an existing id.",
    ),
    ErrorCode.ENTITY_NOT_FOUND: ErrorInfo(
        "Entity not found.",
        "Search with lightrag_search_entities and use an existing entity name.",
    ),
    ErrorCode.RELATIONSHIP_TARGET_NOT_FOUND: ErrorInfo(
        "The target entity of a relationship does not exist.",
        "Create the target entity first, or set create_if_missing.",
    ),
    ErrorCode.INVALID_UPDATE: ErrorInfo(
        "The update is not valid.",
        "Fix the update as the message says and call the tool again.",
    ),
    ErrorCode.UPDATE_CONFLICT: ErrorInfo(
        "The entity was changed concurrently.",
        "Read the entity again and re-apply the change.",
        retryable=True,
    ),
    ErrorCode.DELETION_FORBIDDEN: ErrorInfo(
        "The document cannot be deleted now.",
        "Wait for indexing to finish (lightrag_get_status), then retry.",
        retryable=True,
    ),
    ErrorCode.GRAPH_ACCESS_ERROR: ErrorInfo(
        "The knowledge graph could not be read or changed.",
        "Retry; if it persists, check lightrag_health_check.",
        retryable=True,
    ),
    ErrorCode.STORAGE_ERROR: ErrorInfo(
        "The storage backend failed or is unreachable.",
        "Retry shortly; the administrator should check the storage server.",
        retryable=True,
    ),
    ErrorCode.CONFIGURATION_ERROR: ErrorInfo(
        "The server is misconfigured.",
        "Ask the administrator to fix the configuration named in the message.",
    ),
    ErrorCode.INVALID_METADATA: ErrorInfo(
        "The metadata is not valid.",
        "Send metadata as a flat object of short strings, numbers or string lists.",
    ),
    ErrorCode.FILE_NOT_FOUND: ErrorInfo(
        "File not found.",
        "Check the path; it must be inside one of the allowed directories.",
    ),
    ErrorCode.FILE_TOO_LARGE: ErrorInfo(
        "The file exceeds the size limit.",
        "Split the document or upload a smaller file.",
    ),
    ErrorCode.UNSUPPORTED_FORMAT: ErrorInfo(
        "The file format is not supported or does not match its declared type.",
        "Send the file with its correct MIME type and extension.",
    ),
    ErrorCode.EXTRACTION_FAILED: ErrorInfo(
        "No text could be extracted from the file.",
        "Upload an unencrypted, text-based copy of the document.",
    ),
    ErrorCode.PROCESSING_FAILED: ErrorInfo(
        "Processing the document failed.",
        "Check lightrag_get_status for the reason; fix it and upload again.",
    ),
    ErrorCode.RESOURCE_LIMIT_EXCEEDED: ErrorInfo(
        "A resource limit was exceeded.",
        "Ask for less (smaller limits or a narrower filter) and call again.",
    ),
    ErrorCode.QUOTA_EXCEEDED: ErrorInfo(
        "The knowledge base has reached its quota.",
        "Delete documents you no longer need, or ask the administrator for a larger quota.",
    ),
    ErrorCode.BACKUP_FAILED: ErrorInfo(
        "The backup requested before deletion could not be written, so nothing was deleted.",
        "Free disk space or call again without create_backup.",
        retryable=True,
    ),
}


class RagError(Exception):
    """A failure that is safe to show to a client: code, message, suggested action.

    `message` is written for a person or an agent and never contains internal paths,
    exception text or secrets; put those in the log instead.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str | None = None,
        *,
        suggested_action: str | None = None,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        info = code.info
        self.code = code
        self.message = message or info.message
        self.suggested_action = suggested_action or info.suggested_action
        self.retryable = info.retryable if retryable is None else retryable
        self.details = details or {}
        super().__init__(f"{code.value}: {self.message}")

    def to_data(self) -> dict[str, Any]:
        """The `data` member of a JSON-RPC error object for this failure."""
        data: dict[str, Any] = {
            "error_code": self.code.value,
            "suggested_action": self.suggested_action,
            "retryable": self.retryable,
        }
        if self.details:
            data["details"] = self.details
        return data

    @classmethod
    def from_data(cls, message: str, data: dict[str, Any] | None) -> RagError:
        """Rebuild a RagError from a JSON-RPC error's message and data (unknown code → INTERNAL_ERROR)."""
        data = data or {}
        try:
            code = ErrorCode(str(data.get("error_code")))
        except ValueError:
            return cls(ErrorCode.INTERNAL_ERROR)
        details = data.get("details")
        return cls(
            code,
            message,
            suggested_action=data.get("suggested_action"),
            retryable=data.get("retryable"),
            details=details if isinstance(details, dict) else None,
        )


class JsonRpcCode:
    """Numeric JSON-RPC error codes used on the worker pipe."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    APPLICATION_ERROR = -32000  # a RagError; the code is in data.error_code
    REQUEST_CANCELLED = -32800
