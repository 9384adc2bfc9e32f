"""The deployment files agree with the code and with each other (no docker needed):
Dockerfile, .dockerignore, deploy/docker-compose.yml, deploy/librechat.yaml, deploy/.env.example."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from config.settings import SETTINGS, setting

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVICE = "lightrag-mcp"
SETTING_NAMES = {item.name for item in SETTINGS}


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    lines = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.lstrip().startswith("#")]
    text = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in text.splitlines() if line.strip()]


def instructions(name: str) -> list[str]:
    return [args for instruction, args in dockerfile() if instruction == name]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for args in instructions("ENV"):
        for pair in shlex.split(args):
            key, _, value = pair.partition("=")
            env[key] = value
    return env


def run_commands() -> list[str]:
    return [command.strip() for args in instructions("RUN") for command in args.split("&&")]


def makefile_setup() -> list[str]:
    """The Python commands of the Makefile's set-up recipe, `$(VPY)` as `python`, `$(LOCK)` resolved."""
    text = (ROOT / "Makefile").read_text()
    recipe = text.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    lock = re.search(r"^LOCK := (\S+)", text, re.M)
    assert lock is not None
    commands = []
    for line in recipe.splitlines()[1:]:
        command = line.strip().lstrip("@")
        if command.startswith("#") or not command:
            continue
        command = command.replace("$(VPY)", "python").replace("$(LOCK)", lock.group(1))
        if command.startswith("python "):  # not the venv creation or the stamp: the image has its own
            commands.append(re.sub(r"\s*1>&2$", "", command))
    return commands


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "docker-compose.yml").read_text()))


def service_env() -> dict[str, str]:
    env = compose()["services"][SERVICE]["environment"]
    return {str(key): str(value) for key, value in env.items()}


def deploy_variables() -> set[str]:
    """The variables deploy/.env.example defines (the compose file and LibreChat read them)."""
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    return {line.split("=", 1)[0] for line in lines if re.match(r"^[A-Z_][A-Z0-9_]*=", line)}


def librechat_server() -> dict[str, Any]:
    config = yaml.safe_load((DEPLOY / "librechat.yaml").read_text())
    return dict(config["mcpServers"]["lightrag"])


def effective(name: str) -> str:
    """A setting's value in the container: the compose file's, else the Dockerfile's, else the default."""
    return service_env().get(name) or dockerfile_env().get(name) or setting(name).default


# --- the names -------------------------------------------------------------------------------


def test_the_deployment_files_parse() -> None:
    assert compose()["services"][SERVICE]
    assert librechat_server()["type"] == "streamable-http"
    assert dockerfile()[0][0] == "FROM"


def test_every_server_variable_the_deployment_sets_is_a_setting() -> None:
    names = set(service_env()) | set(dockerfile_env())
    ours = {name for name in names if name.startswith("LIGHTRAG_") or name == "WORKING_DIR"}
    assert ours and ours <= SETTING_NAMES, sorted(ours - SETTING_NAMES)


def test_every_other_lightrag_name_in_the_deployment_is_a_variable_of_its_env_file() -> None:
    mentioned = set()
    for path in (DEPLOY / "docker-compose.yml", DEPLOY / "librechat.yaml", ROOT / "Dockerfile"):
        mentioned |= set(re.findall(r"\bLIGHTRAG_MCP_[A-Z0-9_]+", path.read_text()))
    assert mentioned - SETTING_NAMES <= deploy_variables(), sorted(mentioned - SETTING_NAMES - deploy_variables())


# --- LibreChat and the server agree ------------------------------------------------------------


def test_librechats_url_is_the_services_name_port_and_path() -> None:
    url = urlsplit(librechat_server()["url"])
    assert (url.scheme, url.hostname) == ("http", SERVICE)
    assert str(url.port) == effective("LIGHTRAG_MCP_HTTP_PORT")
    assert url.path == effective("LIGHTRAG_MCP_HTTP_PATH")
    assert f"{SERVICE}:{url.port}" in effective("LIGHTRAG_MCP_HTTP_ALLOWED_HOSTS").split(",")
    exposed = compose()["services"][SERVICE].get("expose", [])
    assert str(url.port) in [str(port) for port in exposed] + instructions("EXPOSE")


def test_librechat_may_reach_the_service_despite_its_ssrf_protection() -> None:
    url = urlsplit(librechat_server()["url"])
    settings = yaml.safe_load((DEPLOY / "librechat.yaml").read_text())["mcpSettings"]
    assert f"{url.hostname}:{url.port}" in settings["allowedAddresses"]


def test_the_user_header_is_the_one_the_server_reads_and_holds_librechats_placeholder() -> None:
    headers = {name.lower(): value for name, value in librechat_server()["headers"].items()}
    assert headers[effective("LIGHTRAG_MCP_HTTP_USER_HEADER").lower()] == "{{LIBRECHAT_USER_ID}}"


@pytest.mark.parametrize(
    ("variable", "placeholder"),
    [("LIGHTRAG_MCP_HTTP_ROLE_HEADER", "{{LIBRECHAT_USER_ROLE}}"), ("LIGHTRAG_MCP_HTTP_EMAIL_HEADER", "{{LIBRECHAT_USER_EMAIL}}")],
)
def test_the_role_and_email_headers_are_the_ones_the_server_reads(variable: str, placeholder: str) -> None:
    headers = {name.lower(): value for name, value in librechat_server()["headers"].items()}
    assert headers[effective(variable).lower()] == placeholder


