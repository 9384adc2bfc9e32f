"""Start-up checks of the front, before it serves anything: the env file, the bindings,
the storage servers (probed), the data directory and the tool profile.

Each failure is one line on stderr and exit code 2, so a client's log names the cause.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from config.bindings import validate_binding_settings
from config.settings import ConfigError, Settings, load_settings, unwritable_reason
from config.storages import probe_servers, resolve_storages, server_addresses

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def check_data_dir(settings: Settings) -> None:
    """The data directory (WORKING_DIR) can be created and written, or one line says why not."""
    reason = unwritable_reason(Path(settings.data_dir) / "run", f".front-probe-{os.getpid()}")
    if reason is not None:
        raise ConfigError(f"WORKING_DIR={settings.data_dir!r} is not writable: {reason}")


def check_storages(settings: Settings) -> None:
    """Storage configuration is valid and its servers answer before we serve (SPEC §7).

    A server that is down fails start-up with one line, unless LIGHTRAG_MCP_STORAGE_FALLBACK
    is on: then the worker serves new knowledge bases from local files and says so loudly."""
    storages = resolve_storages(settings)
    problems = probe_servers(server_addresses(storages, settings))
    if not problems:
        return
    if not settings.storage_fallback:
        raise ConfigError(problems[0] + " (set LIGHTRAG_MCP_STORAGE_FALLBACK=true to start on local storage instead)")
    for problem in problems:
        sys.stderr.write(f"lightrag-mcp: WARNING: {problem}; LIGHTRAG_MCP_STORAGE_FALLBACK is on: new knowledge bases use local storage\n")


def load_env_file() -> None:
    """Read `LIGHTRAG_MCP_ENV_FILE`, else the project's own `.env` (never the cwd's): real
    environment variables win."""
    configured = os.environ.get("LIGHTRAG_MCP_ENV_FILE")
    path = Path(configured) if configured else PROJECT_ROOT / ".env"
    if not path.is_file():
        if configured:
            raise ConfigError(f"LIGHTRAG_MCP_ENV_FILE={configured!r} is not a readable file")
        return
    from dotenv import dotenv_values

    for key, value in dotenv_values(path).items():
        if value is not None:
            os.environ.setdefault(key, value)


def check_http_exposure(settings: Settings) -> None:
    """Over HTTP, a server reachable from the network authenticates its callers (SPEC §1)."""
    authenticated = http_authentication_configured(settings)
    if not is_loopback(settings.http_host) and not authenticated:
        raise ConfigError(
            f"LIGHTRAG_MCP_HTTP_HOST={settings.http_host!r} is not a loopback address: set LIGHTRAG_MCP_HTTP_TOKENS "
            "or LIGHTRAG_MCP_OAUTH_ISSUER so network callers are authenticated (or bind 127.0.0.1)"
        )
    if settings.oauth_jwks_url and not settings.oauth_issuer:
        raise ConfigError("LIGHTRAG_MCP_OAUTH_JWKS_URL is set without LIGHTRAG_MCP_OAUTH_ISSUER (tokens are checked against both)")
    if authenticated and settings.user_id:
        raise ConfigError(
            "LIGHTRAG_MCP_USER_ID pins one user, but over authenticated HTTP the token or OAuth claim names the user: unset it"
        )


def http_authentication_configured(settings: Settings) -> bool:
    return bool(settings.http_tokens or settings.oauth_issuer)


def is_loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1 (brackets allowed)."""
    import ipaddress

    bare = host.strip().strip("[]")
    try:
        return bare == "localhost" or ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def checked_settings() -> Settings:
    """The settings, once everything the server needs before serving has been checked."""
    load_env_file()
    settings = load_settings()
    validate_binding_settings(settings)
    check_storages(settings)
    check_data_dir(settings)
    return settings
