# The shared application (firmware/app) as every board's image builds it: its sources, its build
# knobs and what its target needs. A board's CMakeLists adds its glue, link script and libraries.
#
#   add_executable(<image> ${HIL_APP_SOURCES} <board sources>)
#   hil_app_target(<image>)

set(HIL_METHOD_POOL_SIZE 0x80000 CACHE STRING "Method allocator pool, bytes")
set(HIL_TEMP_POOL_SIZE 0x80000 CACHE STRING "Temp allocator pool, bytes")
set(HIL_ETDUMP_BUFFER_SIZE 0x80000 CACHE STRING "ETDumpGen static buffer, bytes")
set(HIL_MAX_RUNS 1000 CACHE STRING "Most warm-up + measured inferences one boot can run")
# The debug buffer of intermediate outputs (app/hil_config.h), 0 = none. Not kept in the cache: one build
# folder serves many images, and an image configured without -DHIL_DEBUG_BUFFER_SIZE must get none,
# whatever the image before it had.
if(NOT DEFINED HIL_DEBUG_BUFFER_SIZE)
  set(HIL_DEBUG_BUFFER_SIZE 0)
endif()
set(HIL_DEBUG_BUFFER_SIZE "${HIL_DEBUG_BUFFER_SIZE}")
unset(HIL_DEBUG_BUFFER_SIZE CACHE)

get_filename_component(HIL_FIRMWARE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(HIL_APP_SOURCES
  ${HIL_FIRMWARE_DIR}/app/main.cpp
  ${HIL_FIRMWARE_DIR}/app/method_setup.cpp
  ${HIL_FIRMWARE_DIR}/app/io_tables.cpp
  ${HIL_FIRMWARE_DIR}/app/pal.cpp
  ${HIL_FIRMWARE_DIR}/app/hil_console.c
  ${HIL_FIRMWARE_DIR}/app/etdump_frames.c
  ${HIL_FIRMWARE_DIR}/app/newlib_shims.c
  ${HIL_FIRMWARE_DIR}/common/hil_result.c
  ${HIL_FIRMWARE_DIR}/common/hil_io.c
  ${HIL_FIRMWARE_DIR}/common/hil_crc32.c)

function(hil_app_target target)
  target_include_directories(${target} PRIVATE ${HIL_FIRMWARE_DIR}/app ${HIL_FIRMWARE_DIR}/common)
  target_compile_definitions(${target} PRIVATE
    ET_EVENT_TRACER_ENABLED
    HIL_MAX_RUNS=${HIL_MAX_RUNS}u
    HIL_METHOD_POOL_SIZE=${HIL_METHOD_POOL_SIZE}
    HIL_TEMP_POOL_SIZE=${HIL_TEMP_POOL_SIZE}
    HIL_ETDUMP_BUFFER_SIZE=${HIL_ETDUMP_BUFFER_SIZE}
    HIL_DEBUG_BUFFER_SIZE=${HIL_DEBUG_BUFFER_SIZE})
  # ExecuTorch's log sizes through newlib-nano (app/hil_console.c).
  target_link_options(${target} PRIVATE "-Wl,--wrap=vsnprintf")
endfunction()
