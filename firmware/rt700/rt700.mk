# RT700 profiling firmware: build it (needs the bench PC's SDKs) and compile-check it (anywhere).
# Included by the top Makefile; also works alone from the repo root:
#   make -f firmware/rt700/rt700.mk firmware-check
#
#   make firmware BOARD=rt700 MODEL=path/to/model.pte [RT700_SDK_DIR=DIR] [RT700_BUILD=DIR]
#       cmake configure + build into RT700_BUILD (firmware/rt700/build) -> hil_rt700.elf, then
#       `hil check-image` on it. The sources come from the `hil sources` workspace (RT700_SDK_DIR,
#       default the one rt700-sdk makes), or from MCUX_SDK, EXECUTORCH_ROOT, NEUTRON_LIB_DIR in the
#       environment (or RT700_CMAKE_ARGS="-DMCUX_SDK=... ..."); see firmware/rt700/README.md.
#       The run count is not a build option: the harness sets it at run time.
#   make firmware-check
#       compiles the firmware sources with arm-none-eabi-g++/gcc against the ExecuTorch headers
#       of the installed executorch wheel and the stand-in board headers in firmware/rt700/check.
#   make rt700-sdk [RT700_SDK_DIR=DIR] [HIL_GIT_BASE=URL_OR_FOLDER]
#       runs `hil sources` (the same from a wheel, without this file): checks out the commits pinned in firmware/rt700/pins.toml (ExecuTorch, MCUXpresso SDK)
#       into one workspace and writes DIR/workspace.env (MCUX_SDK, EXECUTORCH_ROOT, NEUTRON_LIB_DIR).

RT700_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
RT700_COMMON := $(RT700_DIR)/../common
RT700_APP := $(RT700_DIR)/../app
RT700_BUILD ?= $(RT700_DIR)/build
# The venv that holds the executorch wheel: the top Makefile's $(PY) when included from it.
PYTHON ?= $(if $(PY),$(PY),.venv/bin/python)
CMAKE ?= cmake
RT700_CMAKE_ARGS ?=
# Compile jobs for the firmware build (ExecuTorch's kernels are most of it): one per core.
RT700_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: firmware firmware-check rt700-sdk

# The workspace `make firmware` reads: RT700_SDK_DIR, else rt700-sdk's default when it exists there
# (asked of hil.firmware.sources_cmd, so the default lives in one place), else none (paths from the
# environment).
RT700_FIRMWARE_SDK = $(or $(RT700_SDK_DIR),$(shell d=$$($(PYTHON) -c 'from hil.firmware.sources_cmd import sources_folder; print(sources_folder())' 2>/dev/null); [ -f "$$d/workspace.env" ] && echo "$$d"))

# The executorch wheel's flatc (the pinned flatbuffers' version): saves building a host flatc from
# source, most of a cold build (asked of hil.firmware.runtime_image, so the lookup lives in one place).
RT700_FLATC = $(shell $(PYTHON) -c 'from hil.firmware.runtime_image import wheel_flatc; print(wheel_flatc() or "")' 2>/dev/null)

firmware:
	@if [ "$(BOARD)" != "rt700" ]; then \
	  echo "make firmware: only BOARD=rt700 builds here (got BOARD='$(BOARD)'); the QEMU image is built by the harness" >&2; exit 2; fi
	@if [ -z "$(MODEL)" ] || [ ! -f "$(MODEL)" ]; then \
	  echo "make firmware: MODEL='$(MODEL)' is not a .pte file; pass MODEL=path/to/model.pte" >&2; exit 2; fi
	@if [ -n "$(HIL_ITERATIONS)" ]; then \
	  echo "make firmware: HIL_ITERATIONS is gone: one image serves any count; pass --iterations to hil run / --hil-iterations to pytest" >&2; exit 2; fi
	$(CMAKE) -S $(RT700_DIR) -B $(RT700_BUILD) -DMODEL=$(abspath $(MODEL)) \
	  -DHIL_PYTHON=$(abspath $(PYTHON)) $(if $(RT700_FIRMWARE_SDK),-DRT700_SDK_DIR=$(abspath $(RT700_FIRMWARE_SDK))) \
	  $(if $(RT700_FLATC),-DFLATC_EXECUTABLE=$(RT700_FLATC)) $(RT700_CMAKE_ARGS)
	$(CMAKE) --build $(RT700_BUILD) --target hil_rt700 --parallel $(RT700_JOBS)
	@echo "firmware: $(RT700_BUILD)/hil_rt700.elf"

