"""Embedding, tokenizer and LLM functions for LightRAG, chosen by configuration.

With nothing configured this is the embedded default (SPEC §6): the packaged
all-MiniLM-L6-v2 ONNX model, an offline tokenizer and the built-in extractor.
`LLM_BINDING` and `EMBEDDING_BINDING` (openai, azure_openai, ollama; checked by
`config.bindings`) switch each side independently to LightRAG's own binding
functions, wired the way LightRAG's server wires them (lightrag/api/lightrag_server.py).

API keys live only in the closures built here: never in LightRAG's config (which it
logs and deep-copies), in `describe`, or in a log line.
"""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Callable
from typing import Any

import anyio

from config.bindings import (
    BindingConfig,
    EmbeddingBinding,
    LLMBinding,
    public_host,
    require_client_package,
    resolve_bindings,
)
from config.settings import ConfigError, Settings
from rag_worker.embedded.embedding_lanes import EmbeddingLanes, make_embedding_func
from rag_worker.embedded.extractor import (
    BUILTIN_LIGHTRAG_KWARGS,
    BUILTIN_LLM_NAME,
    adapt_lightrag,
    builtin_llm_model_func,
)
from rag_worker.embedded.models import EMBEDDING_DIM, MODEL_NAME, OnnxSentenceEmbedder, default_threads
from rag_worker.embedded.offline_tokenizer import make_offline_tokenizer
from rag_worker.query_cache import remembering_queries

log = logging.getLogger("rag_worker.bindings")

LLMFunc = Callable[..., Any]

#: Ollama's own default context (2-4k tokens) silently cuts LightRAG's extraction
#: prompts; LightRAG's documentation recommends this. OLLAMA_LLM_NUM_CTX overrides it.
OLLAMA_DEFAULT_NUM_CTX = 32768

#: Keyword arguments LightRAG passes that `_ollama_model_if_cache` consumes or forwards to
#: `ollama.AsyncClient.chat`, which has no **kwargs: anything else would be a TypeError.
_OLLAMA_CHAT_KWARGS = frozenset({
    "stream", "format", "response_format", "options", "keep_alive", "think", "tools", "max_tokens",
    "keyword_extraction", "entity_extraction", "image_inputs", "token_tracker", "enable_cot", "hashing_kv",
})


