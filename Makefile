# et-hil: two commands set up a fresh machine and do the work.
#   make demo   profile cifar10 and ds_cnn on the QEMU board and print their tables
#   make test   the whole test suite (unit tests + device tests on the QEMU board)
#   make check  the unit tests and the fast system tests: a contributor's inner loop (CONTRIBUTING.md)
# Each installs what it needs (Debian packages, a pinned .venv) and is quick once installed.

SHELL := /bin/bash
PYTHON_BOOT ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
APT_PACKAGES := qemu-system-arm gcc gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi gdb-multiarch ser2net \
  cmake ninja-build git chromium strace
# pyproject.toml states ranges; constraints.txt holds the exact versions this venv installs and CI tests with.
CONSTRAINTS := constraints.txt
# The venv is rebuilt only when the project's ranges or its pins change.
VENV_STAMP := $(VENV)/.et-hil-$(shell cat pyproject.toml $(CONSTRAINTS) | sha256sum | cut -c1-16)
# labgrid lives in its own venv: it needs pyserial-labgrid, a fork that installs the same `serial` package as
# the pinned pyserial (constraints.txt), so the two cannot share one venv. The harness runs its labgrid-coordinator,
# labgrid-exporter and labgrid-client as child processes (HIL_LABGRID_BIN names another folder holding them).
LAB_VENV ?= .venv-lab
LABGRID_PIN := labgrid==26.0.1
LAB_STAMP := $(LAB_VENV)/.et-hil-$(LABGRID_PIN)
DEMO_OUT ?= hil-artifacts/demo
TEST_ARGS ?=
# The pinned firmware sources (firmware/rt700/pins.toml): the QEMU board builds the real firmware from
# them, the RT700 build test links from them. `sources` assembles them once with `hil sources` (HIL_GIT_BASE:
# a local mirror; else the public host, if it answers quickly) and says in one line when they cannot be had.
HIL_SOURCES ?= $(or $(RT700_SDK_DIR),$(HOME)/.cache/et-hil/rt700-sdk)

.PHONY: demo test check setup apt venv lab-venv sources clean-cache firmware firmware-check mutation

setup: apt venv lab-venv

# Debian packages: checked with dpkg (fast), installed only when one is missing.
apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@echo "installing the pinned Python packages of $(CONSTRAINTS) into $(VENV) (torch==2.13.0 CPU, executorch==1.5.1, ...)"
	@$(PY) -m pip install -q --disable-pip-version-check -c $(CONSTRAINTS) -e ".[test]" 2>&1 | grep -v "^WARNING: Location" || true
	@$(PY) -c "import torch, executorch, pyocd, serial, pygdbmi, pytest_embedded, xmlschema, hypothesis, xdist, prometheus_client, safetensors; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	@rm -f $(VENV)/.et-hil-*; touch $@

lab-venv: $(LAB_STAMP)

$(LAB_STAMP):
	@test -x $(LAB_VENV)/bin/python || $(PYTHON_BOOT) -m venv $(LAB_VENV)
	@echo "installing $(LABGRID_PIN) into $(LAB_VENV) (kept apart from pyserial==3.5)"
	@$(LAB_VENV)/bin/python -m pip install -q --disable-pip-version-check $(LABGRID_PIN) 2>&1 | grep -v "^WARNING: Location" || true
	@$(LAB_VENV)/bin/labgrid-client --help >/dev/null
	@rm -f $(LAB_VENV)/.et-hil-*; touch $@

sources: venv
	@$(PY) -m hil.cli.main sources --optional -q --dest $(HIL_SOURCES)

demo: setup sources
	RT700_SDK_DIR=$(HIL_SOURCES) $(VENV)/bin/hil run --board qemu --model cifar10 --delegate none --out $(DEMO_OUT)/cifar10
	RT700_SDK_DIR=$(HIL_SOURCES) $(VENV)/bin/hil run --board qemu --model cifar10 --out $(DEMO_OUT)/cifar10-npu
	RT700_SDK_DIR=$(HIL_SOURCES) $(VENV)/bin/hil run --board qemu --model ds_cnn --out $(DEMO_OUT)/ds_cnn

# Two xdist workers: the board tests (tests/system, tests/device) all on one, in order (conftest.py groups
# them), the unit tests on the other meanwhile. TEST_JOBS=0 runs everything in one process.
TEST_JOBS ?= 2
test: setup sources firmware-check
	RT700_SDK_DIR=$(HIL_SOURCES) $(PY) -m pytest --board qemu -n $(TEST_JOBS) --dist loadgroup $(TEST_ARGS)

# The inner loop: every unit test and the system tests that build no firmware image and boot no QEMU, picked by
# `--durations` (CONTRIBUTING.md, "make check"), on the same two workers. No source workspace needed; `make test`
# stays the whole suite.
# CHECK_SLOW: the unit test files that take a third of the unit tests' time (a 57 s property round of
# profile mutants, model exports in child processes (two files), firmware builds, the 85 s round of figures verified),
# left to `make test`.
CHECK_SYSTEM ?= tests/system/test_plugin_manners.py
CHECK_SLOW ?= tests/unit/test_readers_property.py tests/unit/test_export_reads.py tests/unit/test_firmware_check.py \
              tests/unit/test_figures_round.py tests/unit/test_native_reads.py
check: setup
	$(PY) -m pytest -q -p no:cacheprovider --board qemu -n $(TEST_JOBS) --dist loadgroup --durations=10 \
	  $(foreach slow,$(CHECK_SLOW),--ignore=$(slow)) tests/unit $(CHECK_SYSTEM) $(TEST_ARGS)

# Mutation testing of the code that computes what users act on (hil/analysis/, hil/regress/compare.py,
# budgets.py, stats.py; the list is [tool.mutmut] in pyproject.toml). Not part of `make test`: it runs
# the fast unit tests once per mutant, about 42 minutes on two cores. Prints the share of mutants killed
# and fails below MUTATION_FLOOR percent.
MUTATION_FLOOR ?= 90
mutation: setup
	@$(PY) -m pip install -q --disable-pip-version-check -c $(CONSTRAINTS) -e ".[mutation]" 2>&1 | grep -v "^WARNING: Location" || true
	rm -rf mutants
	@echo "mutmut's own output goes to mutmut-run.log"
	$(VENV)/bin/mutmut run --max-children 2 > mutmut-run.log 2>&1 || true
	@$(VENV)/bin/mutmut export-cicd-stats > /dev/null
	@$(PY) -c "import json, sys; s = json.load(open('mutants/mutmut-cicd-stats.json')); k = s['killed'] + s['timeout'] + s['segfault']; \
	  judged = k + s['survived'] + s['no_tests']; \
	  judged or sys.exit(f\"mutmut judged none of {s['total']} mutants: its test run failed, see the end of mutmut-run.log\"); \
	  score = 100 * k / s['total']; \
	  print(f\"mutation score: {k} of {s['total']} mutants killed ({score:.1f}%), {s['survived']} survived, {s['no_tests']} not reached by a test\"); \
	  score >= $(MUTATION_FLOOR) or sys.exit(f\"below the floor of $(MUTATION_FLOOR)%: mutmut results lists the survivors\")"

clean-cache:
	rm -rf $${HIL_CACHE_DIR:-$$HOME/.cache/et-hil}

-include firmware/rt700/rt700.mk
