#!/usr/bin/env python3
"""Set-up check (`make setup`): the packages installed from requirements.lock cover pyproject.toml.

The set-up installs the lock with --no-deps, so a dependency added to pyproject.toml without
`make lock` would go missing silently. This fails (exit 1, the problems on stderr) when
* a requirement of lightrag-mcp, its [test] extra included, is not installed or has a version
  its specifier does not allow;
* `pip check` reports a broken requirement of any installed package, except those of the
  fixtures the lock installs without their dependencies on purpose (z3c.rml).
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = "lightrag-mcp"
EXTRAS = ("test",)
#: Installed --no-deps on purpose (only a data file is used): their missing dependencies are expected.
NO_DEPS_FIXTURES = {"z3c-rml"}


def project_problems() -> list[str]:
    problems = []
    for line in metadata.requires(PROJECT) or []:
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *EXTRAS)):
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{PROJECT} requires {req}, which is not installed")
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{PROJECT} requires {req}, but {version} is installed")
    return problems


def pip_check_problems() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    return [
        line
        for line in out
        if line.strip()
        and not line.startswith("No broken requirements")
        and canonicalize_name(line.split(" ", 1)[0]) not in NO_DEPS_FIXTURES
    ]


def main() -> int:
    problems = project_problems() + pip_check_problems()
    for problem in problems:
        print(f"check_lock: {problem}", file=sys.stderr)
    if problems:
        print("check_lock: requirements.lock does not match pyproject.toml: run 'make lock'", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
