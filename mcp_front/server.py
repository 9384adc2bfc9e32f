"""The MCP server: list tools, validate and route calls, supervise the worker.

Built on the SDK's low-level `Server` (handlers get the raw call params, where patched
LibreChat puts `userId`).  The worker is started in the lifespan, in the background, so
`initialize` and `tools/list` never wait for it.  stdio by default; `--transport http` puts
the same server behind Streamable HTTP (mcp_front/http_transport.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import sys
import time
import urllib.parse
import uuid
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from config.backends import INTERACTIVE_DRIVER_DEFAULTS
from config.logs import correlation_id, setup_logging
from config.settings import (
    ConfigError,
    Settings,
    env_example,
    settings_markdown,
)
from mcp_front.call_stats import CallStats
from mcp_front.catalogue import TOOLS, Catalogue, Tool, tools_markdown
from mcp_front.front_call import CallWorker, FrontCall
from mcp_front.health import FRONT_VERSION
from mcp_front.identity import Identity, caller_of, resolve_caller_identity, resolve_identity, split_roles
from mcp_front.knowledge_bases import take_knowledge_base
from mcp_front.rate_limit import RateLimiter
from mcp_front.resources import DocumentResources, WorkspaceSessions
from mcp_front.results import error_result, tool_result
from mcp_front.shared_kbs import answer, reached
from mcp_front.startup import PROJECT_ROOT, check_http_exposure, checked_settings
from mcp_front.supervisor import WorkerSupervisor, front_rss_mb
from mcp_front.wire import answer_unreadable_lines
from mcp_front.worker_process import worker_command
from protocol import ErrorCode, MethodSpec, RagError
from protocol.context import CallContext

log = logging.getLogger("mcp_front")

ROOTS_TIMEOUT = 5.0
#: The server's instructions, sentence by sentence: a sentence that names tools is said only when
#: the profile advertises one of them (a small agent must not be sent after a tool it lacks).
INSTRUCTION_SENTENCES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((), "LightRAG knowledge base: each user has a private one."),
    (("lightrag_insert_file", "lightrag_batch_process"), "Index documents by upload or by path, then query them."),
    ((), "Documents are named by their file names; every tool that takes document ids takes names too."),
    (("lightrag_get_status",), "Long indexing returns a track id: poll lightrag_get_status."),
    (("lightrag_read_document",), "To summarise or outline one document, read it with lightrag_read_document."),
    ((), "If a call fails with WORKER_RESTARTED or SERVICE_UNAVAILABLE, wait a few seconds and retry."),
)
#: Said once per session, not in every query result: without an LLM, queries return passages.
NO_LLM_INSTRUCTIONS = (
    "No LLM is configured: queries return the retrieved passages with their sources, not a written "
    "answer; answer from them and cite the file names."
)


def instructions_for(settings: Settings, catalogue: Catalogue) -> str:
    """The server's instructions for the advertised tools; the no-LLM note only when no LLM is configured."""
    advertised = catalogue.advertised_tools()
    sentences = [text for needs, text in INSTRUCTION_SENTENCES if not needs or advertised & set(needs)]
    if not settings.llm_binding:
        sentences.append(NO_LLM_INSTRUCTIONS)
    return " ".join(sentences)


