# ksched — every target installs what it needs into .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench chaos fidelity install lock clean

run: $(STAMP)  ## the embedded demo: NATS + kubesim + all services + a sample workload
	$(BIN)/ksched demo

test: $(STAMP) lint  ## everything CI runs
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check shared services tests examples
	$(BIN)/ruff format --check shared services tests examples
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/vulture

bench: $(STAMP)  ## performance figures (printed, not pass/fail)
	$(BIN)/ksched bench all

chaos: $(STAMP)  ## faults under load (5,000 nodes, 20,000 pods) and the long fuzzing profile
	KSCHED_FUZZ_PROFILE=chaos $(BIN)/pytest -q -p no:randomly tests/fuzz
	$(BIN)/ksched bench chaos --nodes 5000 --pods 20000 --seed $${SEED:-1} --json chaos.json

fidelity: $(STAMP)  ## agreement with the real kube-scheduler 1.36.2 on the shared scenarios
	$(BIN)/python ../shared/fidelity-public/compare.py .

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock requirements-dev.lock requirements-otel.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lock:  ## re-resolve pyproject ranges and rewrite requirements.lock (review the diff)
	rm -rf /tmp/ksched-lock && $(PYTHON) -m venv /tmp/ksched-lock
	/tmp/ksched-lock/bin/pip install --quiet .
	/tmp/ksched-lock/bin/pip freeze --exclude ksched > requirements.lock.new
	@echo "wrote requirements.lock.new"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