async def build_components(settings: Settings, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
    """Build the shared components every LightRAG instance of this worker uses.

    Returns ``embedding_func``, ``tokenizer``, ``llm_model_func``, ``llm_name``,
    ``embedding_name``, ``llm_configured``, ``embedding_model_id`` (binding:model:dim,
    keeps vectors of different models apart), ``describe`` (binding/model/host, no key)
    ``lightrag_kwargs`` (extra ``LightRAG(...)`` arguments: the LLM identity that
    partitions LightRAG's LLM cache) and, for the built-in extractor, ``adapt_lightrag`` (applied
    to each LightRAG object once built). Raises ConfigError for unusable settings.
    """
    config = resolve_bindings(settings)
    # Also seeds tiktoken's cache, which LightRAG's openai_embed uses to truncate texts.
    tokenizer = await anyio.to_thread.run_sync(make_offline_tokenizer, limiter=limiter)
    llm = build_llm(config.llm)
    embedding = await _build_embedding(config.embedding, limiter)
    components = {
        "tokenizer": tokenizer,
        **llm,
        **embedding,
        "describe": describe(config),
    }
    log.info("LLM: %s; embeddings: %s", components["llm_name"], components["embedding_name"])
    return components


def describe(config: BindingConfig) -> dict[str, Any]:
    """What is configured, safe to show (health check, logs): never an API key."""
    llm = config.llm.describe() if config.llm else {"binding": "builtin", "model": BUILTIN_LLM_NAME}
    embedding = config.embedding.describe() if config.embedding else {
        "binding": "embedded", "model": MODEL_NAME, "dim": EMBEDDING_DIM, "id": _embedded_model_id()}
    return {"llm": llm, "embedding": embedding}


def _embedded_model_id() -> str:
    return f"onnx:{MODEL_NAME}:{EMBEDDING_DIM}"


# ------------------------------------------------------------------------------ LLM
def build_llm(binding: LLMBinding | None) -> dict[str, Any]:
    """``llm_model_func`` and what goes with it, for `binding` (None: the built-in extractor)."""
    if binding is None:
        return {"llm_model_func": builtin_llm_model_func, "llm_name": BUILTIN_LLM_NAME, "llm_configured": False,
                "lightrag_kwargs": dict(BUILTIN_LIGHTRAG_KWARGS), "adapt_lightrag": adapt_lightrag}
    require_client_package(binding.binding, "LLM_BINDING")
    factory = _ollama_llm if binding.binding == "ollama" else _openai_llm
    identity = {"binding": binding.binding, "model": binding.model, "host": public_host(binding.host)}
    return {
        "llm_model_func": factory(binding),
        "llm_name": f"{binding.binding}:{binding.model}",
        "llm_configured": True,
        # LightRAG keys its LLM cache (extraction included) on this identity, so answers
        # cached from another model or host are never replayed; its role log shows it too.
        "lightrag_kwargs": {
            "llm_model_name": binding.model,
            "role_llm_configs": {role: {"metadata": dict(identity)} for role in ("extract", "keyword", "query", "vlm")},
        },
    }


def _openai_llm(binding: LLMBinding) -> LLMFunc:
    """openai and azure_openai: one OpenAI client path in LightRAG (azure_openai_complete_if_cache wraps it)."""
    complete: Callable[..., Any]
    if binding.binding == "azure_openai":
        from lightrag.llm.azure_openai import azure_openai_complete_if_cache

        # The deployment goes in as the model: the binding addresses it in the URL.
        complete = functools.partial(azure_openai_complete_if_cache, binding.deployment,
                                     api_version=binding.api_version)
    else:
        from lightrag.llm.openai import openai_complete_if_cache

        complete = functools.partial(openai_complete_if_cache, binding.model)
    options = _lightrag_options("OpenAILLMOptions")

    async def openai_llm(prompt: str, system_prompt: str | None = None,
                         history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        # hashing_kv, response_format, stream, enable_cot, max_tokens pass through: the
        # binding pops hashing_kv and returns an async iterator when stream is true.
        return await complete(prompt, system_prompt=system_prompt, history_messages=history_messages or [],
                              base_url=binding.host, api_key=binding.api_key,
                              **{**options, **kwargs, "timeout": binding.timeout})

    return openai_llm


def _ollama_llm(binding: LLMBinding) -> LLMFunc:
    # Not ollama_model_complete: it reads the model from LightRAG's llm_model_name.
    from lightrag.llm.ollama import _ollama_model_if_cache

    options = {"num_ctx": OLLAMA_DEFAULT_NUM_CTX, **_lightrag_options("OllamaLLMOptions")}

    async def ollama_llm(prompt: str, system_prompt: str | None = None,
                         history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        dropped = sorted(set(kwargs) - _OLLAMA_CHAT_KWARGS)
        if dropped:
            log.debug("ollama binding ignores %s", ", ".join(dropped))
        passed = {key: value for key, value in kwargs.items() if key in _OLLAMA_CHAT_KWARGS}
        passed["options"] = {**options, **(passed.get("options") or {})}
        return await _ollama_model_if_cache(
            binding.model, prompt, system_prompt=system_prompt, history_messages=history_messages or [],
            host=binding.host, api_key=binding.api_key or None, timeout=binding.timeout, **passed)

    return ollama_llm


# ------------------------------------------------------------------------ embeddings
async def _build_embedding(binding: EmbeddingBinding | None, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
    if binding is None:
        # One thread per inference; parallel batches use the cores (EmbeddingLanes).
        embedder = OnnxSentenceEmbedder(intra_op_threads=1)
        await anyio.to_thread.run_sync(embedder.load, limiter=limiter)
        return {"embedding_func": make_embedding_func(embedder, EmbeddingLanes.create(default_threads())),
                "embedding_name": "all-MiniLM-L6-v2 (ONNX, packaged)", "embedding_model_id": _embedded_model_id()}
    return {"embedding_func": build_remote_embedding(binding), "embedding_name": binding.model_id,
            "embedding_model_id": binding.model_id}


def build_remote_embedding(binding: EmbeddingBinding) -> Any:
    """LightRAG ``EmbeddingFunc`` over the binding's own embed function (``.func``: no double wrapping)."""
    require_client_package(binding.binding, "EMBEDDING_BINDING")
    from lightrag.utils import EmbeddingFunc

    # Like LightRAG's server: send the dimension only when EMBEDDING_SEND_DIM asks
    # (text-embedding-3 can shorten vectors; most other models reject the field).
    dimensions = binding.dim if binding.send_dimensions else None
    embed: Callable[[list[str]], Any]
    if binding.binding == "ollama":
        from lightrag.llm.ollama import ollama_embed

        options = _lightrag_options("OllamaEmbeddingOptions")

        def embed(texts: list[str]) -> Any:
            return ollama_embed.func(texts, embed_model=binding.model, host=binding.host,
                                     api_key=binding.api_key or None, embedding_dim=dimensions, options=options)
    elif binding.binding == "azure_openai":
        from lightrag.llm.azure_openai import azure_openai_embed

        def embed(texts: list[str]) -> Any:
            return azure_openai_embed.func(texts, model=binding.deployment, base_url=binding.host,
                                           api_key=binding.api_key, embedding_dim=dimensions,
                                           api_version=binding.api_version)
    else:
        from lightrag.llm.openai import openai_embed

        def embed(texts: list[str]) -> Any:
            # max_token_size: texts are cut (tiktoken, cached offline) before sending.
            return openai_embed.func(texts, model=binding.model, base_url=binding.host, api_key=binding.api_key,
                                     embedding_dim=dimensions, max_token_size=binding.max_token_size)

    async def remote_embedding(texts: list[str], **kwargs: Any) -> Any:
        # kwargs: context="query"/"document" (these models are symmetric; it only picks what is remembered).
        return await embed(list(texts))

    # supports_asymmetric: LightRAG passes `context` on, so a question is embedded once (query_cache).
    return EmbeddingFunc(embedding_dim=binding.dim, func=remembering_queries(remote_embedding),
                         max_token_size=binding.max_token_size, model_name=binding.model, supports_asymmetric=True)


# -------------------------------------------------------------------------- helpers
def _lightrag_options(class_name: str) -> dict[str, Any]:
    """Provider options from LightRAG's own variables (OPENAI_LLM_TEMPERATURE,
    OLLAMA_LLM_NUM_CTX, ...): only those set in the environment, as its server does."""
    from lightrag.llm import binding_options

    options_class = getattr(binding_options, class_name)
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    try:
        options_class.add_args(parser)
        args, _ = parser.parse_known_args([])
    except (argparse.ArgumentError, argparse.ArgumentTypeError, ValueError, TypeError, RuntimeError) as exc:
        raise ConfigError(f"{exc} (one of LightRAG's {options_class._binding_name.upper()}_* options)") from None
    return dict(options_class.options_dict(args))
