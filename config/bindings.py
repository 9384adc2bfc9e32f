"""Which LLM and embedding model to use: LightRAG's own variable names, checked cheaply.

`resolve_bindings` turns the settings into plain data (binding, model, host, key, ...)
and raises `ConfigError` with one line naming the variable when something is wrong.
The front calls `validate_binding_settings` at start-up, so a bad value fails there;
the worker's `rag_worker.bindings` wires the same data to LightRAG's functions.
Nothing here imports LightRAG, an SDK or numpy.

Variables outside the settings table (the Azure names and a few LightRAG knobs) are read
from the settings if a later table lists them, else from the process environment, which
both processes share.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from config.settings import ConfigError, Settings

SUPPORTED_BINDINGS = ("openai", "azure_openai", "ollama")
#: The client library each binding's LightRAG module needs.
_CLIENT_PACKAGES = {"openai": "openai", "azure_openai": "openai", "ollama": "ollama"}
_SUPPORTED_TEXT = "use openai, azure_openai or ollama"

OPENAI_DEFAULT_HOST = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
AZURE_DEFAULT_API_VERSION = "2024-08-01-preview"  # LightRAG 1.5.7's default
#: LightRAG's LLM_TIMEOUT default (seconds per LLM call).
DEFAULT_LLM_TIMEOUT = 240
#: Provider defaults LightRAG's server uses when EMBEDDING_MODEL is empty.
DEFAULT_EMBEDDING_MODELS = {"openai": "text-embedding-3-small", "ollama": "bge-m3:latest"}
#: Longest text (in tiktoken tokens) sent to a remote embedding model; LightRAG's default.
DEFAULT_EMBEDDING_TOKEN_LIMIT = 8192
#: Placeholder key for OpenAI-compatible hosts that need none (vLLM, llama.cpp, LM Studio):
#: the SDK refuses to start without one.
NO_KEY_PLACEHOLDER = "not-needed"


@dataclass(frozen=True)
class LLMBinding:
    """A configured LLM. `api_key` stays out of repr and `describe()`."""

    binding: str
    model: str
    host: str
    api_key: str = field(repr=False)
    timeout: int = DEFAULT_LLM_TIMEOUT
    api_version: str = ""  # azure_openai only
    deployment: str = ""  # azure_openai only: what the requests address

    def describe(self) -> dict[str, Any]:
        return _describe(self)


@dataclass(frozen=True)
class EmbeddingBinding:
    """A configured remote embedding model. `api_key` stays out of repr and `describe()`."""

    binding: str
    model: str
    dim: int
    host: str
    api_key: str = field(repr=False)
    max_token_size: int = DEFAULT_EMBEDDING_TOKEN_LIMIT
    send_dimensions: bool = False
    api_version: str = ""  # azure_openai only
    deployment: str = ""  # azure_openai only

    @property
    def model_id(self) -> str:
        """Stable id of the vector space: binding, model and dimension (never the host)."""
        return f"{self.binding}:{self.model}:{self.dim}"

    def describe(self) -> dict[str, Any]:
        return _describe(self, dim=self.dim, id=self.model_id)


def _describe(item: LLMBinding | EmbeddingBinding, **fields: Any) -> dict[str, Any]:
    """binding, model, host (without user info) and whether a key is set: never the key."""
    info: dict[str, Any] = {"binding": item.binding, "model": item.model, **fields, "host": public_host(item.host),
                            "api_key_set": bool(item.api_key) and item.api_key != NO_KEY_PLACEHOLDER}
    if item.binding == "azure_openai":
        info.update(deployment=item.deployment, api_version=item.api_version)
    return info


@dataclass(frozen=True)
class BindingConfig:
    """None for a side means the embedded default (built-in extractor / packaged ONNX model)."""

    llm: LLMBinding | None
    embedding: EmbeddingBinding | None


def validate_binding_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError (one line naming the variable) if the LLM/embedding settings are unusable
    or a binding's client library is not installed."""
    config = resolve_bindings(settings, environ)
    if config.llm:
        require_client_package(config.llm.binding, "LLM_BINDING")
    if config.embedding:
        require_client_package(config.embedding.binding, "EMBEDDING_BINDING")