def test_the_deployments_example_shared_knowledge_bases_are_a_valid_setting() -> None:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    raw = next(line.split("=", 1)[1] for line in lines if line.startswith("LIGHTRAG_MCP_SHARED_KBS="))
    raw = raw[1:-1] if raw[:1] == raw[-1:] == "'" else raw  # compose's single-quoted literal
    assert setting("LIGHTRAG_MCP_SHARED_KBS").parse("LIGHTRAG_MCP_SHARED_KBS", raw).lookup("handbook") is not None


def test_librechat_sends_the_gateway_token_whose_hash_the_server_holds() -> None:
    headers = librechat_server()["headers"]
    token = re.fullmatch(r"Bearer \$\{([A-Z0-9_]+)\}", headers["Authorization"])
    assert token is not None and token.group(1) in deploy_variables()
    tokens = service_env()["LIGHTRAG_MCP_HTTP_TOKENS"]
    digest = re.fullmatch(r"gateway:[a-z0-9_-]+:\$\{([A-Z0-9_]+)(:\?[^}]*)?\}", tokens)
    assert digest is not None and digest.group(1) == f"{token.group(1)}_SHA256"
    assert digest.group(1) in deploy_variables()


def test_librechat_is_told_the_gateway_token_server_needs_no_oauth() -> None:
    # LibreChat probes an HTTP server without credentials at start-up unless `requiresOAuth` (or an
    # apiKey) is set; our 401 Bearer challenge would mark it "requires OAuth".
    assert librechat_server()["requiresOAuth"] is False


def test_the_readme_snippet_is_the_shipped_librechat_server_entry() -> None:
    readme = (ROOT / "README.md").read_text()
    snippet = readme[readme.index("  mcpServers:\n    lightrag:\n      type: streamable-http"):]
    snippet = snippet[: snippet.index("```")]
    pasted = yaml.safe_load("\n".join(line[2:] for line in snippet.splitlines()))["mcpServers"]["lightrag"]
    assert {key: pasted[key] for key in ("type", "url", "requiresOAuth", "headers")} == {
        key: librechat_server()[key] for key in ("type", "url", "requiresOAuth", "headers")
    }


def test_librechats_uploads_are_mounted_read_only_at_librechats_own_path() -> None:
    services = compose()["services"]
    librechat_uploads = [volume.split(":") for volume in services["api"]["volumes"] if str(volume).endswith(":/app/uploads")]
    ours = [str(volume).split(":") for volume in services[SERVICE]["volumes"] if ":/app/uploads" in str(volume)]
    assert len(librechat_uploads) == 1 and ours == [[librechat_uploads[0][0], "/app/uploads", "ro"]]
    assert service_env()["LIGHTRAG_MCP_ALLOWED_DIRS"] == "/app/uploads/{user}"


def test_the_data_directory_is_a_named_volume() -> None:
    data = effective("WORKING_DIR")
    mounts = [str(volume).split(":") for volume in compose()["services"][SERVICE]["volumes"]]
    named = [source for source, target, *_ in mounts if target == data]
    assert named and named[0] in compose()["volumes"]


# --- the image -------------------------------------------------------------------------------


def test_the_image_is_python_3_11_slim_and_runs_the_http_server_as_a_non_root_user() -> None:
    assert instructions("FROM") == ["python:3.11-slim-bookworm"]
    users = instructions("USER")
    assert users and users[-1] not in {"root", "0"}
    assert instructions("CMD") == ['["python", "-m", "mcp_front", "--transport", "http"]']
    assert dockerfile_env()["LIGHTRAG_MCP_HTTP_HOST"] == "0.0.0.0"
    assert instructions("EXPOSE") == [dockerfile_env()["LIGHTRAG_MCP_HTTP_PORT"]]
    [health] = instructions("HEALTHCHECK")
    assert "/healthz" in health and "LIGHTRAG_MCP_HTTP_PORT" in health


def test_the_image_is_set_up_like_make_setup() -> None:
    """Same lock, same flags, same lock check and model installer, in the same order."""
    ours = run_commands()
    for command in makefile_setup():
        if "-e ." in command:  # the image installs the project itself, not an editable link
            command = command.replace("-e .", ".")
        assert command in ours, f"the Dockerfile does not run `{command}` as the Makefile's set-up does"
    positions = [ours.index(command.replace("-e .", ".")) for command in makefile_setup()]
    assert positions == sorted(positions)


def test_everything_the_image_copies_exists_and_is_in_the_build_context() -> None:
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    ignored = [pattern for pattern in ignored if pattern and not pattern.startswith(("#", "!"))]
    sources = [source for args in instructions("COPY") for source in args.split()[:-1]]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch.fnmatch(source, pattern) or source.startswith(pattern + "/") for pattern in ignored)


@pytest.mark.parametrize("path", ["scripts/install_models.py", "scripts/check_lock.py", "requirements.lock"])
def test_the_setup_files_the_image_uses_are_copied_before_they_run(path: str) -> None:
    order = [(instruction, args) for instruction, args in dockerfile() if instruction in {"COPY", "RUN"}]
    copied = next(index for index, (kind, args) in enumerate(order) if kind == "COPY" and path in args)
    used = next(index for index, (kind, args) in enumerate(order) if kind == "RUN" and path in args)
    assert copied < used
