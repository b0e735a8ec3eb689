# Everything runs inside a project-local virtual environment, created on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo

.PHONY: demo test test-fast test-portable lint docs bench clean install

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/dmdidc demo --out $(OUT)

# The whole suite; CI's output ends with the 20 slowest tests. pytest-xdist's default `--dist load`
# is kept: the measured per-test CPU times of the whole suite, replayed through models of load,
# worksteal and loadfile, end within 1 % of each other (3700 short tests; the longest, 23 s CPU, is
# <10 % of a worker's share). `--dist loadgroup` would keep the two SimBench readers on one worker,
# but with pytest 9.2 and xdist 3.8 it ignores xdist_group (xdist sets item._nodeid, pytest 9
# keeps the id in item._id).
test: $(BIN)/.installed
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 -q \
	    --durations=20

# Everything but the tests marked `slow` (a quick check while working).
test-fast: $(BIN)/.installed
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 -q \
	    -m "not slow" --durations=10

# Users' CPUs round differently: OpenBLAS picks its kernels by CPU (SkylakeX on AVX-512 Intel,
# Haswell on AMD EPYC and older Intel, ...). The numerically sensitive tests run again under a
# second kernel, Prescott (SSE3 only, available on every x86_64 CPU, so it always differs from
# the machine's own); elsewhere the machine's kernel is kept. Reproduce a kernel-dependent
# failure with e.g. `OPENBLAS_CORETYPE=Haswell make test`.
PORTABLE_KERNEL ?= $(if $(filter x86_64,$(shell uname -m)),Prescott,)
PORTABLE_TESTS ?= tests/dmdidc tests/controllers tests/privacy/test_stable.py \
                  tests/privacy/test_vector_sas.py tests/privacy/test_accounting.py

test-portable: $(BIN)/.installed
	OPENBLAS_CORETYPE=$(PORTABLE_KERNEL) OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
	MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 -q -p no:cacheprovider $(PORTABLE_TESTS)

lint: $(BIN)/.installed
	$(BIN)/ruff check _toolbox dmdidc privacy controllers simulations tests benchmarks
	$(BIN)/lint-imports --no-cache

# The documentation site, from docs/ and the docstrings, into site/ (warnings are errors).
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) out site .pytest_cache .hypothesis
