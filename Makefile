# Shortcuts for the two commands in the README; dev.py needs nothing but Python 3.11.
PYTHON ?= python3.11

.PHONY: run test lint
run:
	$(PYTHON) dev.py run
test:
	$(PYTHON) dev.py test
lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/lint-imports
