"""`cmake -S firmware/rt700` configured for real against stand-in source trees (no SDK needed).

The stand-in MCUXpresso tree holds the files NXP's own ExecuTorch example for this board compiles
(pytorch/executorch examples/nxp/mcuxpresso/imxrt700/executorch_cifarnet/CMakeLists.txt) *and* the
decoys a search by file name would pick instead: the armclang start-up under arm/, dsc_gpio's
fsl_gpio.c, the Cortex-A cache driver, the full debug_console, another example's link script. The
expected file lists below are written from that example, not read from the build's own list.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hil.base.paths import REPO_ROOT

RT700 = REPO_ROOT / "firmware" / "rt700"
INPUT_VARS = ("MCUX_SDK", "EXECUTORCH_ROOT", "NEUTRON_LIB_DIR", "CMSIS_NN", "ARMGCC_DIR", "MODEL", "RT700_SDK_DIR")
BOARD = "examples/_boards/mimxrt700evk"

# The files NXP's example compiles (its board files for this board; its hardware_init.c is ours).
EXPECTED_SOURCES = [
    f"{BOARD}/flash_config/flash_config.c",
    f"{BOARD}/eiq_examples/tflm_cifar10/cm33_core0/pin_mux.c",
    f"{BOARD}/board.c",
    f"{BOARD}/pmic_support.c",
    f"{BOARD}/common/clock/cm33_core0/clock_config.c",
    "devices/RT/RT700/MIMXRT798S/startup_MIMXRT798S_cm33_core0.c",
    "devices/RT/RT700/MIMXRT798S/system_MIMXRT798S_cm33_core0.c",
    "devices/RT/RT700/MIMXRT798S/drivers/fsl_clock.c",
    "devices/RT/RT700/MIMXRT798S/drivers/fsl_power.c",
    "devices/RT/RT700/MIMXRT798S/drivers/fsl_reset.c",
    "drivers/common/fsl_common.c",
    "drivers/common/fsl_common_arm.c",
    "drivers/cache/xcache/fsl_cache.c",
    "drivers/lpflexcomm/fsl_lpflexcomm.c",
    "drivers/lpflexcomm/lpi2c/fsl_lpi2c.c",
    "drivers/lpflexcomm/lpuart/fsl_lpuart.c",
    "drivers/gpio/fsl_gpio.c",
    "drivers/glikey/fsl_glikey.c",
    "components/uart/fsl_adapter_lpuart.c",
    "components/pmic/pca9422/fsl_pca9422.c",
    "components/debug_console_lite/fsl_debug_console.c",
    "components/str/fsl_str.c",
]
EXPECTED_INCLUDES = ["arch/arm/CMSIS/Core/Include", "devices/RT/RT700/periph", "drivers/glikey", "drivers/xspi",
                     "components/debug_console_lite", f"{BOARD}/flash_config"]
DECOYS = [
    "devices/RT/RT700/MIMXRT798S/arm/startup_MIMXRT798S_cm33_core0.S",
    "drivers/dsc_gpio/fsl_gpio.c",
    "drivers/cache/armv7-a/fsl_cache.c",
    "components/debug_console/fsl_debug_console.c",
    f"{BOARD}/aws_examples/common/linker/MIMXRT798Sxxxx_cm33_core0_flash.ld",
    "devices/RT/RT700/MIMXRT798S/gcc/MIMXRT798Sxxxx_cm33_core0_flash.ld",
]

# A stand-in ExecuTorch: the targets the firmware links, and Codegen.cmake's three functions.
ET_CMAKE = """\
foreach(t executorch executorch_core etdump flatccrt executorch_delegate_neutron portable_kernels quantized_kernels
        cortex_m_kernels)
  add_library(${t} STATIC stub.c)
endforeach()
"""
ET_CODEGEN = """\
set(HIL_TEST_STUB "${CMAKE_CURRENT_LIST_DIR}/../../stub.c")
function(gen_selected_ops)
  cmake_parse_arguments(G "" "LIB_NAME;OPS_FROM_MODEL" "" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY HIL_TEST_SELECTED "${G_LIB_NAME}=${G_OPS_FROM_MODEL}")
  # Like ExecuTorch's own function, a rule whose output is the library's operator list.
  add_custom_command(OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${G_LIB_NAME}/selected_operators.yaml"
                     COMMAND "${CMAKE_COMMAND}" -E true)
endfunction()
function(generate_bindings_for_kernels)
endfunction()
function(gen_operators_lib)
  cmake_parse_arguments(G "" "LIB_NAME" "KERNEL_LIBS;DEPS" ${ARGN})
  add_library(${G_LIB_NAME} STATIC "${HIL_TEST_STUB}")
