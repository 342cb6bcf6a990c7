# csro — the two commands a fresh machine needs are `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install chromium demo test test-fast test-alone bench clean

# The venv and Chromium are installed side by side (pip and apt-get do not wait for each other).
install:
	@$(MAKE) --no-print-directory -j2 $(STAMP) chromium

# The report's browser tests drive Debian's Chromium: installed here when run as root, else
# named (the tests then skip, saying so). Failing to install it stops nothing else; the
# browser tests then fail as root.
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests (apt-get)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	      echo "error: apt-get could not install chromium; the browser tests will fail until it is installed" >&2; \
	  else \
	    echo "note: the browser tests need Chromium and skip without it: install Debian's chromium (apt-get install chromium, as root)" >&2; \
	  fi; \
	fi

$(STAMP): pyproject.toml scripts/install scripts/requirements.py scripts/llama_cpp_without_common.cmake
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (csro needs Python 3.11)" >&2; exit 2; }
	scripts/install $(PYTHON) $(VENV)
	@touch $(STAMP)

# A real CSRO run with the embedded model; each demo gets its own directory under runs/.
demo: install
	$(BIN)/csro run configs/demo.yaml --out runs/demo-$$(date +%Y%m%d-%H%M%S)

# The suite runs with a $HOME, a temporary directory and caches of its own (scripts/fresh-home),
# on two pytest-xdist workers, and prints the 25 slowest tests. A test file stays on one worker
# (its module fixtures are made once); the files with a slow test go first (tests/conftest.py),
# so that short files fill the end.
PYTEST := scripts/fresh-home $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25

test: install
	$(PYTEST)

# Every package of src/csro, without the real model, the cluster, the browser, the robot and
# the other user: a loop of one and a half to three minutes on 2 cores (fresh clones: 1 min 25 s
# on a machine that ran the whole suite in 7 min 35 s, 2 min 33 s and 3 min 04 s on one that ran
# it in 17 min 25 s and 17 min 32 s).
test-fast: install
	$(PYTEST) -m "not slow"

# Every test file alone, each with an empty $HOME of its own (scripts/each-test-file), two at
# a time: what no file may need from another. PYTEST_ARGS narrows it, e.g. PYTEST_ARGS='-m "not slow"'.
test-alone: install
	scripts/each-test-file $(BIN)/python $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/eval_throughput.py
	$(BIN)/python bench/cfr_speed.py
	$(BIN)/python bench/llm_concurrency.py
	$(BIN)/python bench/evolve_rescoring.py
	$(BIN)/python bench/robot_steps.py
	$(BIN)/python bench/srpo_step.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
