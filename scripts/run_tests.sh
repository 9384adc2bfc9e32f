#!/usr/bin/env bash
# Runs the whole test suite (what `make test` and CI run): ruff, mypy (strict on protocol, config,
# mcp_front, rag_worker: [tool.mypy] in pyproject.toml), then pytest. Extra arguments go to pytest.
# Every step runs even when an earlier one fails, so one log shows all three results; the exit
# status is non-zero if any failed. SKIP_CHECKS=1 skips ruff and mypy (a quick local pytest run only).
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

step() {  # step NAME COMMAND...: runs it, prints one timing line, records a failure
  local name=$1 start status
  shift
  start=$(now)
  "$@"
  status=$?
  if [ "$status" -eq 0 ]; then
    echo "run_tests: $name passed in $(elapsed "$start")"
  else
    echo "run_tests: $name FAILED (exit $status) in $(elapsed "$start")"
    failed+=("$name")
  fi
}

if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  step "ruff check" .venv/bin/python -m ruff check protocol config mcp_front rag_worker scripts tests
  step "mypy --strict" .venv/bin/python -m mypy
fi

if [ -f tests/clients/package-lock.json ] && command -v npm >/dev/null; then
  if [ ! -d tests/clients/node_modules ] || [ tests/clients/package-lock.json -nt tests/clients/node_modules ]; then
    (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed" >&2; exit 1; }
  fi
fi

# pytest's own closing line gives its result and time; nothing is printed after it unless a step failed.
# Two test processes (pytest-xdist), each taking whole files: most tests wait on servers they start,
# so two at once on 2 cores halve the suite (30–36 → 16 minutes measured); PYTEST_WORKERS=0 runs it in one.
# Files are dealt in the order tests/conftest.py sorts them (longest suites first); xdist's own
# reorder (files with the most tests first) dealt the 7-minute soak, one test, last.
# The slowest tests are named in every log: the suite's budget is ~20 minutes.
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating that as a failure" >&2
  status=1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "run_tests: FAILED: ${failed[*]} (see above)" >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
