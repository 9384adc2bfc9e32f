"""The server's own settings (`LIGHTRAG_MCP_*`): one table drives parsing, `.env.example`
and the README's configuration table.

Both processes read the same environment (the worker inherits the front's), so a bad
value fails at the front's start-up with one line naming the variable.  LightRAG's own
variables (`WORKING_DIR`, `LLM_BINDING`, ...) are listed too, so the docs cover them,
but their deeper validation belongs to the worker's engine.
"""

from __future__ import annotations

import contextlib
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from config.backends import class_help
from config.shared_kbs import NO_SHARED_KBS, SHARED_WORKSPACE_PREFIX, SharedKbError, SharedKbs, parse_shared_kbs


class ConfigError(Exception):
    """A setting has a bad value; the message names the variable and what it accepts."""


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    description: str
    parse: Callable[[str, str], Any]
    group: str = "server"


def _number(kind: type[int] | type[float], low: float, high: float) -> Callable[[str, str], Any]:
    noun = "a whole number" if kind is int else "a number"
    bounds = f"{int(low)}..{int(high)}" if kind is int else f"{low:g}..{high:g}"

    def parse(name: str, raw: str) -> Any:
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not {noun} (expected {bounds})") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value} is out of range (expected {bounds})")
        return value

    return parse


def _int(low: int, high: int) -> Callable[[str, str], int]:
    return _number(int, low, high)


def _float(low: float, high: float) -> Callable[[str, str], float]:
    return _number(float, low, high)


#: `{{LIBRECHAT_USER_ID}}`, `${USER}`: a client's placeholder that was never filled in.
UNEXPANDED_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}|\$\{[^{}]*\}")


def _user_id(name: str, raw: str) -> str:
    """A fixed user id; refused when it still holds a placeholder, which would pool every
    user launched without one into a single workspace."""
    if UNEXPANDED_PLACEHOLDER.search(raw):
        raise ConfigError(
            f"{name}={raw!r} is an unexpanded placeholder: the client started this server without a user "
            "(LibreChat fills {{LIBRECHAT_USER_ID}} only for a signed-in user's connection)"
        )
    return raw


def _placeholder_free(name: str, raw: str) -> str:
    """A value the client fills per user (role, e-mail): refused while it holds a placeholder,
    which would give every user launched without one the same literal role."""
    if UNEXPANDED_PLACEHOLDER.search(raw):
        raise ConfigError(f"{name}={raw!r} is an unexpanded placeholder: the client started this server without filling it in")
    return raw.strip()


def _default_workspace(name: str, raw: str) -> str:
    """The default workspace's name; never one a shared knowledge base's workspace could have."""
    if re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_").startswith(SHARED_WORKSPACE_PREFIX):
        raise ConfigError(f"{name}={raw!r}: names starting with {SHARED_WORKSPACE_PREFIX!r} belong to shared knowledge bases")
    return raw.strip()


def _shared_kbs(name: str, raw: str) -> SharedKbs:
    try:
        return parse_shared_kbs(raw)
    except SharedKbError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _bool(name: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true or false)")


def _text(name: str, raw: str) -> str:
    return raw.strip()


def _dirs(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part for part in raw.split(os.pathsep) if part.strip())


def _log_level(name: str, raw: str) -> str:
    level = raw.strip().upper() or "INFO"
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}={raw!r} is not a log level (DEBUG, INFO, WARNING, ERROR)")
    return level


