#!/usr/bin/env bash
# Runs the whole test suite (what `make test` and CI run). Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -f tests/clients/package-lock.json ] && command -v npm >/dev/null; then
  if [ ! -d tests/clients/node_modules ] || [ tests/clients/package-lock.json -nt tests/clients/node_modules ]; then
    (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed" >&2; exit 1; }
  fi
fi
.venv/bin/python -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating that as a failure" >&2
  exit 1
fi
exit "$status"
