"""Configuration: defaults, and one clear line naming a bad variable."""

from __future__ import annotations

import pytest

from config.settings import SETTINGS, ConfigError, env_example, load_settings, settings_markdown


def test_defaults_need_no_configuration() -> None:
    settings = load_settings({"HOME": "/nonexistent"})
    assert settings.ping_interval == 5 and settings.ping_timeout == 3
    assert settings.max_requests == 1000 and settings.call_timeout == 60
    assert settings.default_workspace == "default" and settings.user_id == ""


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("LIGHTRAG_MCP_PING_INTERVAL", "soon", "is not a number"),
        ("LIGHTRAG_MCP_MAX_RESTARTS", "0", "out of range"),
        ("LIGHTRAG_MCP_DEBUG_METHODS", "maybe", "not a boolean"),
        ("LIGHTRAG_MCP_LOG_LEVEL", "LOUD", "not a log level"),
        ("LIGHTRAG_MCP_USER_ID", "{{LIBRECHAT_USER_ID}}", "unexpanded placeholder"),
        ("LIGHTRAG_MCP_USER_ID", "${USER}", "unexpanded placeholder"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({name: value})
    assert name in str(caught.value) and fragment in str(caught.value)


def test_env_example_and_readme_are_generated_from_the_settings_table() -> None:
    from tests.conftest import PROJECT_ROOT

    assert (PROJECT_ROOT / ".env.example").read_text() == env_example(), "regenerate: python -m mcp_front --env-example"
    assert settings_markdown() in (PROJECT_ROOT / "README.md").read_text()
    for setting in SETTINGS:
        assert setting.name in env_example()