def _choice(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower() or choices[0]
        if value not in choices:
            raise ConfigError(f"{name}={raw!r} is not one of {', '.join(choices)}")
        return value

    return parse


def _subset(*choices: str) -> Callable[[str, str], tuple[str, ...]]:
    def parse(name: str, raw: str) -> tuple[str, ...]:
        values = tuple(dict.fromkeys(part.strip().lower() for part in raw.split(",") if part.strip()))
        unknown = [value for value in values if value not in choices]
        if unknown:
            raise ConfigError(f"{name}={raw!r}: {unknown[0]!r} is not one of {', '.join(choices)}")
        return values

    return parse


class BearerToken(NamedTuple):
    """One `LIGHTRAG_MCP_HTTP_TOKENS` entry: who the token is, and the sha256 of the token."""

    kind: str  # "user" (a person) or "gateway" (a trusted gateway that names the user in a header)
    name: str
    digest: str  # sha256 hex of the bearer token: the token itself is never configured


_TOKEN_ENTRY = re.compile(r"(user|gateway):([A-Za-z0-9._@+-]{1,128}):([0-9a-fA-F]{64})")


def _bearer_tokens(name: str, raw: str) -> tuple[BearerToken, ...]:
    """`kind:name:sha256hex` entries, comma-separated; an error names the entry's position,
    never its text (a pasted raw token must not reach a log)."""
    entries: list[BearerToken] = []
    for position, entry in enumerate((part.strip() for part in raw.split(",") if part.strip()), 1):
        match = _TOKEN_ENTRY.fullmatch(entry)
        if match is None:
            raise ConfigError(
                f"{name}: entry {position} is not kind:name:sha256-hex (kind user or gateway; get the digest of a "
                "token with `python -m mcp_front --hash-token`, never paste the token itself)"
            )
        entries.append(BearerToken(match[1], match[2], match[3].lower()))
    if len({entry.digest for entry in entries}) != len(entries):
        raise ConfigError(f"{name}: two entries have the same token digest")
    return tuple(entries)


def _comma_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _url(name: str, raw: str) -> str:
    value = raw.strip()
    parsed = urllib.parse.urlparse(value)
    if value and (parsed.scheme not in {"http", "https"} or not parsed.netloc):
        raise ConfigError(f"{name}={raw!r} is not an http(s) URL")
    return value


def _http_path(name: str, raw: str) -> str:
    value = raw.strip() or "/mcp"
    if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value):
        raise ConfigError(f"{name}={raw!r} is not a URL path such as /mcp")
    return value


def _header_name(name: str, raw: str) -> str:
    value = raw.strip()
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", value):
        raise ConfigError(f"{name}={raw!r} is not an HTTP header name such as X-User-Id")
    return value


def _optional_header_name(name: str, raw: str) -> str:
    return _header_name(name, raw) if raw.strip() else ""


def default_data_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "lightrag-mcp")


def unwritable_reason(directory: Path, probe_name: str) -> str | None:
    """Why `directory` cannot be created and written to (None when it can): a probe file
    named `probe_name` is written and removed.  Both processes check WORKING_DIR this way."""
    probe = directory / probe_name
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink()
        return exc.strerror or type(exc).__name__
    return None


