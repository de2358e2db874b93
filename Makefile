# tensorflow-ignite: one entry point for set-up, the main job, tests and benchmarks.
#
#   make demo    the main job: a local Ignite node, data in, a model trained on it
#   make test    everything a fresh machine needs, the lint (make lint: ruff, mypy), then the whole test suite
#   make test-long  the same with the long forms of the fault tests
#   make bench   benchmarks, one full run of ~18 min (writes BENCHMARKS.md; BENCH_ARGS='...' adds options)
#   make bench-3 issue 19's verdict: 3 full runs in one command (about an hour; the last: 65 min), targets' minimum and spread
#   make bench-revisions  the read path against earlier revisions in one run (BENCHMARKS-revisions.md)
#   make soak    30 minutes of everything at once while nodes die (soak-report/)
#   make soak-follow  IgniteDataset.follow behind a slow consumer: bounded queue, flat memory
#   make wheel   cp311/cp312/cp313 manylinux wheels in dist/
#   make compat  every tested Ignite release (with a table) and the wheel on Python 3.12, 3.13
#   make docs    the documentation site in site/, built strictly (mkdocs.yml; CI builds it in the tests)
#
# `setup` is idempotent and quick when nothing changed: each step is a file
# target that depends on the inputs it was built from.

PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMPS      := .stamps
JAVA_SRC    := $(shell find java/src -name '*.java' 2>/dev/null) java/pom.xml java/sql-runtime/pom.xml
NATIVE_SRC  := $(wildcard src/tensorflow_ignite/native/*.cc) $(wildcard src/tensorflow_ignite/native/*.h) $(wildcard src/tensorflow_ignite/native/build.py)
PYTEST_ARGS ?=

.PHONY: setup system-deps venv java native stock ignite3 demo docs lint test test-long bench bench-3 bench-revisions soak soak-follow fuzz clean help wheel compat compat-wheel compat-versions

help:
	@sed -n '2,13p' Makefile

setup: system-deps venv java native stock ignite3

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
	$(PY) -m pip install --quiet -e '.[tf-cpu,test,ignite3,bench,docs]'
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

# Stock Apache Ignite for the tests (java/stock/pom.xml -> java/target/ignite-VERSION/libs):
# the releases CI runs, 2.17.0 (newest with ignite-spring on Maven Central: XML nodes)
# and 2.18.0 (core only: nodes configured in Java). `make compat` adds 2.16.0.
STOCK_XML_VERSIONS := 2.17.0
STOCK_JAVA_VERSIONS := 2.18.0
stock: $(STAMPS)/stock
$(STAMPS)/stock: java/stock/pom.xml $(STAMPS)/system-deps
	@mkdir -p $(STAMPS)
	cd java/stock && for v in $(STOCK_XML_VERSIONS); do mvn -B -q package -Dignite.version=$$v || exit 1; done
	cd java/stock && for v in $(STOCK_JAVA_VERSIONS); do mvn -B -q package -Dignite.version=$$v -P-spring || exit 1; done
	@touch $@

# Apache Ignite 3 for the tests (java/ignite3: ignite-runner and its dependencies from Maven
# Central -> java/target/ignite3-3.1.0/libs, plus the small embedded-node launcher beside it).
IGNITE3_SRC := java/ignite3/pom.xml $(shell find java/ignite3/src -name '*.java' 2>/dev/null)
ignite3: $(STAMPS)/ignite3
$(STAMPS)/ignite3: $(IGNITE3_SRC) $(STAMPS)/system-deps
	@mkdir -p $(STAMPS)
	cd java/ignite3 && mvn -B -q package
	@touch $@

native: $(STAMPS)/native
$(STAMPS)/native: $(NATIVE_SRC) $(STAMPS)/venv
	@mkdir -p $(STAMPS)
	@if [ -f src/tensorflow_ignite/native/build.py ]; then $(PY) -m tensorflow_ignite.native.build; fi
	@touch $@

demo: setup
	$(VENV)/bin/ignite-tf demo $(DEMO_ARGS)

# The documentation site, strictly: a broken link, a missing reference or a page outside the
# navigation fails (tests/unit/test_docs_site.py builds it the same way in the tests).
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# ruff (the rules in pyproject.toml) and mypy (strict on the public API) on the package; `make test`
# runs it before the tests (about 30 s of CPU, most of it mypy's first run without a cache).
lint: venv
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/mypy

test: setup lint
	bash scripts/run-tests.sh $(PYTEST_ARGS)

# The whole suite with the long forms of the fault tests (more kill trials and
# topology changes than CI's short forms; about twice as long).
test-long: setup
	bash scripts/run-tests.sh --long $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench.run $(BENCH_ARGS)

# Issue 19: a target counts as met only when it holds in each of 3 full runs. The same command
# as `make bench` with --runs 3: BENCHMARKS.md opens with each target's value in every run, the
# minimum and the spread; the rest of the file is the last run.
bench-3: setup
	$(PY) -m bench.run --runs 3 $(BENCH_ARGS)

# The read path of this checkout against earlier revisions, in one run on one node (figures from
# other days differ by more than a change being judged). REVISIONS: git revisions; the default is
# the last benchmarked commit before the dataset op became serializable (issue 18).
REVISIONS ?= b8809f9
bench-revisions: setup
	$(PY) -m bench.revisions $(REVISIONS)

# The long soak (30 minutes by default; CI runs a 90-second form in the tests):
# epochs, writes and ignite:// checkpoints on 3 nodes while a node is killed
# every 3 minutes; figures and resource curves in soak-report/.
SOAK_MINUTES ?= 30
soak: setup
	$(PY) -m bench.soak --minutes $(SOAK_MINUTES) --out soak-report

# IgniteDataset.follow behind a slow consumer: a writer at thousands of rows/s for
# SOAK_FOLLOW_SECONDS (120), the follower's queue bounded and this process's RSS flat
# (CI runs the short form of the same test).
soak-follow: setup
	SOAK_FOLLOW_SECONDS=$(or $(SOAK_FOLLOW_SECONDS),120) $(PY) -m pytest -q -s -p no:cacheprovider --long \
		tests/integration/test_dataset_follow.py -k slow_consumer $(PYTEST_ARGS)

# Every tested Ignite release (2.16, 2.17, 2.18): the stock-node and version test modules,
# then a table of each test's outcome per version.
compat: compat-versions

compat-versions: setup
	cd java/stock && mvn -B -q package -Dignite.version=2.16.0
	$(PY) -m pytest -q -p no:cacheprovider --ignite-versions all \
		tests/integration/test_ignite_versions.py tests/integration/test_stock_cluster.py $(PYTEST_ARGS)

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
