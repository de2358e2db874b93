# tensorflow-ignite: one entry point for set-up, the main job, tests and benchmarks.
#
#   make demo    the main job: a local Ignite node, data in, a model trained on it
#   make test    everything a fresh machine needs, then the whole test suite
#   make bench   benchmarks (writes BENCHMARKS.md)
#   make wheel   cp311/cp312/cp313 manylinux wheels in dist/
#   make compat  the other Pythons (3.12, 3.13): wheel smoke tests
#
# `setup` is idempotent and quick when nothing changed: each step is a file
# target that depends on the inputs it was built from.

PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMPS      := .stamps
JAVA_SRC    := $(shell find java/src -name '*.java' 2>/dev/null) java/pom.xml java/sql-runtime/pom.xml
NATIVE_SRC  := $(wildcard src/tensorflow_ignite/native/*.cc) $(wildcard src/tensorflow_ignite/native/build.py)
PYTEST_ARGS ?=

.PHONY: setup system-deps venv java native demo test bench fuzz clean help wheel compat compat-wheel

help:
	@sed -n '2,11p' Makefile

setup: system-deps venv java native

# Java 17, Maven and a C++ compiler from Debian's packages when missing.
system-deps: $(STAMPS)/system-deps
$(STAMPS)/system-deps: scripts/install-system-deps.sh
	@mkdir -p $(STAMPS)
	bash scripts/install-system-deps.sh
	@touch $@

venv: $(STAMPS)/venv
$(STAMPS)/venv: pyproject.toml $(STAMPS)/system-deps
	@mkdir -p $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[tf-cpu,test]'
# tf_keras requires the full `tensorflow` wheel; the CPU build provides the same package.
	$(PY) -m pip install --quiet --no-deps 'tf-keras==2.21.*'
	@touch $@

# The node jar and Ignite's jars, built from java/ and copied into the package
# (src/tensorflow_ignite/jars/), where local nodes take them from.
java: $(STAMPS)/java
$(STAMPS)/java: $(JAVA_SRC) $(STAMPS)/venv
	@mkdir -p $(STAMPS)
	$(PY) -m tensorflow_ignite.local.java
	@touch $@

native: $(STAMPS)/native
$(STAMPS)/native: $(NATIVE_SRC) $(STAMPS)/venv
	@mkdir -p $(STAMPS)
	@if [ -f src/tensorflow_ignite/native/build.py ]; then $(PY) -m tensorflow_ignite.native.build; fi
	@touch $@

demo: setup
	$(VENV)/bin/ignite-tf demo $(DEMO_ARGS)

test: setup
	bash scripts/run-tests.sh $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench.run $(BENCH_ARGS)

# A longer atheris session than the test suite's (which runs 100,000 inputs);
# the corpus it grows in .fuzz-corpus is reused by the next run.
FUZZ_SECONDS ?= 600
fuzz: venv
	$(PY) fuzz/fuzz_protocol.py -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=.fuzz- .fuzz-corpus

# Wheels for CPython 3.11-3.13 (pyenv's interpreters) in dist/, prebuilt native
# libraries and the jars inside; see scripts/build-wheel.sh.
WHEEL_PYTHONS ?= 3.11 3.12 3.13
wheel: java
	for v in $(WHEEL_PYTHONS); do bash scripts/build-wheel.sh $$v || exit 1; done

# Install each wheel into a fresh virtualenv outside the checkout, with no
# compiler on PATH, and use it (scripts/wheel-smoke.sh). `make test` runs the
# 3.11 one (tests/integration/test_wheel.py); `compat` the others.
compat: compat-wheel
compat-wheel: java
	for v in 3.12 3.13; do bash scripts/build-wheel.sh $$v && bash scripts/wheel-smoke.sh $$v || exit 1; done

clean:
	rm -rf $(STAMPS) java/target build dist .wheel-build src/*.egg-info src/tensorflow_ignite/jars