def require_client_package(binding: str, variable: str) -> None:
    """Refuse (ConfigError) when the binding's client library is missing.

    LightRAG's ``lightrag.llm.openai`` / ``lightrag.llm.ollama`` would pip-install it at
    import (pipmaster); the worker calls this before importing them. Imports nothing."""
    package = _CLIENT_PACKAGES[binding]
    if importlib.util.find_spec(package) is None:
        raise ConfigError(f"{variable}={binding}: the {package} package is missing: reinstall with make setup")


def resolve_bindings(settings: Settings, environ: Mapping[str, str] | None = None) -> BindingConfig:
    """The LLM and embedding configuration, validated; raises ConfigError on the first problem."""
    values = _Values(settings, os.environ if environ is None else environ)
    return BindingConfig(llm=_resolve_llm(values), embedding=_resolve_embedding(values))


def public_host(url: str) -> str:
    """`url` without user info, query or fragment: safe to show and log."""
    if not url:
        return ""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _Values:
    """Settings-table values first, then the environment (for names outside the table)."""

    def __init__(self, settings: Settings, environ: Mapping[str, str]) -> None:
        self._table = settings.as_dict()
        self._environ = environ

    def get(self, name: str) -> str:
        value = self._table.get(name)
        if value is None:
            value = self._environ.get(name, "")
        return str(value).strip()

    def first(self, *names: str) -> str:
        for name in names:
            value = self.get(name)
            if value:
                return value
        return ""

    def positive_int(self, name: str, default: int | None, what: str) -> int | None:
        raw = self.get(name)
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a whole number ({what})") from None
        if value <= 0:
            raise ConfigError(f"{name}={value} must be positive ({what})")
        return value

    def flag(self, name: str) -> bool:
        raw = self.get(name).lower()
        if raw in {"", "0", "false", "no", "off"}:
            return False
        if raw in {"1", "true", "yes", "on"}:
            return True
        raise ConfigError(f"{name}={raw!r} is not a boolean (use true or false)")


def _binding_name(values: _Values, name: str) -> str:
    raw = values.get(name)
    binding = raw.lower()
    if binding and binding not in SUPPORTED_BINDINGS:
        raise ConfigError(f"{name}={raw!r} is not supported ({_SUPPORTED_TEXT})")
    return binding


