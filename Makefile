# The two commands a fresh clone needs: `make run` (the server on the embedded default)
# and `make test` (the whole suite). Both create .venv on first use.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done

.PHONY: setup run test test-fast lint clean docs bench bench-full

$(STAMP): pyproject.toml scripts/install_models.py
	@# Set-up output goes to stderr: `make run` may be a client's server command (stdout = protocol).
	@test -x $(VPY) || $(PY) -m venv $(VENV) 1>&2
	@$(VPY) -m pip install --quiet --upgrade pip 1>&2
	@$(VPY) -m pip install --quiet -e '.[test]' 1>&2
	@# A real-world PDF for the tests (the z3c.RML manual); only the data file is used.
	@$(VPY) -m pip install --quiet --no-deps z3c.rml==5.2 1>&2
	@$(VPY) scripts/install_models.py 1>&2
	@touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	@exec $(VPY) -m mcp_front

test: $(STAMP)
	@bash scripts/run_tests.sh

test-fast: $(STAMP)
	@bash scripts/run_tests.sh -m "not slow"

lint: $(STAMP)
	$(VPY) -m ruff check protocol config mcp_front rag_worker scripts tests

clean:
	rm -rf $(VENV) tests/clients/node_modules

docs: $(STAMP)
	$(VPY) scripts/gen_docs.py

bench: $(STAMP)
	$(VPY) scripts/bench.py --quick --json bench-results.json --markdown bench-results.md

bench-full: $(STAMP)
	$(VPY) scripts/bench.py --json bench-results.json --markdown bench-results.md
