# ksched — every target installs what it needs into .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench chaos fidelity differential install lock clean

run: $(STAMP)  ## the embedded demo: NATS + kubesim + all services + a sample workload
	$(BIN)/ksched demo

test: $(STAMP) lint  ## everything CI runs: one pytest worker per core (at most 4), a test file per worker
	$(BIN)/pytest -q --numprocesses auto --maxprocesses 4 --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check shared services tests examples
	$(BIN)/ruff format --check shared services tests examples
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/vulture

bench: $(STAMP)  ## performance figures (printed, not pass/fail)
	$(BIN)/ksched bench all

KUBE ?= ../shared/kube-1.36
chaos: $(STAMP)  ## faults under load (5,000 nodes, 20,000 pods; on kubesim and on the real API server of $(KUBE)) and the long fuzzing profile
	KSCHED_FUZZ_PROFILE=chaos $(BIN)/pytest -q -p no:randomly tests/fuzz
	$(BIN)/ksched bench chaos --nodes 5000 --pods 20000 --seed $${SEED:-1} --json chaos.json
	$(BIN)/ksched bench chaos --nodes 5000 --pods 20000 --seed $${SEED:-1} --nats-servers 3 --json chaos-cluster.json
	$(BIN)/ksched bench chaos --nodes 5000 --pods 20000 --seed $${SEED:-1} --kube $(KUBE) --json chaos-kube.json

fidelity: $(STAMP)  ## agreement with the real kube-scheduler 1.36.2 on the shared scenarios
	$(BIN)/python ../shared/fidelity-public/compare.py .

CASES ?= 2000
SEED ?= 1
differential: $(STAMP)  ## the long differential profile: $(CASES) random cases of every category on the real kube-scheduler of $(KUBE), with the pipeline
	$(BIN)/ksched differential --kube $(KUBE) --cases $(CASES) --seed $(SEED) --pipeline

install: $(STAMP)

$(STAMP): pyproject.toml setup.py requirements.lock requirements-dev.lock requirements-build.lock requirements-otel.lock requirements-plot.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Re-resolve pyproject's ranges in a scratch venv (the dev tools keep their pins), then pip-compile
# pins each release with the sha256 of all its files. Writes *.lock.new: review the diff, copy the
# headers over, and rename.
LOCK := /tmp/ksched-lock
lock:
	rm -rf $(LOCK) && mkdir -p $(LOCK)
	$(PYTHON) -m venv $(LOCK)/resolve && $(LOCK)/resolve/bin/pip install --quiet .
	$(LOCK)/resolve/bin/pip freeze --exclude ksched > $(LOCK)/runtime.in
	grep -o '^[A-Za-z0-9_.-]*==[^ ]*' requirements-dev.lock | cat $(LOCK)/runtime.in - \
	  | awk -F== '!seen[tolower($$1)]++' > $(LOCK)/dev.in
	grep -o '^setuptools==[^ ]*' requirements-build.lock > $(LOCK)/build.in
	grep -o '^[A-Za-z0-9_.-]*==[^ ]*' requirements-otel.lock > $(LOCK)/otel.in
	grep -o '^[A-Za-z0-9_.-]*==[^ ]*' requirements-plot.lock > $(LOCK)/plot.in
	$(PYTHON) -m venv $(LOCK)/tools && $(LOCK)/tools/bin/pip install --quiet pip-tools
	for f in runtime dev build otel plot; do \
	  $(LOCK)/tools/bin/pip-compile --quiet --generate-hashes --allow-unsafe --no-header --no-annotate \
	    --no-emit-index-url --no-emit-find-links --strip-extras $(LOCK)/$$f.in -o $(LOCK)/$$f.txt || exit 1; \
	done
	cp $(LOCK)/runtime.txt requirements.lock.new
	cp $(LOCK)/build.txt requirements-build.lock.new
	cp $(LOCK)/dev.txt requirements-dev.lock.new
	cp $(LOCK)/otel.txt requirements-otel.lock.new
	cp $(LOCK)/plot.txt requirements-plot.lock.new
	@echo "wrote requirements.lock.new, requirements-build.lock.new, requirements-dev.lock.new, requirements-otel.lock.new, requirements-plot.lock.new"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
