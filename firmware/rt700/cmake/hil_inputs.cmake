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

set(HIL_INPUT_ERRORS "")
hil_require_paths(DIRECTORY MCUX_SDK EXECUTORCH_ROOT NEUTRON_LIB_DIR ARMGCC_DIR)
hil_require_paths(FILE MODEL)
hil_require_files(NEUTRON_LIB_DIR libNeutronDriver.a libNeutronFirmware.a)
hil_require_files(ARMGCC_DIR bin/arm-none-eabi-gcc)
hil_require_files(EXECUTORCH_ROOT CMakeLists.txt devtools/etdump/etdump_flatcc.h)

if(HIL_INPUT_ERRORS)
  list(JOIN HIL_INPUT_ERRORS "\n" _hil_errors)
  message(FATAL_ERROR
    "et-hil RT700 firmware: the build inputs are incomplete:\n${_hil_errors}\n"
    "MCUX_SDK: the MCUXpresso SDK 26.06 west workspace for mimxrt700evk; "
    "EXECUTORCH_ROOT: an ExecuTorch 1.5.1 source checkout; "
    "NEUTRON_LIB_DIR: eiq_neutron_sdk/target/imxrt700/rt700/cm33; "
    "ARMGCC_DIR: the Arm GNU toolchain root (holding bin/arm-none-eabi-gcc); "
    "MODEL: the .pte to link in. See firmware/rt700/README.md.")
endif()