endfunction()
"""


def _touch(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _workspace(root: Path, et_extra: str = "", drop: str | None = None) -> Path:
    """A stand-in `make rt700-sdk` workspace (mcuxsdk/, executorch/, Neutron libraries) under root."""
    sdk = root / "mcuxsdk"
    for rel in EXPECTED_SOURCES + DECOYS:
        if rel != drop:
            _touch(sdk / rel)
    for rel in EXPECTED_INCLUDES + ["devices/RT/RT700/MIMXRT798S/drivers", "drivers/lpflexcomm/lpi2c",
                                    "components/pmic/pca9422", f"{BOARD}/common/clock/cm33_core0"]:
        (sdk / rel).mkdir(parents=True, exist_ok=True)
    for lib in ("libNeutronDriver.a", "libNeutronFirmware.a"):
        _touch(sdk / "middleware/eiq/neutron/rt700/cm33" / lib)
    et = root / "executorch"
    _touch(et / "stub.c", "int hil_stub;\n")
    _touch(et / "CMakeLists.txt", ET_CMAKE + et_extra)
    _touch(et / "tools/cmake/Codegen.cmake", ET_CODEGEN)
    for rel in ("devtools/etdump/etdump_flatcc.h", "backends/nxp/runtime/NeutronBackend.cpp",
                "third-party/flatcc/CMakeLists.txt", "third-party/flatbuffers/CMakeLists.txt"):
        _touch(et / rel)
    for rel in ("CMakeLists.txt", "Include/arm_nnfunctions.h"):
        _touch(root / "cmsis-nn" / rel)
    (root / "m.pte").write_bytes(b"PTE")
    # as `make rt700-sdk` writes it (shell syntax, paths from firmware/rt700/pins.toml's [env])
    _touch(root / "workspace.env", f"# written by hil.firmware.workspace\nexport MCUX_SDK={sdk}\n"
           f"export EXECUTORCH_ROOT={et}\nexport NEUTRON_LIB_DIR={sdk}/middleware/eiq/neutron/rt700/cm33\n"
           f"export CMSIS_NN={root / 'cmsis-nn'}\n")
    return root


def _cmake(build: Path, *defs: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in INPUT_VARS}
    return subprocess.run(["cmake", "-S", str(RT700), "-B", str(build), *defs], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = _workspace(tmp_path_factory.mktemp("ws"))
    build = root / "build"
    proc = _cmake(build, f"-DRT700_SDK_DIR={root}", f"-DMODEL={root / 'm.pte'}", "-DHIL_MAX_RUNS=7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, build


def test_configure_names_every_missing_input_and_the_workspace_fix(tmp_path: Path) -> None:
    proc = _cmake(tmp_path / "build")
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    for var in ("MCUX_SDK", "EXECUTORCH_ROOT", "NEUTRON_LIB_DIR", "CMSIS_NN", "MODEL"):
        assert f"{var} is not set" in text, text
    # Debian's toolchain on PATH is found without ARMGCC_DIR.
    assert "ARMGCC_DIR is not set" not in text
    assert "make rt700-sdk" in text


def test_configure_names_wrong_paths(tmp_path: Path) -> None:
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    proc = _cmake(tmp_path / "build", f"-DMCUX_SDK={sdk}", f"-DNEUTRON_LIB_DIR={sdk}",
                  f"-DEXECUTORCH_ROOT={tmp_path / 'no-et'}", f"-DARMGCC_DIR={sdk}",
                  f"-DMODEL={tmp_path / 'no.pte'}")
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    assert "MCUX_SDK is not set" not in text
    assert f"EXECUTORCH_ROOT={tmp_path / 'no-et'} is not a directory" in text
    assert f"MODEL={tmp_path / 'no.pte'} is not a file" in text
    assert "holds no libNeutronDriver.a" in text and "holds no bin/arm-none-eabi-gcc" in text


def _compiled_sources(build: Path) -> set[str]:
    """Every source the image target compiles, from CMake's generated object rules."""
    text = (build / "CMakeFiles/hil_rt700.dir/build.make").read_text()
    return set(re.findall(r"^\S+\.obj: (\S+\.(?:c|cpp|S))$", text, flags=re.M))


def test_configure_compiles_the_example_files_and_no_decoy(configured) -> None:
    root, build = configured
    compiled = _compiled_sources(build)
    sdk = root / "mcuxsdk"
    for rel in EXPECTED_SOURCES:
        assert str(sdk / rel) in compiled, rel
    for rel in DECOYS:
        assert str(sdk / rel) not in compiled, rel
    flags = (build / "CMakeFiles/hil_rt700.dir/flags.make").read_text()
    for rel in EXPECTED_INCLUDES:
        assert f"-I{sdk / rel}" in flags, rel


def test_configure_defines_and_flags(configured) -> None:
    _, build = configured
    flags = (build / "CMakeFiles/hil_rt700.dir/flags.make").read_text()
    for flag in ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", " -g",
                 "-DCPU_MIMXRT798SGFOB_cm33_core0", "-DMIMXRT798S_cm33_core0_SERIES", "-DBOOT_HEADER_ENABLE=1",
                 "-DPRINTF_ADVANCED_ENABLE=1", "-DET_EVENT_TRACER_ENABLED", "-DHIL_MAX_RUNS=7u"):
        assert flag in flags, flag
    neutron = (build / "executorch/CMakeFiles/executorch_delegate_neutron.dir/flags.make").read_text()
    assert "-DNO_HEAP_USAGE=1" in neutron