class FrontApp:
    """The front's handlers and the state they share."""

    def __init__(
        self,
        settings: Settings,
        catalogue: Catalogue,
        supervisor: WorkerSupervisor,
        sessions: WorkspaceSessions | None = None,
    ) -> None:
        self.settings = settings
        self.catalogue = catalogue
        self.supervisor = supervisor
        self.started = time.monotonic()
        self.call_stats = CallStats()
        self.rate_limiter = RateLimiter(settings.rate_limit_per_minute)
        # Which connections act for which workspace: they hear resources/list_changed for it.
        self.sessions = sessions if sessions is not None else WorkspaceSessions()

    async def on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.catalogue.list_tools())

    async def on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        cid = uuid.uuid4().hex[:12]
        token = correlation_id.set(cid)
        try:
            tool = self.catalogue.lookup(params.name)
            if tool is None:
                raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name[:100]}")
            try:
                identity = self.identify(ctx)
                self.sessions.watch(identity.workspace, ctx)
                arguments = self.catalogue.arguments_for(tool, params.name, params.arguments or {})
                knowledge_base, arguments = take_knowledge_base(tool, arguments)
                filled = self.catalogue.validate(tool, arguments)
                if tool.rate_limited:
                    self.rate_limiter.check(identity.workspace)  # the caller's, whichever knowledge base
                target = reached(self.settings, identity, tool, knowledge_base)
                with self.call_stats.timing(target.workspace, tool.name, filled) as timing:
                    result = timing.result = await self._answer(ctx, tool, identity, arguments, filled, cid, knowledge_base)
                return tool_result(result, tool.render(result))
            except RagError as exc:
                log.info("%s failed: %s", params.name, exc)
                return error_result(exc, cid)
            except Exception:
                log.exception("%s failed unexpectedly", params.name)
                return error_result(RagError(ErrorCode.INTERNAL_ERROR), cid)
        finally:
            correlation_id.reset(token)

    def identify(self, ctx: ServerRequestContext[Any]) -> Identity:
        """Who sent this request, and which workspace that is (raises RagError FORBIDDEN).

        Every handler that touches a user's data (tools, resources) asks here.  Over HTTP the
        identity gate has authenticated the request (`ctx.request` is the Starlette request);
        without authentication (loopback only) and over stdio, stdio's rules apply."""
        caller = caller_of(ctx.request)
        if caller is not None and caller.user_id is not None:
            return resolve_caller_identity(
                caller.user_id,
                caller.source,
                ctx.params,
                ctx.meta,
                self.settings.default_workspace,
                self.settings.http_same_users,
                caller.roles,
                caller.email,
            )
        identity = resolve_identity(ctx.params, ctx.meta, self.settings.user_id, self.settings.default_workspace)
        if identity.source not in ("env", "default"):
            return identity  # a user the client names: the environment's role and e-mail are not theirs
        return dataclasses.replace(
            identity, roles=split_roles(self.settings.user_role), email=self.settings.user_email or None
        )

    async def _answer(
        self,
        ctx: ServerRequestContext[Any],
        tool: Tool,
        identity: Identity,
        arguments: dict[str, Any],
        filled: dict[str, Any],
        cid: str,
        knowledge_base: str | None,
    ) -> dict[str, Any]:
        """Serve the call in the knowledge base it names (`mcp_front.shared_kbs.answer`)."""

        async def serve(who: Identity, args: dict[str, Any], kb: str | None, method: MethodSpec | None = None) -> dict[str, Any]:
            return await self._serve(ctx, tool, who, args, filled, cid, kb, method)

        return await answer(self.settings, tool, identity, knowledge_base, arguments, serve)

    async def _serve(
        self,
        ctx: ServerRequestContext[Any],
        tool: Tool,
        identity: Identity,
        arguments: dict[str, Any],
        filled: dict[str, Any],
        cid: str,
        knowledge_base: str | None = None,
        method: MethodSpec | None = None,
    ) -> dict[str, Any]:
        """Answer the call: a front-answered tool with the defaults filled in; else the worker, which
        gets what the caller sent (it fills the same defaults, and audits the call as sent), by the
        tool's method or `method` (a step of a search across knowledge bases)."""
        progress_token = (ctx.meta or {}).get("progress_token")
        context = CallContext(
            workspace=identity.workspace,
            correlation_id=cid,
            tool=tool.name,
            user_id=identity.user_id,
            progress=progress_token is not None,
            roots=tuple(await client_roots(ctx)) if tool.uses_paths else (),
            knowledge_base=knowledge_base,
        ).to_wire()

        async def forward_progress(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        async def call_worker(method: str, args: dict[str, Any], timeout: float) -> Any:
            return await self.supervisor.call(
                method,
                {"context": context, "arguments": args},
                timeout=timeout,
                on_progress=forward_progress if progress_token is not None else None,
            )

        if tool.front_handler is not None:
            return await tool.front_handler(self._front_call(identity, filled, call_worker))
        spec = method or tool.method
        result = await call_worker(spec.name, arguments, spec.timeout or self.settings.call_timeout)
        if not isinstance(result, dict):
            raise RagError(ErrorCode.INTERNAL_ERROR)
        return result

    def _front_call(self, identity: Identity, arguments: dict[str, Any], call_worker: CallWorker) -> FrontCall:
        return FrontCall(
            settings=self.settings,
            identity=identity,
            arguments=arguments,
            call_worker=call_worker,
            snapshot=self.supervisor.snapshot(),
            worker_ready=self.supervisor.is_ready,
            call_stats=self.call_stats,
            started=self.started,
            front_rss_mb=front_rss_mb(),
        )


async def client_roots(ctx: ServerRequestContext[Any]) -> list[str]:
    """The client's MCP roots as local directory paths; [] when it offers none (LibreChat).

    VS Code offers its open workspace folders: with LIGHTRAG_MCP_ALLOWED_DIRS they bound
    what path ingestion may read.  Only `file://` roots count, and only over stdio: there the
    client is the machine's own user, who can read those folders anyway.  An HTTP client is
    someone else on the network, and its roots name folders of *this* host (`file:///` would
    open the whole disk): over HTTP only the configured folders count.
    """
    capabilities = ctx.session.client_capabilities
    if ctx.request is not None or capabilities is None or capabilities.roots is None:
        return []
    try:
        with anyio.fail_after(ROOTS_TIMEOUT), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated by SEP-2577 but VS Code still sends them
            listed = await ctx.session.list_roots()
    except Exception as exc:  # a client that declares roots but cannot answer: no roots
        log.warning("roots/list failed: %s", type(exc).__name__)
        return []
    paths = []
    for root in listed.roots:
        parsed = urllib.parse.urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.netloc in {"", "localhost"}:
            paths.append(urllib.parse.unquote(parsed.path))
    return paths[:256]


def worker_environment(settings: Settings) -> dict[str, str]:
    """The worker inherits our environment, plus the project root on its import path."""
    env = dict(os.environ)
    paths = [str(PROJECT_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["WORKING_DIR"] = settings.data_dir
    for name, value in INTERACTIVE_DRIVER_DEFAULTS.items():
        env.setdefault(name, value)
    return env


class FrontServer(Server[Any]):
    """The SDK's low-level server, announcing `resources.listChanged` on every transport (the
    Streamable HTTP session manager asks for the initialization options without any)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), experimental_capabilities, extensions
        )


def build_server(settings: Settings) -> tuple[Server[Any], FrontApp]:
    catalogue = Catalogue(TOOLS, profile=settings.tools, debug=settings.debug_methods)
    run_dir = Path(settings.data_dir) / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    sessions = WorkspaceSessions()
    supervisor = WorkerSupervisor(
        settings,
        worker_command(settings.worker_command),
        env=worker_environment(settings),
        cwd=str(run_dir),  # LightRAG reads ./.env and may write ./lightrag.log: keep that here
        on_documents_changed=sessions.changed,
    )
    app = FrontApp(settings, catalogue, supervisor, sessions)
    resources = DocumentResources(settings, app.identify, supervisor, sessions, app.rate_limiter)

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervisor.run)
            tg.start_soon(sessions.run)
            try:
                yield {}
            finally:
                with anyio.CancelScope(shield=True):
                    await supervisor.stop()
                tg.cancel_scope.cancel()

    server: Server[Any] = FrontServer(
        "lightrag-mcp",
        version=FRONT_VERSION,
        title="LightRAG knowledge base",
        instructions=instructions_for(settings, catalogue),
        lifespan=lifespan,
        on_list_tools=app.on_list_tools,
        on_call_tool=app.on_call_tool,
        on_list_resources=resources.on_list_resources,
        on_list_resource_templates=resources.on_list_resource_templates,
        on_read_resource=resources.on_read_resource,
    )
    return server, app


async def serve(settings: Settings) -> None:
    server, _ = build_server(settings)
    signalled: list[signal.Signals] = []
    async with stdio_server() as (raw_read_stream, write_stream):
        async with answer_unreadable_lines(raw_read_stream, write_stream) as read_stream, anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signals, tg.cancel_scope, signalled)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()
        if signalled:
            # The server has stopped, its worker included.  The thread reading stdin waits in a
            # read no client will answer and cannot be cancelled: leave without waiting for it.
            log.info("stopped after %s", signalled[0].name)
            logging.shutdown()
            os._exit(0)


async def stop_on_signals(scope: anyio.CancelScope, signalled: list[signal.Signals]) -> None:
    """SIGTERM, SIGHUP or SIGINT (a client stopping its server: the TypeScript SDK two seconds after
    closing stdin, `docker stop`) ends the session as the end of stdin does: the worker stops
    gracefully, and the last user of the embedded engine stops it.  Before, the front died at once
    and its worker with it (SIGKILL, `stdio_guard.die_with_parent`), leaving the engine running.
    A second signal, once this one is handled, stops the front at once."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP, signal.SIGINT) as signals:
        async for received in signals:
            signalled.append(signal.Signals(received))
            log.info("%s received: stopping", signalled[0].name)
            scope.cancel()
            return


async def serve_over_http(settings: Settings) -> None:
    """The same server and front behind Streamable HTTP, for every session and user."""
    from mcp_front.http_transport import serve_http  # uvicorn and the auth stack: HTTP only

    server, front = build_server(settings)
    await serve_http(settings, server, front)


def main(argv: list[str] | None = None) -> None:
    """Console script `lightrag-mcp` and `python -m mcp_front`."""
    args = sys.argv[1:] if argv is None else argv
    if "--version" in args:
        sys.stderr.write(f"lightrag-mcp {FRONT_VERSION}\n")
        return
    if "--tools-markdown" in args:  # docs helpers: they print and exit, no protocol runs
        sys.stdout.write(tools_markdown(TOOLS) + "\n")
        return
    if "--settings-markdown" in args:
        sys.stdout.write(settings_markdown() + "\n")
        return
    if "--env-example" in args:
        sys.stdout.write(env_example())
        return
    if "--hash-token" in args:
        sys.exit(hash_token(option_value(args, "--hash-token")))
    try:
        transport = option_value(args, "--transport")
        settings = checked_settings()
        transport = transport or settings.transport
        if transport not in {"stdio", "http"}:
            raise ConfigError(f"--transport {transport!r} is not one of stdio, http")
        if transport == "http":
            check_http_exposure(settings)
        Catalogue(TOOLS, profile=settings.tools, debug=settings.debug_methods)
    except (ConfigError, ValueError) as exc:
        sys.stderr.write(f"lightrag-mcp: configuration error: {exc}\n")
        sys.exit(2)
    setup_logging("mcp_front", settings.log_level)
    try:
        anyio.run(serve_over_http if transport == "http" else serve, settings)
    except KeyboardInterrupt:
        pass


def option_value(args: list[str], flag: str) -> str | None:
    """The value of `--flag VALUE` or `--flag=VALUE` (None when absent or given no value)."""
    for index, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
        if arg == flag and index + 1 < len(args) and not args[index + 1].startswith("--"):
            return args[index + 1]
    return None


def hash_token(label: str | None) -> int:
    """`--hash-token [user:NAME|gateway:NAME]`: print the digest of the token read on stdin."""
    from mcp_front.auth import hash_token_command

    code, text = hash_token_command(label, sys.stdin.readline())
    (sys.stdout if code == 0 else sys.stderr).write(text if code == 0 else f"lightrag-mcp: {text}\n")
    return code
