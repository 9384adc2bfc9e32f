"""How the worker serves one method call: the method's spec, its handler, its context.

Handlers register against their spec with `@handles(m.QUERY)`; `rag_worker.handlers` imports
every handler module, so its `HANDLERS` is the whole registry.  Control methods get a bare
context; tool methods get the caller's context from the envelope, their arguments with the
spec's defaults filled in (scripts call the worker without the front), storage failures mapped
to STORAGE_ERROR, and (when the method changes the knowledge base) an entry in the workspace's
audit log.  A named knowledge base that does not exist is created only by a method that changes
the knowledge base (up to LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES); any other call naming one is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from config.logs import correlation_id
from protocol import ErrorCode, MethodSpec, RagError, Request
from protocol import methods as m
from rag_worker.context import RequestContext, WorkerRuntime
from rag_worker.operations.audit import record_call
from rag_worker.storage.errors import with_storage_errors
from rag_worker.storage.knowledge_bases import check_knowledge_base, record_knowledge_base
from rag_worker.storage.shared_readers import WRITING

Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]

_REGISTRY: dict[str, Handler] = {}


def handles(spec: MethodSpec) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `spec` (one handler per method)."""

    def register(handler: Handler) -> Handler:
        if spec.name in _REGISTRY:
            raise RuntimeError(f"{spec.name} already has a handler: {_REGISTRY[spec.name].__qualname__}")
        if m.METHODS.get(spec.name) is not spec:
            raise RuntimeError(f"{spec.name} is not a method of protocol.methods.METHODS")
        _REGISTRY[spec.name] = handler
        return handler

    return register


def registered_handlers() -> Mapping[str, Handler]:
    """Every handler registered so far, by method name."""
    return dict(_REGISTRY)


def audited(spec: MethodSpec) -> bool:
    """A call that changes the knowledge base goes to the workspace's audit log (fault injection does not)."""
    return spec.mutates and not spec.debug_only


async def dispatch(state: WorkerRuntime, handlers: Mapping[str, Handler], request: Request) -> Any:
    # Each request runs in its own task with its own copy of the context variables, so the id
    # stays set for everything logged about this request (the endpoint's too) and needs no reset.
    correlation_id.set(str(request.id))
    spec = m.METHODS.get(request.method)
    handler = handlers.get(request.method)
    if spec is None or handler is None or (spec.debug_only and not state.settings.debug_methods):
        raise RagError(ErrorCode.INVALID_PARAMETER, f"Unknown worker method {request.method!r}.")
    if not spec.tool_method:
        return await handler(RequestContext.control(state, request.id), request.params)
    context = RequestContext.from_envelope(state, request.id, request.params.get("context"))
    correlation_id.set(context.correlation_id)
    settings = state.settings
    if context.call.knowledge_base is not None:  # only a named one needs the disk look (a thread hop)
        await anyio.to_thread.run_sync(  # a read-only call never creates a knowledge base
            lambda: check_knowledge_base(
                settings.data_dir, context.call, creates=spec.mutates, max_count=settings.max_knowledge_bases
            )
        )
    WRITING.set(spec.mutates)  # a reading call may read a shared knowledge base without holding it
    record_knowledge_base(settings.data_dir, context.call)
    arguments = request.params.get("arguments")
    if not isinstance(arguments, dict):
        raise RagError(ErrorCode.INVALID_PARAMETER, "The call has no arguments object.")
    handler = with_storage_errors(handler)
    filled = spec.with_defaults(arguments)
    if audited(spec):
        return await record_call(context, context.tool or request.method, arguments, lambda: handler(context, filled))
    return await handler(context, filled)