def _url(name: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ConfigError(f"{name}={public_host(value) or value!r} is not an http(s) URL")
    return value.rstrip("/")


def _resolve_llm(values: _Values) -> LLMBinding | None:
    binding = _binding_name(values, "LLM_BINDING")
    if not binding:
        if values.get("LLM_MODEL"):
            raise ConfigError(f"LLM_MODEL is set but LLM_BINDING is empty ({_SUPPORTED_TEXT})")
        return None
    model = values.get("LLM_MODEL")
    timeout = values.positive_int("LLM_TIMEOUT", DEFAULT_LLM_TIMEOUT, "seconds per LLM call")
    assert timeout is not None
    key = values.get("LLM_BINDING_API_KEY")
    if binding == "azure_openai":
        # The names and precedence of LightRAG's server (lightrag/api/lightrag_server.py).
        deployment = values.get("AZURE_OPENAI_DEPLOYMENT") or model
        if not deployment:
            raise ConfigError("LLM_MODEL is required with LLM_BINDING=azure_openai (or set AZURE_OPENAI_DEPLOYMENT)")
        host = values.first("LLM_BINDING_HOST", "AZURE_OPENAI_ENDPOINT")
        if not host:
            raise ConfigError("LLM_BINDING_HOST is required with LLM_BINDING=azure_openai "
                              "(your https://<resource>.openai.azure.com endpoint)")
        key = values.get("AZURE_OPENAI_API_KEY") or key
        if not key:
            raise ConfigError("LLM_BINDING_API_KEY is required with LLM_BINDING=azure_openai (or AZURE_OPENAI_API_KEY)")
        version = values.first("AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION") or AZURE_DEFAULT_API_VERSION
        return LLMBinding(binding, model or deployment, _url("LLM_BINDING_HOST", host), key, timeout,
                          api_version=version, deployment=deployment)
    if not model:
        raise ConfigError(f"LLM_MODEL is required with LLM_BINDING={binding} (e.g. "
                          f"{'gpt-4o-mini' if binding == 'openai' else 'qwen2.5:7b'})")
    if binding == "openai":
        host = _url("LLM_BINDING_HOST", values.get("LLM_BINDING_HOST") or OPENAI_DEFAULT_HOST)
        return LLMBinding(binding, model, host, _openai_key(values, "LLM_BINDING_API_KEY", key, host), timeout)
    host = _url("LLM_BINDING_HOST", values.get("LLM_BINDING_HOST") or OLLAMA_DEFAULT_HOST)
    return LLMBinding(binding, model, host, key, timeout)


def _openai_key(values: _Values, name: str, key: str, host: str) -> str:
    key = key or values.get("OPENAI_API_KEY")
    if key:
        return key
    if urlsplit(host).hostname == "api.openai.com":
        raise ConfigError(f"{name} is required for {OPENAI_DEFAULT_HOST} (or set the host of an "
                          "OpenAI-compatible server that needs no key)")
    return NO_KEY_PLACEHOLDER


def _resolve_embedding(values: _Values) -> EmbeddingBinding | None:
    binding = _binding_name(values, "EMBEDDING_BINDING")
    if not binding:
        if values.get("EMBEDDING_MODEL"):
            raise ConfigError("EMBEDDING_MODEL is set but EMBEDDING_BINDING is empty "
                              f"({_SUPPORTED_TEXT}, or unset EMBEDDING_MODEL for the packaged model)")
        return None
    dim = values.positive_int("EMBEDDING_DIM", None, "the vector size of EMBEDDING_MODEL, e.g. 1536")
    if dim is None:
        raise ConfigError(f"EMBEDDING_DIM is required with EMBEDDING_BINDING={binding} "
                          "(the vector size of EMBEDDING_MODEL, e.g. 1536 for text-embedding-3-small)")
    token_limit = values.positive_int("EMBEDDING_TOKEN_LIMIT", DEFAULT_EMBEDDING_TOKEN_LIMIT,
                                      "longest text in tokens sent to the embedding model")
    assert token_limit is not None
    send_dimensions = values.flag("EMBEDDING_SEND_DIM")
    same_as_llm = values.get("LLM_BINDING").lower() == binding
    # Like LightRAG's server, an embedding host left empty falls back to the LLM host
    # when both use the same binding; the key then follows the host.
    host = values.get("EMBEDDING_BINDING_HOST")
    key = values.get("EMBEDDING_BINDING_API_KEY")
    if same_as_llm and not host:
        host = values.get("LLM_BINDING_HOST")
        key = key or values.get("LLM_BINDING_API_KEY")
    model = values.get("EMBEDDING_MODEL")
    if binding == "azure_openai":
        deployment = values.get("AZURE_EMBEDDING_DEPLOYMENT") or model
        if not deployment:
            raise ConfigError("EMBEDDING_MODEL is required with EMBEDDING_BINDING=azure_openai "
                              "(the deployment name, or set AZURE_EMBEDDING_DEPLOYMENT)")
        host = host or values.first("AZURE_EMBEDDING_ENDPOINT", *(("AZURE_OPENAI_ENDPOINT",) if same_as_llm else ()))
        if not host:
            raise ConfigError("EMBEDDING_BINDING_HOST is required with EMBEDDING_BINDING=azure_openai")
        key = values.get("AZURE_EMBEDDING_API_KEY") or key
        if not key and same_as_llm:
            key = values.get("AZURE_OPENAI_API_KEY")
        if not key:
            raise ConfigError("EMBEDDING_BINDING_API_KEY is required with EMBEDDING_BINDING=azure_openai")
        version = values.first("AZURE_EMBEDDING_API_VERSION", "AZURE_OPENAI_API_VERSION",
                               "OPENAI_API_VERSION") or AZURE_DEFAULT_API_VERSION
        return EmbeddingBinding(binding, model or deployment, dim, _url("EMBEDDING_BINDING_HOST", host), key,
                                token_limit, send_dimensions, api_version=version, deployment=deployment)
    model = model or DEFAULT_EMBEDDING_MODELS[binding]
    if binding == "openai":
        host = _url("EMBEDDING_BINDING_HOST", host or OPENAI_DEFAULT_HOST)
        key = _openai_key(values, "EMBEDDING_BINDING_API_KEY", key, host)
    else:
        host = _url("EMBEDDING_BINDING_HOST", host or OLLAMA_DEFAULT_HOST)
    return EmbeddingBinding(binding, model, dim, host, key, token_limit, send_dimensions)
