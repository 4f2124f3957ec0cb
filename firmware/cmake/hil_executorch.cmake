# ExecuTorch built from source (EXECUTORCH_ROOT) for a Cortex-M33 et-hil firmware, with the event
# tracer: the part every board's build shares (firmware/rt700, firmware/qemu/runtime).
#
# Why from source: the executorch wheel's package config describes host shared libraries; a
# board needs static Cortex-M33 libraries. Why FORCE: NXP's example turns devtools off with a
# plain set(); every option profiling depends on is forced into the cache here and read back from
# ExecuTorch's own directory scope afterwards, so an override anywhere fails the configure instead
# of silently producing a firmware without timestamps.
#
#   hil_add_executorch(ON <board's extra options> OFF <board's extra options>)
#
# adds ExecuTorch (EXCLUDE_FROM_ALL: only what the image links is built) and defines
# hil_selected_ops() for the operator registration library of exactly the program's operators.

set(HIL_ET_COMMON_ON
    EXECUTORCH_BUILD_DEVTOOLS          # etdump + flatccrt
    EXECUTORCH_ENABLE_EVENT_TRACER     # defines ET_EVENT_TRACER_ENABLED for the runtime
    EXECUTORCH_BUILD_PORTABLE_OPS      # portable kernels and their utilities
    EXECUTORCH_ENABLE_LOGGING)
# CPUINFO and PTHREADPOOL default to ON unless EXECUTORCH_BUILD_ARM_BAREMETAL is set
# (tools/cmake/preset/default.cmake): bare metal has neither, so they are forced OFF.
set(HIL_ET_COMMON_OFF
    EXECUTORCH_BUILD_CPUINFO
    EXECUTORCH_BUILD_PTHREADPOOL
    EXECUTORCH_USE_DL
    EXECUTORCH_BUILD_PYBIND
    EXECUTORCH_BUILD_EXECUTOR_RUNNER
    EXECUTORCH_BUILD_EXTENSION_MODULE
    EXECUTORCH_BUILD_EXTENSION_DATA_LOADER
    EXECUTORCH_BUILD_EXTENSION_FLAT_TENSOR
    EXECUTORCH_BUILD_TESTS
    EXECUTORCH_BUILD_XNNPACK
    EXECUTORCH_BUILD_KERNELS_OPTIMIZED)

macro(hil_add_executorch)
  cmake_parse_arguments(_HIL_ET "" "" "ON;OFF" ${ARGN})
  set(HIL_ET_FORCED_ON ${HIL_ET_COMMON_ON} ${_HIL_ET_ON})
  set(HIL_ET_FORCED_OFF ${HIL_ET_COMMON_OFF} ${_HIL_ET_OFF})
  foreach(opt IN LISTS HIL_ET_FORCED_ON)
    unset(${opt})  # a normal variable would shadow the cache entry in this scope
    set(${opt} ON CACHE BOOL "forced by et-hil (profiling firmware)" FORCE)
  endforeach()
  foreach(opt IN LISTS HIL_ET_FORCED_OFF)
    unset(${opt})
    set(${opt} OFF CACHE BOOL "forced by et-hil (bare-metal firmware)" FORCE)
  endforeach()
  # The bare-metal PAL: its weak et_pal_* are replaced by firmware/app/pal.cpp (board ticks).
  set(EXECUTORCH_PAL_DEFAULT "minimal" CACHE STRING "forced by et-hil" FORCE)
  # flatcc's own -Werror trips on newer GCCs; the etdump runtime builds without it (as Arm's
  # bare-metal preset does for its ETDump builds).
  set(FLATCC_ALLOW_WERROR OFF CACHE BOOL "forced by et-hil" FORCE)
  set(CMAKE_POSITION_INDEPENDENT_CODE OFF)
  if(NOT PYTHON_EXECUTABLE)
    set(PYTHON_EXECUTABLE "${HIL_PYTHON}" CACHE FILEPATH "Python for ExecuTorch's code generators" FORCE)
  endif()

  add_subdirectory("${EXECUTORCH_ROOT}" "${CMAKE_BINARY_DIR}/executorch" EXCLUDE_FROM_ALL)

  # What ExecuTorch's own CMakeLists actually saw.
  set(_hil_overridden "")
  foreach(opt IN LISTS HIL_ET_FORCED_ON)
    get_directory_property(seen DIRECTORY "${EXECUTORCH_ROOT}" DEFINITION ${opt})
    if(NOT seen)
      list(APPEND _hil_overridden "${opt}=${seen}")
    endif()
  endforeach()
  foreach(opt IN LISTS HIL_ET_FORCED_OFF)
    get_directory_property(seen DIRECTORY "${EXECUTORCH_ROOT}" DEFINITION ${opt})
    if(seen)
      list(APPEND _hil_overridden "${opt}=${seen}")
    endif()
  endforeach()
  if(_hil_overridden)
    message(FATAL_ERROR
      "et-hil firmware: ExecuTorch in ${EXECUTORCH_ROOT} overrides ${_hil_overridden} "
      "with a plain set(); the firmware would be wrong for this board (no ETDump, or host-only "
      "libraries). Remove that set() from its CMake files.")
  endif()
  include("${EXECUTORCH_ROOT}/tools/cmake/Codegen.cmake")
