# The two commands of the README:
#   make run   - create/reuse .venv, install everything, run the streaming demo
#   make test  - create/reuse .venv, install everything with test deps, run every test
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.renewable-huber-installed

.PHONY: run test setup clean

run: setup
	$(VENV)/bin/renewable-huber demo

test: setup
	$(VPY) -m pytest

setup: $(STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV) || { echo "error: '$(PYTHON) -m venv' failed; on Debian install python3-venv"; exit 1; }
	$(VPY) -m pip install --quiet --upgrade pip

$(STAMP): $(VPY) pyproject.toml
	$(VPY) -m pip install --quiet -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build native/build* .pytest_cache