def test_configure_forces_bare_metal_executorch_options(configured) -> None:
    _, build = configured
    cache = (build / "CMakeCache.txt").read_text()
    for opt in ("EXECUTORCH_BUILD_DEVTOOLS", "EXECUTORCH_ENABLE_EVENT_TRACER", "EXECUTORCH_BUILD_NXP_NEUTRON",
                "EXECUTORCH_BUILD_KERNELS_QUANTIZED", "EXECUTORCH_BUILD_CORTEX_M"):
        assert f"{opt}:BOOL=ON" in cache, opt
    # The workspace's CMSIS-NN, never FetchContent (backends/cortex_m/CMakeLists.txt fetches when this is empty).
    root, _ = configured
    assert f"CMSIS_NN_LOCAL_PATH:PATH={root / 'cmsis-nn'}" in cache
    for opt in ("EXECUTORCH_BUILD_CPUINFO", "EXECUTORCH_BUILD_PTHREADPOOL"):
        assert f"{opt}:BOOL=OFF" in cache, opt


def test_link_wholes_only_the_neutron_delegate_and_uses_our_link_script(configured) -> None:
    root, build = configured
    link = (build / "CMakeFiles/hil_rt700.dir/link.txt").read_text()
    # The operator registration libraries come from gen_operators_lib, which whole-archives them
    # itself upstream; wrapping them again would register every kernel twice.
    assert link.count("--whole-archive") == 1
    assert "-Wl,--whole-archive executorch/libexecutorch_delegate_neutron.a -Wl,--no-whole-archive" in link
    assert "libhil_portable_ops_lib.a" in link and "libhil_quantized_ops_lib.a" in link
    assert "libhil_cortex_m_ops_lib.a" in link
    assert f"-T{RT700 / 'link' / 'hil_rt700_flash.ld'}" in link
    assert "nosys.specs" in link and "--gc-sections" in link
    assert str(root / "mcuxsdk/middleware/eiq/neutron/rt700/cm33/libNeutronFirmware.a") in link


def test_a_missing_sdk_file_is_named(tmp_path: Path) -> None:
    missing = "drivers/glikey/fsl_glikey.c"
    root = _workspace(tmp_path, drop=missing)
    proc = _cmake(tmp_path / "build", f"-DRT700_SDK_DIR={root}", f"-DMODEL={root / 'm.pte'}")
    assert proc.returncode != 0
    assert missing in proc.stderr and "make rt700-sdk" in " ".join(proc.stderr.split())


def test_a_folder_that_is_no_workspace_is_named(tmp_path: Path) -> None:
    (tmp_path / "m.pte").write_bytes(b"PTE")
    proc = _cmake(tmp_path / "build", f"-DRT700_SDK_DIR={tmp_path}", f"-DMODEL={tmp_path / 'm.pte'}")
    assert proc.returncode != 0
    assert f"RT700_SDK_DIR={tmp_path} holds no workspace.env" in " ".join(proc.stderr.split())


def test_configure_refuses_an_executorch_that_disables_devtools(tmp_path: Path) -> None:
    root = _workspace(tmp_path, et_extra="set(EXECUTORCH_BUILD_DEVTOOLS OFF)\n")
    proc = _cmake(tmp_path / "build", f"-DRT700_SDK_DIR={root}", f"-DMODEL={root / 'm.pte'}")
    assert proc.returncode != 0
    assert "EXECUTORCH_BUILD_DEVTOOLS=OFF" in " ".join(proc.stderr.split())


def test_configure_refuses_an_executorch_that_turns_cpuinfo_back_on(tmp_path: Path) -> None:
    root = _workspace(tmp_path, et_extra="set(EXECUTORCH_BUILD_CPUINFO ON)\n")
    proc = _cmake(tmp_path / "build", f"-DRT700_SDK_DIR={root}", f"-DMODEL={root / 'm.pte'}")
    assert proc.returncode != 0
    assert "EXECUTORCH_BUILD_CPUINFO=ON" in " ".join(proc.stderr.split())


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs Debian's gcc-arm-none-eabi")
def test_explicit_paths_win_over_the_workspace(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "a")
    other = _workspace(tmp_path / "b")
    proc = _cmake(tmp_path / "build", f"-DRT700_SDK_DIR={root}", f"-DMCUX_SDK={other / 'mcuxsdk'}",
                  f"-DMODEL={root / 'm.pte'}")
    assert proc.returncode == 0, proc.stderr
    compiled = _compiled_sources(tmp_path / "build")
    assert str(other / "mcuxsdk" / EXPECTED_SOURCES[0]) in compiled