endmacro()

# Operator registration for exactly the operators the program uses (Arm's and NXP's runners do
# the same): gen_selected_ops reads MODEL, and gen_operators_lib makes a registration library
# that ExecuTorch already links whole-archive (tools/cmake/Codegen.cmake calls
# executorch_target_link_options_shared_lib on it). Wrapping it in --whole-archive again would
# register every kernel twice and abort before main ("Kernel registration failed").
#
# hil_selected_ops(<lib> <functions_yaml|""> <custom_ops_yaml|""> <kernel_lib>)
function(hil_selected_ops lib functions_yaml custom_yaml kernel_lib)
  gen_selected_ops(LIB_NAME "${lib}" OPS_FROM_MODEL "${MODEL}")
  # ExecuTorch's rule for the operator list (tools/cmake/Codegen.cmake, gen_selected_ops) depends on the schema
  # yaml and its codegen tools, not on the model: a build folder reused for another program (the RT700 runtime
  # folder, a by-hand `make firmware` with another MODEL) kept the first program's operators under Makefiles.
  add_custom_command(OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${lib}/selected_operators.yaml" APPEND DEPENDS "${MODEL}")
  set(args LIB_NAME "${lib}")
  if(functions_yaml)
    list(APPEND args FUNCTIONS_YAML "${functions_yaml}")
  endif()
  if(custom_yaml)
    list(APPEND args CUSTOM_OPS_YAML "${custom_yaml}")
  endif()
  generate_bindings_for_kernels(${args})
  gen_operators_lib(LIB_NAME "${lib}" KERNEL_LIBS ${kernel_lib} DEPS executorch_core)
endfunction()

# hil_require_targets(<what> <target>...): a configure error naming every target ExecuTorch lacks.
function(hil_require_targets what)
  set(_missing "")
  foreach(lib IN LISTS ARGN)
    if(NOT TARGET ${lib})
      list(APPEND _missing ${lib})
    endif()
  endforeach()
  if(_missing)
    message(FATAL_ERROR
      "${what}: ExecuTorch in ${EXECUTORCH_ROOT} defines no target ${_missing}. "
      "Check the checkout is the one firmware/rt700/pins.toml names.")
  endif()
endfunction()

# hil_require_cmsis_nn(<what>): CMSIS_NN_LOCAL_PATH must name the workspace's CMSIS-NN checkout (firmware/rt700/
# pins.toml). Without it ExecuTorch's backends/cortex_m/CMakeLists.txt would fetch CMSIS-NN from the network with
# FetchContent, at whatever its CMSIS_NN_VERSION says: an offline CI hangs there, a bench gets unpinned sources.
function(hil_require_cmsis_nn what)
  if(NOT CMSIS_NN_LOCAL_PATH OR NOT EXISTS "${CMSIS_NN_LOCAL_PATH}/CMakeLists.txt")
    message(FATAL_ERROR
      "${what}: CMSIS_NN_LOCAL_PATH='${CMSIS_NN_LOCAL_PATH}' is not a CMSIS-NN checkout (pass "
      "-DCMSIS_NN_LOCAL_PATH=<workspace>/cmsis-nn; hil sources assembles it from firmware/rt700/pins.toml)")
  endif()
endfunction()
