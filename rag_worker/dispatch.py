"""How the worker serves one method call: the method's spec, its handler, its context.

Control methods get a bare context; tool methods get the caller's workspace from the
envelope, storage failures mapped to STORAGE_ERROR, and (when they change the knowledge
base) an entry in the workspace's audit log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from protocol import ErrorCode, RagError, Request
from protocol import methods as m
from rag_worker.context import RequestContext, WorkerRuntime
from rag_worker.storage.errors import with_storage_errors

Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]


async def dispatch(state: WorkerRuntime, handlers: Mapping[str, Handler], request: Request) -> Any:
    spec = m.METHODS.get(request.method)
    handler = handlers.get(request.method)
    if spec is None or handler is None or (spec.debug_only and not state.settings.debug_methods):
        raise RagError(ErrorCode.INVALID_PARAMETER, f"Unknown worker method {request.method!r}.")
    if not spec.tool_method:
        return await handler(RequestContext.control(state, request.id), request.params)
    envelope = request.params.get("context") or {}
    context = RequestContext.from_envelope(state, request.id, envelope)
    arguments = request.params.get("arguments")
    if not isinstance(arguments, dict):
        raise RagError(ErrorCode.INVALID_PARAMETER, "The call has no arguments object.")
    handler = with_storage_errors(handler)
    if envelope.get("audit"):  # a mutating call: it goes to the workspace's audit log
        from rag_worker.operations.audit import record_call

        return await record_call(context, str(envelope.get("tool") or request.method), arguments, handler)
    return await handler(context, arguments)
