# Toolchain file of every et-hil firmware: the Arm GNU toolchain in ARMGCC_DIR (else the one on
# PATH, as Debian's gcc-arm-none-eabi installs it), for a Cortex-M33 (the MIMXRT798S's core 0 and
# QEMU's mps2-an505) with its single-precision FPU.
# The CPU flags go into the *_INIT flags so ExecuTorch, the SDK and the app all build alike
# (a hard-float object cannot link with a soft-float one).

set(CMAKE_SYSTEM_NAME Generic)
# try_compile projects re-read this file without the main cache: hand them ARMGCC_DIR.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ARMGCC_DIR)
set(CMAKE_SYSTEM_PROCESSOR cortex-m33)

if(NOT ARMGCC_DIR AND DEFINED ENV{ARMGCC_DIR})
  set(ARMGCC_DIR "$ENV{ARMGCC_DIR}")
endif()
if(NOT ARMGCC_DIR)
  find_program(_hil_arm_gcc arm-none-eabi-gcc)
  if(_hil_arm_gcc)
    get_filename_component(_hil_arm_bin "${_hil_arm_gcc}" DIRECTORY)
    get_filename_component(ARMGCC_DIR "${_hil_arm_bin}" DIRECTORY)
  endif()
endif()
set(_hil_bin "${ARMGCC_DIR}/bin/arm-none-eabi-")
set(CMAKE_C_COMPILER "${_hil_bin}gcc")
set(CMAKE_CXX_COMPILER "${_hil_bin}g++")
set(CMAKE_ASM_COMPILER "${_hil_bin}gcc")
set(CMAKE_OBJCOPY "${_hil_bin}objcopy" CACHE FILEPATH "objcopy of the Arm toolchain")
set(CMAKE_SIZE "${_hil_bin}size" CACHE FILEPATH "size of the Arm toolchain")

# No host executables can run: try_compile builds a static library instead of linking.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(HIL_CPU_FLAGS "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16")
# -g everywhere: GDB must see hil_etdump_result and the ExecuTorch frames.
set(_hil_common "${HIL_CPU_FLAGS} -g -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_hil_common}")
set(CMAKE_CXX_FLAGS_INIT "${_hil_common} -fno-exceptions -fno-rtti -fno-unwind-tables")
set(CMAKE_ASM_FLAGS_INIT "${HIL_CPU_FLAGS} -g -x assembler-with-cpp")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${HIL_CPU_FLAGS} -specs=nano.specs -specs=nosys.specs -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH "${ARMGCC_DIR}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
