"""LLM-backed mode: LightRAG's own openai / azure_openai / ollama bindings against a real local fake server.

Each binding indexes a document (entity extraction through the fake), answers a question
quoting the fact, streams an answer and extracts keywords through the fake, without the
API key ever showing in `describe` or in a log line.
"""

from __future__ import annotations

import logging
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from config.bindings import validate_binding_settings
from config.settings import ConfigError, load_settings
from rag_worker.bindings import build_components
from tests.conftest import PROJECT_ROOT, PYTHON
from tests.fakes.openai_server import ANSWER_PREFIX, FakeLLMServer

pytestmark = pytest.mark.slow

SECRET = "sk-test-SECRET-123"
DIM = 64
DOCUMENT = (
    "Ada Lovelace worked with Charles Babbage in London on the Analytical Engine. "
    "The Analytical Engine was a mechanical general-purpose computer designed by Charles Babbage. "
    "Ada Lovelace wrote the first published algorithm intended for the Analytical Engine in 1843. "
    "Mary Somerville introduced Ada Lovelace to Charles Babbage."
)
QUESTION = "Which algorithm did Ada Lovelace publish in 1843?"
FACT = "first published algorithm"
#: Variables outside the settings table that bindings_config reads from the environment.
AMBIENT = ("OPENAI_API_KEY", "OLLAMA_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
           "AZURE_OPENAI_API_VERSION", "AZURE_OPENAI_DEPLOYMENT", "AZURE_EMBEDDING_DEPLOYMENT",
           "AZURE_EMBEDDING_API_KEY", "AZURE_EMBEDDING_ENDPOINT", "AZURE_EMBEDDING_API_VERSION",
           "OPENAI_API_VERSION", "EMBEDDING_SEND_DIM", "EMBEDDING_TOKEN_LIMIT", "LLM_TIMEOUT")


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=SECRET, embedding_dim=DIM) as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeLLMServer:
    """The shared fake, reset; a clean environment; cwd in tmp (LightRAG reads ./.env)."""
    for name in AMBIENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    fake_server.reset()
    return fake_server


@pytest.fixture
def captured_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record at DEBUG, LightRAG's too (its logger does not propagate)."""
    lightrag_logger = logging.getLogger("lightrag")
    previous = lightrag_logger.level
    caplog.set_level(logging.DEBUG)
    lightrag_logger.addHandler(caplog.handler)
    lightrag_logger.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        lightrag_logger.removeHandler(caplog.handler)
        lightrag_logger.setLevel(previous)


def binding_env(binding: str, fake: FakeLLMServer, **extra: str) -> dict[str, str]:
    host = fake.openai_base_url if binding == "openai" else fake.url
    env = {
        "LLM_BINDING": binding, "LLM_MODEL": "fake-chat", "LLM_BINDING_HOST": host, "LLM_BINDING_API_KEY": SECRET,
        "EMBEDDING_BINDING": binding, "EMBEDDING_MODEL": "fake-embed", "EMBEDDING_DIM": str(DIM),
        "EMBEDDING_BINDING_HOST": host, "EMBEDDING_BINDING_API_KEY": SECRET,
    }
    env.update(extra)
    return env


async def open_rag(components: dict[str, Any], working_dir: Path) -> Any:
    """A LightRAG instance built as rag_worker/storage/lightrag_setup.py builds one."""
    from rag_worker.storage.lightrag_setup import new_lightrag

    # A fresh workspace name each time: LightRAG keeps KV data per workspace name process-wide.
    rag = await new_lightrag(working_dir, f"bindings-{uuid.uuid4().hex[:8]}", components)
    return rag


@pytest.mark.anyio
@pytest.mark.parametrize("binding", ["openai", "azure_openai", "ollama"])
async def test_a_binding_indexes_and_answers_through_lightrag(
    binding: str, fake: FakeLLMServer, captured_logs: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from lightrag import QueryParam

    model = "fake-chat"
    if binding == "azure_openai":  # LightRAG's server names: the deployment wins over LLM_MODEL
        monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "fake-deployment")
        monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-10-21")
        model = "fake-deployment"
    components = await build_components(load_settings(binding_env(binding, fake)), anyio.CapacityLimiter(2))
    assert components["llm_configured"] is True
    assert components["embedding_model_id"] == f"{binding}:fake-embed:{DIM}"
    rag = await open_rag(components, tmp_path / "data")
    try:
        await rag.ainsert(DOCUMENT, file_paths=["lovelace.txt"])
        extraction = fake.requests_for(endpoint="chat", prompt_kind="extraction")
        assert extraction and {r.model for r in extraction} == {model}
        assert "Ada Lovelace" in await rag.get_graph_labels()

        result = await rag.aquery_llm(QUESTION, QueryParam(mode="hybrid", enable_rerank=False))
        answer = result["llm_response"]["content"]
        assert answer.startswith(ANSWER_PREFIX) and FACT in answer
        keywords = fake.requests_for(endpoint="chat", prompt_kind="keywords")
        assert keywords, "keywords were not asked of the LLM"
        json_mode = [r.body.get("format") if binding == "ollama" else r.body.get("response_format") for r in keywords]
        assert json_mode == [("json" if binding == "ollama" else {"type": "json_object"})] * len(keywords)

        stream = await rag.aquery(QUESTION, QueryParam(mode="hybrid", stream=True, enable_rerank=False))
        chunks = [chunk async for chunk in stream if chunk]
        assert len(chunks) >= 2 and FACT in "".join(chunks)
        assert any(r.stream for r in fake.requests_for(endpoint="chat", prompt_kind="answer"))
    finally:
        await rag.finalize_storages()

    requests = fake.requests
    assert requests and all(r.authorized and r.status == 200 for r in requests)
    assert {r.api for r in requests} == {"azure" if binding == "azure_openai" else binding}
    if binding == "azure_openai":
        assert {r.api_version for r in requests if r.endpoint == "chat"} == {"2024-10-21"}
    if binding == "ollama":  # Ollama's own default context would cut LightRAG's prompts
        assert {r.body["options"]["num_ctx"] for r in requests if r.endpoint == "chat"} == {32768}
    assert fake.requests_for(endpoint="embeddings")
    assert SECRET not in repr(components["describe"]) and SECRET not in repr(components["lightrag_kwargs"])
    assert SECRET not in captured_logs.text
    assert len(captured_logs.records) > 20, "the log capture saw nothing: the secret check proves nothing"


