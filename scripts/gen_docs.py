#!/usr/bin/env python3
"""Regenerate the catalogue-driven parts of README.md and `.env.example` (`make docs`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.settings import env_example, settings_markdown  # noqa: E402
from mcp_front.catalogue import TOOLS, tools_markdown  # noqa: E402

SECTIONS = {"tools": tools_markdown(TOOLS), "settings": settings_markdown()}


def render(readme: str) -> str:
    for name, body in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        readme = pattern.sub(_between(body), readme)
    return readme


def _between(body: str) -> Callable[[re.Match[str]], str]:
    """A substitution that keeps a section's markers and puts `body` between them."""
    return lambda match: f"{match.group(1)}{body}\n{match.group(2)}"


if __name__ == "__main__":
    readme_path = ROOT / "README.md"
    readme_path.write_text(render(readme_path.read_text()))
    (ROOT / ".env.example").write_text(env_example())