# ---- compile check -------------------------------------------------------------------------
# The wheel ships the runtime headers under site-packages/executorch/include/executorch/...,
# and the vendored c10 headers under .../runtime/core/portable_type/c10 (reached as <c10/...>).
RT700_CHECK_DIR ?= $(RT700_BUILD)/check
RT700_ARM_GXX ?= arm-none-eabi-g++
RT700_ARM_GCC ?= arm-none-eabi-gcc
RT700_CHECK_EXTRA_FLAGS ?=
# Asked of PYTHON once, and only when a check recipe needs it (lazy, memoised).
RT700_ET_PKG = $(eval RT700_ET_PKG := $(shell $(PYTHON) -c 'import importlib.util as u; s = u.find_spec("executorch"); print(s.submodule_search_locations[0] if s else "")' 2>/dev/null))$(RT700_ET_PKG)
RT700_ET_INCLUDE = $(RT700_ET_PKG)/include
RT700_CHECK_CPU = -mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16
RT700_CHECK_COMMON = $(RT700_CHECK_CPU) -Os -g -Wall -Wextra -Werror -MMD -MP \
  -DCPU_MIMXRT798SGFOB_cm33_core0 -DMIMXRT798S_cm33_core0_SERIES -DET_EVENT_TRACER_ENABLED -DC10_USING_CUSTOM_GENERATED_MACROS \
  -I$(RT700_DIR)/src -I$(RT700_APP) -I$(RT700_COMMON) -I$(RT700_DIR)/check \
  -isystem $(RT700_ET_INCLUDE) -isystem $(RT700_ET_INCLUDE)/executorch/runtime/core/portable_type/c10 \
  $(RT700_CHECK_EXTRA_FLAGS)
RT700_CHECK_CXXFLAGS = -std=c++17 -fno-exceptions -fno-rtti $(RT700_CHECK_COMMON)
RT700_CHECK_CFLAGS = -std=c11 $(RT700_CHECK_COMMON)
RT700_CHECK_CXX_SRCS := $(wildcard $(RT700_APP)/*.cpp)
RT700_CHECK_C_SRCS := $(wildcard $(RT700_DIR)/src/*.c) $(wildcard $(RT700_APP)/*.c) $(wildcard $(RT700_COMMON)/*.c)
RT700_CHECK_OBJS = $(addprefix $(RT700_CHECK_DIR)/,$(notdir $(RT700_CHECK_CXX_SRCS:.cpp=.o) $(RT700_CHECK_C_SRCS:.c=.o)))

firmware-check: rt700-check-headers $(RT700_CHECK_OBJS)
	@echo "firmware-check: $(words $(RT700_CHECK_OBJS)) RT700 sources compile against $(RT700_ET_INCLUDE)"

.PHONY: rt700-check-headers
rt700-check-headers:
	@test -f "$(RT700_ET_INCLUDE)/executorch/runtime/executor/program.h" || { \
	  echo "firmware-check: no ExecuTorch headers under '$(RT700_ET_INCLUDE)'; is executorch installed for PYTHON=$(PYTHON)?" >&2; exit 2; }
	@mkdir -p $(RT700_CHECK_DIR)

$(RT700_CHECK_DIR)/%.o: $(RT700_APP)/%.cpp | rt700-check-headers
	$(RT700_ARM_GXX) $(RT700_CHECK_CXXFLAGS) -c $< -o $@

$(RT700_CHECK_DIR)/%.o: $(RT700_APP)/%.c | rt700-check-headers
	$(RT700_ARM_GCC) $(RT700_CHECK_CFLAGS) -c $< -o $@

$(RT700_CHECK_DIR)/%.o: $(RT700_DIR)/src/%.c | rt700-check-headers
	$(RT700_ARM_GCC) $(RT700_CHECK_CFLAGS) -c $< -o $@

$(RT700_CHECK_DIR)/%.o: $(RT700_COMMON)/%.c | rt700-check-headers
	$(RT700_ARM_GCC) $(RT700_CHECK_CFLAGS) -c $< -o $@

-include $(wildcard $(RT700_CHECK_DIR)/*.d)

# ---- source workspace ----------------------------------------------------------------------
# Empty: the module's own default, $HIL_CACHE_DIR/rt700-sdk or ~/.cache/et-hil/rt700-sdk
# (hil/base/paths.py), so the default lives in one place. RT700_SDK_ARGS: e.g. --bench-commits.
RT700_SDK_DIR ?=
RT700_SDK_ARGS ?=
# The venv comes from the top Makefile's `venv` target when included from it.
rt700-sdk: $(if $(VENV_STAMP),venv)
	$(PYTHON) -m hil.cli.main sources $(if $(RT700_SDK_DIR),--dest $(RT700_SDK_DIR)) $(RT700_SDK_ARGS)
