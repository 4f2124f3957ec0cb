# ExecuTorch built from source (EXECUTORCH_ROOT) for the Cortex-M33, with the event tracer.
#
# Why from source: the executorch wheel's package config describes host shared libraries; the
# board needs static Cortex-M33 libraries. Why FORCE: NXP's example turns devtools off with a
# plain set(); every option that profiling depends on is forced into the cache here and then
# read back from ExecuTorch's own directory scope, so an override anywhere fails the configure
# instead of silently producing a firmware without timestamps.

set(HIL_ET_FORCED_ON
    EXECUTORCH_BUILD_DEVTOOLS
    EXECUTORCH_ENABLE_EVENT_TRACER
    EXECUTORCH_BUILD_KERNELS_QUANTIZED
    EXECUTORCH_BUILD_NXP_NEUTRON
    EXECUTORCH_ENABLE_LOGGING)
set(HIL_ET_FORCED_OFF
    EXECUTORCH_BUILD_PYBIND
    EXECUTORCH_BUILD_EXECUTOR_RUNNER
    EXECUTORCH_BUILD_EXTENSION_MODULE
    EXECUTORCH_BUILD_TESTS
    EXECUTORCH_BUILD_XNNPACK)
foreach(opt IN LISTS HIL_ET_FORCED_ON)
  unset(${opt})  # a normal variable would shadow the cache entry in this scope
  set(${opt} ON CACHE BOOL "forced by et-hil (profiling firmware)" FORCE)
endforeach()
foreach(opt IN LISTS HIL_ET_FORCED_OFF)
  unset(${opt})
  set(${opt} OFF CACHE BOOL "forced by et-hil (bare-metal firmware)" FORCE)
endforeach()
# The bare-metal PAL: its weak et_pal_* are replaced by src/pal_rt700.cpp (DWT timestamps).
set(EXECUTORCH_PAL_DEFAULT "minimal" CACHE STRING "forced by et-hil" FORCE)
set(NEUTRON_LIB_DIR "${NEUTRON_LIB_DIR}" CACHE PATH "Neutron driver/firmware libraries" FORCE)

add_subdirectory("${EXECUTORCH_ROOT}" "${CMAKE_BINARY_DIR}/executorch" EXCLUDE_FROM_ALL)

# What ExecuTorch's own CMakeLists actually saw.
set(_hil_overridden "")
foreach(opt IN LISTS HIL_ET_FORCED_ON)
  get_directory_property(seen DIRECTORY "${EXECUTORCH_ROOT}" DEFINITION ${opt})
  if(NOT seen)
    list(APPEND _hil_overridden "${opt}=${seen}")
  endif()
endforeach()
if(_hil_overridden)
  message(FATAL_ERROR
    "et-hil RT700 firmware: ExecuTorch in ${EXECUTORCH_ROOT} overrides ${_hil_overridden} "
    "with a plain set(); the firmware would have no ETDump. Remove that set() from its CMake files.")
endif()

# Libraries the image links, by ExecuTorch target name. Registration libraries (kernels, the
# Neutron delegate) are linked whole: nothing references their static registrars.
set(HIL_ET_LIBS executorch etdump flatccrt CACHE STRING "ExecuTorch libraries linked normally")
set(HIL_ET_WHOLE_LIBS portable_ops_lib quantized_ops_lib executorch_delegate_neutron CACHE STRING
    "ExecuTorch registration libraries linked whole-archive (kernels, Neutron delegate)")
set(_hil_missing "")
foreach(lib IN LISTS HIL_ET_LIBS HIL_ET_WHOLE_LIBS)
  if(NOT TARGET ${lib})
    list(APPEND _hil_missing ${lib})
  endif()
endforeach()
if(_hil_missing)
  message(FATAL_ERROR
    "et-hil RT700 firmware: ExecuTorch in ${EXECUTORCH_ROOT} defines no target ${_hil_missing}. "
    "Check the checkout is ExecuTorch 1.5.1 or set HIL_ET_LIBS / HIL_ET_WHOLE_LIBS to its names.")
endif()
