# The two commands a fresh clone needs: `make run` (the server on the embedded default)
# and `make test` (the whole suite: ruff, mypy --strict, pytest). Both create .venv on first use.
# `make lock` regenerates requirements.lock (hash-pinned packages the set-up installs) after a pyproject.toml change.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done
LOCK := requirements.lock

.PHONY: setup run test test-fast lint typecheck lock clean docs bench bench-full

$(STAMP): pyproject.toml $(LOCK) scripts/check_lock.py scripts/install_models.py
	@# Set-up output goes to stderr: `make run` may be a client's server command (stdout = protocol).
	@test -x $(VPY) || $(PY) -m venv $(VENV) 1>&2
	@$(VPY) -m pip install --quiet --upgrade pip 1>&2
	@# Every third-party package exactly as locked, hash-checked. The lock is the whole closure, so
	@# --no-deps; it also pins z3c.rml, whose dependencies are left out on purpose: only its data
	@# file is used (a real-world PDF for the tests, the z3c.RML manual).
	@$(VPY) -m pip install --quiet --no-deps --require-hashes -r $(LOCK) 1>&2
	@$(VPY) -m pip install --quiet --no-deps -e . 1>&2
	@# The lock must cover pyproject.toml (runtime + [test]): anything missing fails here.
	@$(VPY) scripts/check_lock.py 1>&2
	@$(VPY) scripts/install_models.py 1>&2
	@touch $(STAMP)

setup: $(STAMP)

lock:
	@bash scripts/lock.sh

run: $(STAMP)
	@exec $(VPY) -m mcp_front

test: $(STAMP)
	@bash scripts/run_tests.sh

test-fast: $(STAMP)
	@bash scripts/run_tests.sh -m "not slow"

lint: $(STAMP)
	$(VPY) -m ruff check protocol config mcp_front rag_worker scripts tests

typecheck: $(STAMP)
	$(VPY) -m mypy

clean:
	rm -rf $(VENV) tests/clients/node_modules

docs: $(STAMP)
	$(VPY) scripts/gen_docs.py

bench: $(STAMP)
	$(VPY) scripts/bench.py --quick --json bench-results.json --markdown bench-results.md

bench-full: $(STAMP)
	$(VPY) scripts/bench.py --json bench-results.json --markdown bench-results.md