@pytest.mark.anyio
async def test_a_wrong_api_key_is_refused_by_the_host(fake: FakeLLMServer) -> None:
    import openai

    env = binding_env("openai", fake, LLM_BINDING_API_KEY="sk-wrong")
    components = await build_components(load_settings(env), anyio.CapacityLimiter(2))
    with pytest.raises(openai.AuthenticationError):
        await components["llm_model_func"]("hello")
    assert [r.status for r in fake.requests] == [401]


@pytest.mark.anyio
async def test_the_embedding_binding_is_independent_of_the_llm_binding(fake: FakeLLMServer) -> None:
    env = binding_env("openai", fake)
    for name in ("EMBEDDING_BINDING", "EMBEDDING_MODEL", "EMBEDDING_DIM", "EMBEDDING_BINDING_HOST",
                 "EMBEDDING_BINDING_API_KEY"):
        del env[name]
    components = await build_components(load_settings(env), anyio.CapacityLimiter(2))
    assert components["llm_configured"] is True
    assert components["embedding_model_id"] == "onnx:all-MiniLM-L6-v2-int8:384"
    assert components["describe"]["embedding"]["binding"] == "embedded"
    vectors = await components["embedding_func"](["Ada Lovelace"])
    assert vectors.shape == (1, 384) and not fake.requests


@pytest.mark.anyio
async def test_nothing_configured_is_the_embedded_default(fake: FakeLLMServer) -> None:
    from rag_worker.embedded.extractor import builtin_llm_model_func

    components = await build_components(load_settings({}), anyio.CapacityLimiter(2))
    assert components["llm_configured"] is False
    assert components["llm_model_func"] is builtin_llm_model_func
    assert components["describe"]["llm"] == {"binding": "builtin", "model": "builtin-extractor"}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LLM_BINDING": "gemini", "LLM_MODEL": "m"},
         "LLM_BINDING='gemini' is not supported (use openai, azure_openai or ollama)"),
        ({"EMBEDDING_BINDING": "jina"}, "EMBEDDING_BINDING='jina' is not supported"),
        ({"EMBEDDING_BINDING": "openai", "EMBEDDING_BINDING_API_KEY": "k"},
         "EMBEDDING_DIM is required with EMBEDDING_BINDING=openai"),
        ({"EMBEDDING_BINDING": "ollama", "EMBEDDING_DIM": "big"}, "EMBEDDING_DIM='big' is not a whole number"),
        ({"LLM_BINDING": "openai", "LLM_BINDING_API_KEY": "k"}, "LLM_MODEL is required with LLM_BINDING=openai"),
        ({"LLM_BINDING": "openai", "LLM_MODEL": "gpt-4o-mini"}, "LLM_BINDING_API_KEY is required"),
        ({"LLM_BINDING": "azure_openai", "LLM_MODEL": "m", "LLM_BINDING_API_KEY": "k"},
         "LLM_BINDING_HOST is required with LLM_BINDING=azure_openai"),
        ({"LLM_BINDING": "ollama", "LLM_MODEL": "m", "LLM_BINDING_HOST": "localhost:11434"},
         "LLM_BINDING_HOST='localhost:11434' is not an http(s) URL"),
        ({"LLM_MODEL": "gpt-4o-mini"}, "LLM_MODEL is set but LLM_BINDING is empty"),
    ],
)
async def test_a_bad_binding_setting_is_one_clear_line(env: dict[str, str], message: str,
                                                        fake: FakeLLMServer) -> None:
    settings = load_settings(env)
    with pytest.raises(ConfigError) as at_start:
        validate_binding_settings(settings)
    with pytest.raises(ConfigError) as at_build:
        await build_components(settings, anyio.CapacityLimiter(2))
    for caught in (at_start, at_build):
        assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.anyio
async def test_a_missing_client_package_is_a_config_error_not_a_pip_install(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    import pipmaster

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "openai" else real_find_spec(name, *args, **kwargs)

    def refuse_install(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pipmaster tried to install a package")

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(pipmaster, "install", refuse_install)
    settings = load_settings(binding_env("openai", fake))
    message = "LLM_BINDING=openai: the openai package is missing: reinstall with make setup"
    with pytest.raises(ConfigError, match=message):
        validate_binding_settings(settings)
    with pytest.raises(ConfigError, match=message):
        await build_components(settings, anyio.CapacityLimiter(2))


def test_the_front_can_validate_without_importing_heavy_packages() -> None:
    code = ("import sys, config.bindings; "
            "print(sorted(m for m in ('lightrag', 'openai', 'ollama', 'numpy') if m in sys.modules))")
    out = subprocess.run([PYTHON, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_fake_server_runs_as_a_process_and_prints_its_port() -> None:
    import json
    import urllib.request

    process = subprocess.Popen([PYTHON, "-m", "tests.fakes.openai_server", "--port", "0"], cwd=PROJECT_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("FAKE_LLM_PORT=")
        with urllib.request.urlopen(f"http://127.0.0.1:{line.split('=')[1]}/api/version", timeout=10) as response:
            assert "version" in json.loads(response.read())
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
