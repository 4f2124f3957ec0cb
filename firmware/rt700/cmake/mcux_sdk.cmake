# The MCUXpresso SDK pieces of the image: an explicit list of files, relative to MCUX_SDK (the
# `mcuxsdk` folder of a west workspace, or of the workspace `make rt700-sdk` assembles).
#
# Why a list and not a search by name: the SDK holds several files of each name (the armclang
# startup under devices/.../arm/, drivers/dsc_gpio/fsl_gpio.c, drivers/cache/armv7-a/fsl_cache.c,
# the full debug_console/ next to debug_console_lite/, aws_examples link scripts), and a search
# picks whichever sorts first. NXP's own ExecuTorch example for this board
# (examples/nxp/mcuxpresso/imxrt700/executorch_cifarnet/CMakeLists.txt in pytorch/executorch)
# compiles exactly these device, driver and component files; the board files come from
# mcuxsdk-examples' _boards/mimxrt700evk. A missing file is a configure error naming it.

set(HIL_SDK_BOARD_DIR "examples/_boards/mimxrt700evk" CACHE STRING
    "Board folder inside MCUX_SDK (board.c, pmic_support.c, flash_config/, common/clock/)")
# The eIQ example whose pin_mux.c sets up the console (LPUART0 on LP_FLEXCOMM0) and the PMIC's I2C
# pins. NXP's executorch_cifarnet folder is newer than the pinned examples commit; tflm_cifar10 is
# the eIQ example of the same board with the same BOARD_InitPins/BOARD_InitPmicPins pair.
set(HIL_SDK_PINMUX_DIR "${HIL_SDK_BOARD_DIR}/eiq_examples/tflm_cifar10/cm33_core0" CACHE STRING
    "Folder inside MCUX_SDK holding pin_mux.c/.h and app.h")

set(HIL_SDK_SOURCE_FILES
    # Board: XSPI boot header, pins, board helpers (AHBSC, debug console), PMIC, clock trees.
    "${HIL_SDK_BOARD_DIR}/flash_config/flash_config.c"
    "${HIL_SDK_PINMUX_DIR}/pin_mux.c"
    "${HIL_SDK_BOARD_DIR}/board.c"
    "${HIL_SDK_BOARD_DIR}/pmic_support.c"
    "${HIL_SDK_BOARD_DIR}/common/clock/cm33_core0/clock_config.c"
    # Device: GCC C start-up (not arm/startup_*.S, which is armclang's), system init, SoC drivers.
    devices/RT/RT700/MIMXRT798S/startup_MIMXRT798S_cm33_core0.c
    devices/RT/RT700/MIMXRT798S/system_MIMXRT798S_cm33_core0.c
    devices/RT/RT700/MIMXRT798S/drivers/fsl_clock.c
    devices/RT/RT700/MIMXRT798S/drivers/fsl_power.c
    devices/RT/RT700/MIMXRT798S/drivers/fsl_reset.c
    # Peripheral drivers: the RT700's caches are XCACHE, its GPIO is drivers/gpio.
    drivers/common/fsl_common.c
    drivers/common/fsl_common_arm.c
    drivers/cache/xcache/fsl_cache.c
    drivers/lpflexcomm/fsl_lpflexcomm.c
    drivers/lpflexcomm/lpi2c/fsl_lpi2c.c
    drivers/lpflexcomm/lpuart/fsl_lpuart.c
    drivers/gpio/fsl_gpio.c
    drivers/glikey/fsl_glikey.c
    # Components: UART adapter, PMIC driver, the lite debug console and its formatter.
    components/uart/fsl_adapter_lpuart.c
    components/pmic/pca9422/fsl_pca9422.c
    components/debug_console_lite/fsl_debug_console.c
    components/str/fsl_str.c
    CACHE STRING "SDK sources compiled into the image (paths relative to MCUX_SDK)")

set(HIL_SDK_INCLUDE_SUBDIRS
    arch/arm/CMSIS/Core/Include
    devices/RT/RT700/MIMXRT798S
    devices/RT/RT700/MIMXRT798S/drivers
    devices/RT/RT700/periph
    drivers/common
    drivers/cache/xcache
    drivers/lpflexcomm
    drivers/lpflexcomm/lpuart
    drivers/lpflexcomm/lpi2c
    drivers/gpio
    drivers/glikey
    drivers/xspi
    components/uart
    components/pmic/pca9422
    components/debug_console_lite
    components/str
    "${HIL_SDK_BOARD_DIR}"
    "${HIL_SDK_BOARD_DIR}/flash_config"
    "${HIL_SDK_BOARD_DIR}/common/clock/cm33_core0"
    "${HIL_SDK_PINMUX_DIR}"
    CACHE STRING "SDK include folders (paths relative to MCUX_SDK)")

# What NXP's example defines for the SDK files: the part (newer fsl_device_registers.h accepts
# only the GFOB/GAWBR names; NXP also keeps GFOA), the series, the boot header, the debug
# console's printf features (%p with 0x, %zu and %.*s need PRINTF_ADVANCED_ENABLE), and the
# start-up's data/bss handling.
set(HIL_SDK_DEFINES
    CPU_MIMXRT798SGFOB_cm33_core0
    CPU_MIMXRT798SGFOA_cm33_core0
    MIMXRT798S_cm33_core0_SERIES
    MCUXPRESSO_SDK
    BOOT_HEADER_ENABLE=1
    __STARTUP_INITIALIZE_NONCACHEDATA
    __STARTUP_CLEAR_BSS
    SDK_DEBUGCONSOLE=1
    PRINTF_ADVANCED_ENABLE=1
    SDK_I2C_BASED_COMPONENT_USED=1)

set(HIL_SDK_SOURCES "")
set(_hil_sdk_missing "")
foreach(rel IN LISTS HIL_SDK_SOURCE_FILES)
  if(EXISTS "${MCUX_SDK}/${rel}")
    list(APPEND HIL_SDK_SOURCES "${MCUX_SDK}/${rel}")
  else()
    list(APPEND _hil_sdk_missing "${rel}")
  endif()
endforeach()
set(HIL_SDK_INCLUDE_DIRS "")
foreach(rel IN LISTS HIL_SDK_INCLUDE_SUBDIRS)
  if(IS_DIRECTORY "${MCUX_SDK}/${rel}")
    list(APPEND HIL_SDK_INCLUDE_DIRS "${MCUX_SDK}/${rel}")
  else()
    list(APPEND _hil_sdk_missing "${rel}/")
  endif()
endforeach()
if(_hil_sdk_missing)
  list(JOIN _hil_sdk_missing "\n  " _hil_sdk_missing)
  message(FATAL_ERROR
    "et-hil RT700 firmware: MCUX_SDK=${MCUX_SDK} lacks:\n  ${_hil_sdk_missing}\n"
    "Assemble the pinned workspace with `make rt700-sdk` (firmware/rt700/pins.toml), or point "
    "MCUX_SDK at a west workspace for mimxrt700evk (SDK 26.06).")
endif()

# The SDK's C files are not ours to lint; they build with their own warnings.
set_source_files_properties(${HIL_SDK_SOURCES} PROPERTIES COMPILE_OPTIONS "-w")
