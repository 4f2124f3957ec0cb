# The few MCUXpresso SDK pieces the app needs (startup, system, clocks, pins, LPUART debug
# console), found by file name inside MCUX_SDK.
#
# Why by name: the SDK's own CMake (mcux_* functions, Kconfig) wants the SDK to own the project,
# and its folder layout moves between releases; the file names of the device (MIMXRT798S),
# the board (mimxrt700evk) and the drivers do not. Each name is looked up once; when several
# files carry it, the one whose path names this device/board/example wins. Anything missing
# is reported at configure time by name, and HIL_SDK_EXTRA_SOURCES / HIL_SDK_EXTRA_INCLUDES
# add what a different SDK drop needs.

set(HIL_SDK_DEVICE "MIMXRT798S" CACHE STRING "SDK device folder/file stem")
set(HIL_SDK_CORE "cm33_core0" CACHE STRING "SDK core suffix")
set(HIL_SDK_BOARD "mimxrt700evk" CACHE STRING "SDK board name")
set(HIL_SDK_EXAMPLE "hello_world" CACHE STRING
    "SDK example whose pin_mux/clock_config/hardware_init the app borrows (debug console on LPUART0)")
set(HIL_SDK_LINKER_SCRIPT "${HIL_SDK_DEVICE}xxxx_${HIL_SDK_CORE}_flash.ld" CACHE STRING
    "Link script (by name, or an absolute path)")

set(HIL_SDK_SOURCE_NAMES
    "startup_${HIL_SDK_DEVICE}_${HIL_SDK_CORE}.[cS]"
    "system_${HIL_SDK_DEVICE}_${HIL_SDK_CORE}.c"
    board.c clock_config.c pin_mux.c hardware_init.c
    fsl_clock.c fsl_power.c fsl_reset.c fsl_common.c fsl_common_arm.c
    fsl_lpuart.c fsl_lpflexcomm.c fsl_gpio.c fsl_cache.c
    fsl_debug_console.c fsl_str.c fsl_assert.c fsl_adapter_lpuart.c
    CACHE STRING "SDK sources compiled into the image (file names; [cS] = either)")
set(HIL_SDK_HEADER_NAMES
    fsl_device_registers.h "${HIL_SDK_DEVICE}_${HIL_SDK_CORE}.h" core_cm33.h
    board.h clock_config.h pin_mux.h app.h
    fsl_common.h fsl_clock.h fsl_power.h fsl_reset.h fsl_lpuart.h fsl_lpflexcomm.h fsl_gpio.h
    fsl_iopctl.h fsl_cache.h fsl_debug_console.h fsl_str.h fsl_adapter_uart.h
    CACHE STRING "SDK headers whose folders go on the include path (file names)")
set(HIL_SDK_EXTRA_SOURCES "" CACHE STRING "More SDK sources (absolute paths)")
set(HIL_SDK_EXTRA_INCLUDES "" CACHE STRING "More SDK include folders (absolute paths)")

# Every candidate file of the SDK, listed once (the tree is large; one walk, many lookups).
file(GLOB_RECURSE _hil_sdk_files LIST_DIRECTORIES false
     "${MCUX_SDK}/*.c" "${MCUX_SDK}/*.S" "${MCUX_SDK}/*.h" "${MCUX_SDK}/*.ld")
list(FILTER _hil_sdk_files EXCLUDE REGEX "/(build|\\.git|tests?|docs?)/")

# hil_sdk_find(<out> <name-regex>): the best match for a file name, or "" if there is none.
# Preference: path names the example and the core, then the board or the device, then any.
function(hil_sdk_find out name)
  set(candidates ${_hil_sdk_files})
  list(FILTER candidates INCLUDE REGEX "/${name}$")
  set(best "")
  foreach(pattern
      "/${HIL_SDK_BOARD}/.*/${HIL_SDK_EXAMPLE}/.*${HIL_SDK_CORE}/"
      "/${HIL_SDK_BOARD}/.*/${HIL_SDK_EXAMPLE}/"
      "${HIL_SDK_DEVICE}.*/drivers/"
      "/${HIL_SDK_BOARD}/"
      "${HIL_SDK_DEVICE}"
      "(RT700|rt700)"
      ".")
    set(picked ${candidates})
    list(FILTER picked INCLUDE REGEX "${pattern}")
    if(picked)
      list(SORT picked)
      list(GET picked 0 best)
      break()
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

set(_hil_missing "")
set(HIL_SDK_SOURCES "")
foreach(name IN LISTS HIL_SDK_SOURCE_NAMES)
  string(REPLACE "." "\\." regex "${name}")
  hil_sdk_find(found "${regex}")
  if(found)
    list(APPEND HIL_SDK_SOURCES "${found}")
  else()
    list(APPEND _hil_missing "${name}")
  endif()
endforeach()
list(APPEND HIL_SDK_SOURCES ${HIL_SDK_EXTRA_SOURCES})

set(HIL_SDK_INCLUDE_DIRS "")
foreach(name IN LISTS HIL_SDK_HEADER_NAMES)
  string(REPLACE "." "\\." regex "${name}")
  hil_sdk_find(found "${regex}")
  if(found)
    get_filename_component(dir "${found}" DIRECTORY)
    list(APPEND HIL_SDK_INCLUDE_DIRS "${dir}")
  else()
    list(APPEND _hil_missing "${name}")
  endif()
endforeach()
list(APPEND HIL_SDK_INCLUDE_DIRS ${HIL_SDK_EXTRA_INCLUDES})
list(REMOVE_DUPLICATES HIL_SDK_INCLUDE_DIRS)

if(IS_ABSOLUTE "${HIL_SDK_LINKER_SCRIPT}")
  set(HIL_LINKER_SCRIPT "${HIL_SDK_LINKER_SCRIPT}")
else()
  string(REPLACE "." "\\." regex "${HIL_SDK_LINKER_SCRIPT}")
  hil_sdk_find(HIL_LINKER_SCRIPT "${regex}")
  if(NOT HIL_LINKER_SCRIPT)
    list(APPEND _hil_missing "${HIL_SDK_LINKER_SCRIPT}")
  endif()
endif()

if(_hil_missing)
  list(JOIN _hil_missing ", " _hil_missing)
  message(FATAL_ERROR
    "et-hil RT700 firmware: MCUX_SDK=${MCUX_SDK} holds no ${_hil_missing} "
    "(looked for board ${HIL_SDK_BOARD}, device ${HIL_SDK_DEVICE}, example ${HIL_SDK_EXAMPLE}). "
    "Fetch the SDK with west for ${HIL_SDK_BOARD}, or adjust HIL_SDK_SOURCE_NAMES / "
    "HIL_SDK_HEADER_NAMES and add paths with HIL_SDK_EXTRA_SOURCES / HIL_SDK_EXTRA_INCLUDES.")
endif()
message(STATUS "et-hil: link script ${HIL_LINKER_SCRIPT}")
message(STATUS "et-hil: ${CMAKE_CURRENT_LIST_FILE} picked these SDK sources:")
foreach(src IN LISTS HIL_SDK_SOURCES)
  message(STATUS "  ${src}")
endforeach()