SETTINGS: tuple[Setting, ...] = (
    Setting("LIGHTRAG_MCP_USER_ID", "", "Fixed user for this process (LibreChat: \"{{LIBRECHAT_USER_ID}}\"). Calls naming another user are refused.", _user_id, "identity"),
    Setting("LIGHTRAG_MCP_USER_ROLE", "", "Role(s) of this process's user, comma-separated, for `role:NAME` members of LIGHTRAG_MCP_SHARED_KBS (LibreChat: \"{{LIBRECHAT_USER_ROLE}}\"). Applies only to the user LIGHTRAG_MCP_USER_ID names (or the default user).", _placeholder_free, "identity"),
    Setting("LIGHTRAG_MCP_USER_EMAIL", "", "E-mail of this process's user, for `email:ADDRESS` members of LIGHTRAG_MCP_SHARED_KBS (LibreChat: \"{{LIBRECHAT_USER_EMAIL}}\").", _placeholder_free, "identity"),
    Setting("LIGHTRAG_MCP_SHARED_KBS", "", "Shared knowledge bases: a JSON object, or @path to a JSON/YAML file, e.g. {\"handbook\": {\"read\": [\"*\"], \"write\": [\"alice\", \"role:ADMIN\"], \"search_by_default\": true}}. Members: user ids, *, role:NAME, email:ADDRESS. `workspace: handbook` addresses one; a question without workspace also searches those marked search_by_default.", _shared_kbs, "identity"),
    Setting("LIGHTRAG_MCP_DEFAULT_WORKSPACE", "default", "Workspace used when no user id is known.", _default_workspace, "identity"),
    Setting("LIGHTRAG_MCP_TOOLS", "default", "Advertised tools: a profile name or a comma list of tool names.", _text),
    Setting("LIGHTRAG_MCP_CALL_TIMEOUT", "60", "Default per-call timeout in seconds (ingestion and export have longer ones).", _float(1, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_WAIT_SECONDS", "15", "How long an ingestion or delete call may take, from its arrival, before it answers with a track id or with what is still being deleted (indexing or deleting goes on); keep it well under the client's tool timeout (LibreChat: 60 s).", _float(0, 3600)),
    Setting("LIGHTRAG_MCP_PING_INTERVAL", "5", "Seconds between pings to the worker.", _float(0.05, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_PING_TIMEOUT", "3", "Seconds without a pong before the worker counts as hung.", _float(0.05, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_START_TIMEOUT", "60", "Seconds a starting worker has to announce readiness.", _float(1, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_READY_WAIT", "30", "Seconds a call waits for a (re)starting worker before failing.", _float(0, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_MAX_RESTARTS", "5", "Restarts allowed within LIGHTRAG_MCP_RESTART_WINDOW before the circuit opens.", _int(1, 1000), "supervision"),
    Setting("LIGHTRAG_MCP_RESTART_WINDOW", "60", "Window in seconds for counting restarts.", _float(1, 86400), "supervision"),
    Setting("LIGHTRAG_MCP_BACKOFF_INITIAL", "0.5", "First restart delay in seconds (doubles up to LIGHTRAG_MCP_BACKOFF_MAX).", _float(0, 600), "supervision"),
    Setting("LIGHTRAG_MCP_BACKOFF_MAX", "30", "Longest restart delay in seconds.", _float(0, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_CIRCUIT_COOLDOWN", "30", "Seconds the circuit stays open before a probe restart.", _float(0, 3600), "supervision"),
    Setting("LIGHTRAG_MCP_MAX_REQUESTS", "1000", "Recycle the worker gracefully after this many calls, once it is not indexing (0 = never).", _int(0, 10**9), "supervision"),
    Setting("LIGHTRAG_MCP_MAX_RSS_MB", "0", "Recycle the worker gracefully when its RSS passes this many MB, once it is not indexing (0 = never).", _int(0, 10**7), "supervision"),
    Setting("LIGHTRAG_MCP_WORKER_COMMAND", "", "Command that starts the worker (default: this Python with -m rag_worker).", _text, "worker"),
    Setting("LIGHTRAG_MCP_WORKER_THREADS", "4", "Threads the worker uses for CPU-bound work (parsing, embedding, export).", _int(1, 256), "worker"),
    Setting("LIGHTRAG_MCP_MAX_FRAME_MB", "64", "Largest message on the worker pipe, in MB.", _int(1, 1024), "worker"),
    Setting("LIGHTRAG_MCP_MAX_OPEN_WORKSPACES", "64", "Workspaces (LightRAG instances) the worker keeps open; opening another closes the least recently used idle one. One in use is never closed: the bound is exceeded briefly and logged. Each open one holds its local vectors and graph in memory: lower it for large knowledge bases.", _int(1, 100_000), "worker"),
    Setting("LIGHTRAG_MCP_WORKSPACE_IDLE_SECONDS", "600", "Close a workspace unused this many seconds (frees its memory and releases its lock, so another process or replica can take it; one another process waits for is let go once idle for a second); 0 = never.", _float(0, 10**7), "worker"),
    Setting("LIGHTRAG_MCP_RESULT_CHARS", "6000", "Characters of retrieved context a query returns when no LLM writes the answer (the calling model reads it on every later turn): every passage stays, cut to the sentences that share most with the question. ~1,500 tokens: a 20-question conversation stays within a 32k-token context.", _int(1000, 1_000_000)),
    Setting("LIGHTRAG_MCP_MAX_FILE_MB", "10", "Largest uploaded file, in MB.", _float(0.001, 1024)),
    Setting("LIGHTRAG_MCP_ALLOWED_DIRS", "", f"Directories (separated by '{os.pathsep}') from which server-side files may be ingested. `{{user}}` in an entry is replaced by the caller's user id for that call (`/app/uploads/{{user}}`: each user reads only their own folder); such an entry gives no directory to a call without a user or with a user id other than letters, digits, '-' and '_'.", _dirs),
    Setting("LIGHTRAG_MCP_MAX_FOLDER_FILES", "2000", "Most files one folder ingestion may index.", _int(1, 10**6), "ingestion"),
    Setting("LIGHTRAG_MCP_OCR", "auto", "OCR for scanned PDF pages and PNG/JPEG/TIFF images with the packaged PP-OCR model: auto (pages without a text layer) or off (such files are refused).", _choice("auto", "off"), "ingestion"),
    Setting("LIGHTRAG_MCP_OCR_MAX_PAGES", "50", "Most pages of one document read by OCR; further scanned pages are skipped with a warning.", _int(1, 10_000), "ingestion"),
    Setting("LIGHTRAG_MCP_URL_TIMEOUT", "30", "Seconds a URL item of a batch may take to download.", _float(1, 600), "ingestion"),
    Setting("LIGHTRAG_MCP_URL_ALLOWED_HOSTS", "", "Hosts URL items may be fetched from, comma-separated (empty: any public host).", _text, "ingestion"),
    Setting("LIGHTRAG_MCP_URL_ALLOW_PRIVATE", "false", "Allow URL items on private, loopback and link-local addresses (SSRF risk: tests and trusted networks only).", _bool, "ingestion"),
    Setting("LIGHTRAG_MCP_EXPORT_INLINE_KB", "256", "Graph exports larger than this many KB are written to a file under the data directory and summarised.", _int(1, 10**6), "graph"),
    Setting("LIGHTRAG_MCP_RATE_LIMIT_PER_MINUTE", "0", "Tool calls per workspace per minute (0 = unlimited).", _int(0, 10**7), "limits"),
    Setting("LIGHTRAG_MCP_MAX_DOCUMENTS", "0", "Documents per workspace (0 = unlimited).", _int(0, 10**9), "limits"),
    Setting("LIGHTRAG_MCP_MAX_STORAGE_MB", "0", "Stored document bytes per workspace, in MB (0 = unlimited).", _float(0, 10**9), "limits"),
    Setting("LIGHTRAG_MCP_MAX_KNOWLEDGE_BASES", "50", "Named knowledge bases (the tools' `workspace` argument) each user may create (0 = unlimited). Only a writing call creates one; a read-only call naming an unknown one is refused.", _int(0, 10**6), "limits"),
    Setting("LIGHTRAG_MCP_TRANSPORT", "stdio", "stdio (one client, the default) or http (Streamable HTTP for many users; `--transport` overrides).", _choice("stdio", "http"), "http"),
    Setting("LIGHTRAG_MCP_HTTP_HOST", "127.0.0.1", "Address the HTTP transport binds; anything but loopback needs LIGHTRAG_MCP_HTTP_TOKENS or LIGHTRAG_MCP_OAUTH_ISSUER.", _text, "http"),
    Setting("LIGHTRAG_MCP_HTTP_PORT", "8765", "Port of the HTTP transport.", _int(1, 65535), "http"),
    Setting("LIGHTRAG_MCP_HTTP_PATH", "/mcp", "URL path of the MCP endpoint.", _http_path, "http"),
    Setting("LIGHTRAG_MCP_HTTP_TOKENS", "", "Bearer tokens, comma-separated `user:<name>:<sha256-hex>` (a person) or `gateway:<name>:<sha256-hex>` (a trusted gateway such as LibreChat, which names the user in LIGHTRAG_MCP_HTTP_USER_HEADER). Only digests are configured: `python -m mcp_front --hash-token` prints one.", _bearer_tokens, "http"),
    Setting("LIGHTRAG_MCP_HTTP_SAME_USERS", "gateway", "HTTP credential kinds (comma list of gateway, token, oauth) whose user ids name the same people as LIGHTRAG_MCP_USER_ID over stdio, and so share their knowledge bases. Every other kind has a namespace of its own: OAuth subject `alice` is `oauth:alice`, never gateway user or token `alice`.", _subset("gateway", "token", "oauth"), "http"),
    Setting("LIGHTRAG_MCP_HTTP_USER_HEADER", "X-User-Id", "Header in which a gateway token names the user; refused from anyone else.", _header_name, "http"),
    Setting("LIGHTRAG_MCP_HTTP_ROLE_HEADER", "", "Header in which a gateway token passes the user's role(s), comma-separated (LibreChat: {{LIBRECHAT_USER_ROLE}}); empty: roles are not read over HTTP. Refused (403) from any other credential.", _optional_header_name, "http"),
    Setting("LIGHTRAG_MCP_HTTP_EMAIL_HEADER", "", "Header in which a gateway token passes the user's e-mail (LibreChat: {{LIBRECHAT_USER_EMAIL}}); empty: not read. Refused (403) from any other credential.", _optional_header_name, "http"),
    Setting("LIGHTRAG_MCP_HTTP_ALLOWED_HOSTS", "", "Host header values accepted besides loopback and LIGHTRAG_MCP_PUBLIC_URL's host, comma-separated (`name:*` for any port); others get 421 (DNS-rebinding protection).", _comma_list, "http"),
    Setting("LIGHTRAG_MCP_HTTP_ALLOWED_ORIGINS", "", "Browser Origin values accepted besides loopback and LIGHTRAG_MCP_PUBLIC_URL's origin, comma-separated; others get 403. Requests without Origin (non-browser clients) are accepted.", _comma_list, "http"),
    Setting("LIGHTRAG_MCP_HTTP_MAX_BODY_MB", "0", "Largest HTTP request body, in MB (larger: 413 naming the upload limit). 0: room for a base64 file of twice LIGHTRAG_MCP_MAX_FILE_MB, so an oversized upload is still answered FILE_TOO_LARGE.", _float(0, 1024), "http"),
    Setting("LIGHTRAG_MCP_HTTP_MAX_SESSIONS_PER_USER", "16", "Open MCP sessions one authenticated user (token, gateway user or OAuth subject) may hold; a further one closes that user's oldest. The server-wide bound is 10,000.", _int(1, 10_000), "http"),
    Setting("LIGHTRAG_MCP_OAUTH_ISSUER", "", "OAuth 2.1 resource-server mode: the authorization server whose JWTs (RS256/ES256) are accepted.", _url, "http"),
    Setting("LIGHTRAG_MCP_OAUTH_JWKS_URL", "", "Its JWKS URL (default: jwks_uri from the issuer's discovery document).", _url, "http"),
    Setting("LIGHTRAG_MCP_OAUTH_AUDIENCE", "", "Audience a JWT must carry (default: LIGHTRAG_MCP_PUBLIC_URL).", _text, "http"),
    Setting("LIGHTRAG_MCP_OAUTH_USER_CLAIM", "sub", "JWT claim that names the user.", _text, "http"),
    Setting("LIGHTRAG_MCP_OAUTH_ROLE_CLAIM", "", "JWT claim holding the user's roles (a list or a space-separated string), for `role:NAME` members of LIGHTRAG_MCP_SHARED_KBS; empty: OAuth users carry no roles.", _text, "http"),
    Setting("LIGHTRAG_MCP_OAUTH_EMAIL_CLAIM", "", "JWT claim holding the user's e-mail (e.g. email), for `email:ADDRESS` members; empty: not read.", _text, "http"),
    Setting("LIGHTRAG_MCP_PUBLIC_URL", "", "This server's MCP endpoint as clients reach it (OAuth resource id; default http://<host>:<port><path>).", _url, "http"),
    Setting("LIGHTRAG_MCP_LOG_LEVEL", "INFO", "Log level for both processes (logs go to stderr).", _log_level),
    Setting("LIGHTRAG_MCP_DEBUG_METHODS", "false", "Serve fault-injection methods (tests only).", _bool, "worker"),
    Setting("WORKING_DIR", "", "LightRAG data directory (default: $XDG_DATA_HOME/lightrag-mcp or ~/.local/share/lightrag-mcp).", _text, "lightrag"),
    Setting("LIGHTRAG_KV_STORAGE", "", class_help("kv"), _text, "storage"),
    Setting("LIGHTRAG_VECTOR_STORAGE", "", class_help("vector"), _text, "storage"),
    Setting("LIGHTRAG_GRAPH_STORAGE", "", class_help("graph"), _text, "storage"),
    Setting("LIGHTRAG_DOC_STATUS_STORAGE", "", class_help("doc_status"), _text, "storage"),
    Setting("LIGHTRAG_MCP_DEFAULT_STORAGE", "engine", "Where NEW knowledge bases live when no LIGHTRAG_*_STORAGE is set: engine (the embedded PostgreSQL + pgvector the server starts itself in WORKING_DIR/engine and shares between its processes; commits write what changed, so the cost per document stays flat as the knowledge base grows) or files (LightRAG's JSON, NanoVectorDB and GraphML files, rewritten whole at each commit: the cost per document grows with the knowledge base). Existing knowledge bases stay where they were created; `python -m rag_worker.storage.migration WORKSPACE` moves one into the engine.", _choice("engine", "files"), "storage"),
    Setting("LIGHTRAG_MCP_STORAGE_FALLBACK", "false", "When a configured storage server is unreachable at start-up, serve new knowledge bases from local files (loud warning, health degraded) instead of refusing to start.", _bool, "storage"),
    Setting("POSTGRES_HOST", "", "PostgreSQL host (LightRAG's default: localhost).", _text, "storage"),
    Setting("POSTGRES_PORT", "", "PostgreSQL port (default 5432).", _text, "storage"),
    Setting("POSTGRES_USER", "", "PostgreSQL user.", _text, "storage"),
    Setting("POSTGRES_PASSWORD", "", "PostgreSQL password (never logged or returned).", _text, "storage"),
    Setting("POSTGRES_DATABASE", "", "PostgreSQL database (needs the pgvector extension for PGVectorStorage).", _text, "storage"),
    Setting("REDIS_URI", "", "Redis URI, e.g. redis://127.0.0.1:6379.", _text, "storage"),
    Setting("MILVUS_URI", "", "Milvus server URI, e.g. http://127.0.0.1:19530.", _text, "storage"),
    Setting("MILVUS_DB_NAME", "", "Milvus database name (default: default).", _text, "storage"),
    Setting("NEO4J_URI", "", "Neo4j URI, e.g. neo4j://host:7687 (with NEO4J_USERNAME, NEO4J_PASSWORD).", _text, "storage"),
    Setting("QDRANT_URL", "", "Qdrant URL, e.g. http://host:6333.", _text, "storage"),
    Setting("MONGO_URI", "", "MongoDB URI (with MONGO_DATABASE).", _text, "storage"),
    Setting("LLM_BINDING", "", "LLM for extraction and answers: openai, azure_openai or ollama (empty: the built-in extractor, no answers).", _text, "lightrag"),
    Setting("LLM_MODEL", "", "LLM model name, e.g. gpt-4o-mini or qwen2.5:7b.", _text, "lightrag"),
    Setting("LLM_BINDING_HOST", "", "LLM endpoint (any OpenAI-compatible base URL, or the Ollama host).", _text, "lightrag"),
    Setting("LLM_BINDING_API_KEY", "", "LLM API key (never logged or returned).", _text, "lightrag"),
    Setting("EMBEDDING_BINDING", "", "Embeddings: openai, azure_openai or ollama (empty: the packaged all-MiniLM-L6-v2).", _text, "lightrag"),
    Setting("EMBEDDING_MODEL", "", "Embedding model name.", _text, "lightrag"),
    Setting("EMBEDDING_DIM", "", "Embedding dimension of EMBEDDING_MODEL.", _text, "lightrag"),
    Setting("EMBEDDING_BINDING_HOST", "", "Embedding endpoint.", _text, "lightrag"),
    Setting("EMBEDDING_BINDING_API_KEY", "", "Embedding API key (never logged or returned).", _text, "lightrag"),
)

_BY_NAME = {setting.name: setting for setting in SETTINGS}


class Settings:
    """Parsed settings; attribute names are the variable names without `LIGHTRAG_MCP_`, lower-cased."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getattr__(self, item: str) -> Any:
        key = item.upper()
        for name in (f"LIGHTRAG_MCP_{key}", key):
            if name in self._values:
                return self._values[name]
        raise AttributeError(item)

    @property
    def shared_kbs(self) -> SharedKbs:
        kbs: SharedKbs = self._values.get("LIGHTRAG_MCP_SHARED_KBS", NO_SHARED_KBS)
        return kbs

    @property
    def data_dir(self) -> str:
        return str(self._values["WORKING_DIR"] or default_data_dir())

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Parse every setting from the environment; raises ConfigError naming the first bad one."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = env.get(setting.name, setting.default)
        values[setting.name] = setting.parse(setting.name, raw)
    return Settings(values)


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def env_example() -> str:
    """The text of `.env.example`, generated from SETTINGS."""
    lines = ["# lightrag-mcp configuration. Every variable is optional; defaults shown.", ""]
    for group in dict.fromkeys(item.group for item in SETTINGS):
        lines += [f"# --- {group} ---"]
        for item in SETTINGS:
            if item.group == group:
                lines += [f"# {item.description}", f"# {item.name}={item.default}"]
        lines.append("")
    return "\n".join(lines)


def settings_markdown() -> str:
    """The README's configuration table, generated from SETTINGS."""
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for item in SETTINGS:
        default = f"`{item.default}`" if item.default else "—"
        rows.append(f"| `{item.name}` | {default} | {item.description.replace('|', '/')} |")
    return "\n".join(rows)
