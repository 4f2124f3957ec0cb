# The build's inputs: every path the RT700 firmware needs, from the cache (-DNAME=...) or the
# environment, checked before project() so a bench PC that lacks one gets a single message
# naming every missing variable instead of a compiler-detection failure.

# hil_require_paths(<kind> <var>...): each <var> from the cache or the environment must name an
# existing path of <kind> (DIRECTORY or FILE). Missing or wrong ones are appended to
# HIL_INPUT_ERRORS (in the caller's scope) with a hint.
function(hil_require_paths kind)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      if(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
        set(${var} "$ENV{${var}}" CACHE PATH "${var} (taken from the environment)" FORCE)
      endif()
    endif()
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      list(APPEND HIL_INPUT_ERRORS "  ${var} is not set (pass -D${var}=... or export ${var})")
    elseif(kind STREQUAL "DIRECTORY" AND NOT IS_DIRECTORY "${${var}}")
      list(APPEND HIL_INPUT_ERRORS "  ${var}=${${var}} is not a directory")
    elseif(kind STREQUAL "FILE" AND (NOT EXISTS "${${var}}" OR IS_DIRECTORY "${${var}}"))
      list(APPEND HIL_INPUT_ERRORS "  ${var}=${${var}} is not a file")
    endif()
  endforeach()
  set(HIL_INPUT_ERRORS "${HIL_INPUT_ERRORS}" PARENT_SCOPE)
endfunction()

# hil_require_files(<var> <name>...): files that must exist inside the directory ${<var>}.
function(hil_require_files var)
  if(NOT IS_DIRECTORY "${${var}}")
    return()  # already reported by hil_require_paths
  endif()
  foreach(name IN LISTS ARGN)
    if(NOT EXISTS "${${var}}/${name}")
      list(APPEND HIL_INPUT_ERRORS "  ${var}=${${var}} holds no ${name}")
    endif()
  endforeach()
  set(HIL_INPUT_ERRORS "${HIL_INPUT_ERRORS}" PARENT_SCOPE)
endfunction()

# A workspace made by `make rt700-sdk` (RT700_SDK_DIR) supplies the four source paths at once, in
# its workspace.env (written from firmware/rt700/pins.toml); any of them set explicitly (-D or the
# environment) wins.
if(NOT DEFINED RT700_SDK_DIR AND DEFINED ENV{RT700_SDK_DIR} AND NOT "$ENV{RT700_SDK_DIR}" STREQUAL "")
  set(RT700_SDK_DIR "$ENV{RT700_SDK_DIR}")
endif()
set(HIL_WORKSPACE_ERROR "")
if(DEFINED RT700_SDK_DIR AND NOT "${RT700_SDK_DIR}" STREQUAL "")
  if(NOT EXISTS "${RT700_SDK_DIR}/workspace.env")
    set(HIL_WORKSPACE_ERROR "  RT700_SDK_DIR=${RT700_SDK_DIR} holds no workspace.env (not made by `make rt700-sdk`?)")
  else()
    file(STRINGS "${RT700_SDK_DIR}/workspace.env" _hil_env_lines REGEX "^(export )?[A-Z_]+=")
    foreach(line IN LISTS _hil_env_lines)
      string(REGEX MATCH "^(export )?([A-Z_]+)=(.*)$" _ "${line}")
      set(var "${CMAKE_MATCH_2}")
      set(value "${CMAKE_MATCH_3}")
      string(REGEX REPLACE "^'(.*)'$" "\\1" value "${value}")
      if(var MATCHES "^(MCUX_SDK|EXECUTORCH_ROOT|NEUTRON_LIB_DIR|CMSIS_NN)$"
         AND (NOT DEFINED ${var} OR "${${var}}" STREQUAL "") AND "$ENV{${var}}" STREQUAL "")
        set(${var} "${value}" CACHE PATH "${var} (from ${RT700_SDK_DIR}/workspace.env)" FORCE)
      endif()
    endforeach()
  endif()
endif()

# Debian's gcc-arm-none-eabi lives in /usr: without ARMGCC_DIR, take the toolchain on PATH.
if((NOT DEFINED ARMGCC_DIR OR "${ARMGCC_DIR}" STREQUAL "") AND "$ENV{ARMGCC_DIR}" STREQUAL "")
  find_program(_hil_arm_gcc arm-none-eabi-gcc)
  if(_hil_arm_gcc)
    get_filename_component(_hil_arm_bin "${_hil_arm_gcc}" DIRECTORY)
    get_filename_component(ARMGCC_DIR "${_hil_arm_bin}" DIRECTORY)
    set(ARMGCC_DIR "${ARMGCC_DIR}" CACHE PATH "Arm GNU toolchain root (found on PATH)" FORCE)
  endif()
endif()

set(HIL_INPUT_ERRORS "${HIL_WORKSPACE_ERROR}")
hil_require_paths(DIRECTORY MCUX_SDK EXECUTORCH_ROOT NEUTRON_LIB_DIR CMSIS_NN ARMGCC_DIR)
hil_require_paths(FILE MODEL)
hil_require_files(NEUTRON_LIB_DIR libNeutronDriver.a libNeutronFirmware.a)
hil_require_files(CMSIS_NN CMakeLists.txt Include/arm_nnfunctions.h)
hil_require_files(ARMGCC_DIR bin/arm-none-eabi-gcc)
hil_require_files(EXECUTORCH_ROOT CMakeLists.txt devtools/etdump/etdump_flatcc.h
                  backends/nxp/runtime/NeutronBackend.cpp third-party/flatcc/CMakeLists.txt
                  third-party/flatbuffers/CMakeLists.txt)

if(HIL_INPUT_ERRORS)
  list(JOIN HIL_INPUT_ERRORS "\n" _hil_errors)
  message(FATAL_ERROR
    "et-hil RT700 firmware: the build inputs are incomplete:\n${_hil_errors}\n"
    "The simplest fix: `make rt700-sdk` assembles every source from the pins in "
    "firmware/rt700/pins.toml, and `make firmware BOARD=rt700 MODEL=...` then finds them "
    "(RT700_SDK_DIR). By hand: MCUX_SDK = the `mcuxsdk` folder of a west workspace for "
    "mimxrt700evk; EXECUTORCH_ROOT = an ExecuTorch source checkout with the third-party/flatbuffers "
    "and third-party/flatcc submodules; NEUTRON_LIB_DIR = the folder holding libNeutronDriver.a and "
    "libNeutronFirmware.a for the Cortex-M33 (mcuxsdk-middleware-eiq neutron/rt700/cm33, or "
    "eiq_neutron_sdk's target/imxrt700/rt700/cm33); CMSIS_NN = a checkout of ARM-software/CMSIS-NN at the "
    "commit pins.toml names; ARMGCC_DIR = the Arm GNU toolchain root; "
    "MODEL = the .pte to link in. See firmware/rt700/README.md.")
endif()
