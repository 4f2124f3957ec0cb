"""The RT700 firmware's build glue, exercised for real without the bench PC's SDKs.

- `make firmware-check`: the firmware sources compile for the Cortex-M33 against the headers of
  the installed executorch wheel (stand-ins only for the MCUXpresso board headers), and the
  objects define/need the symbols the harness and the runtime rely on.
- `cmake -S firmware/rt700`: configure fails naming every missing input; against a stand-in SDK
  tree and a stand-in ExecuTorch root it picks this board's files, links the registration
  libraries whole, and refuses an ExecuTorch that turns the event tracer off with a plain set().
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hil.paths import REPO_ROOT

MK = "firmware/rt700/rt700.mk"
RT700 = REPO_ROOT / "firmware" / "rt700"
INPUT_VARS = ("MCUX_SDK", "EXECUTORCH_ROOT", "NEUTRON_LIB_DIR", "ARMGCC_DIR", "MODEL")


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-f", MK, *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)


def _symbols(obj: Path) -> dict[str, set[str]]:
    """{'defined': {...}, 'undefined': {...}} demangled, from arm-none-eabi-nm."""
    out = subprocess.run(["arm-none-eabi-nm", "-C", str(obj)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    found: dict[str, set[str]] = {"defined": set(), "undefined": set()}
    for line in out.splitlines():
        kind, name = line[9:10], line[11:]
        found["undefined" if kind == "U" else "defined"].add(name)
    return found


@pytest.fixture(scope="module")
def check_objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fwcheck")
    proc = _make("firmware-check", "-j2", f"RT700_CHECK_DIR={out}", f"PYTHON={sys.executable}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "RT700 sources compile against" in proc.stdout
    return out


def test_every_source_compiles(check_objects: Path) -> None:
    sources = sorted(p.stem for p in [*RT700.glob("src/*.c*"), *RT700.parent.glob("common/*.c")])
    assert sorted(p.stem for p in check_objects.glob("*.o")) == sources


def test_result_handshake_symbols(check_objects: Path) -> None:
    syms = _symbols(check_objects / "hil_result.o")["defined"]
    assert {"hil_etdump_ready", "hil_etdump_result", "hil_publish_etdump"} <= syms


def test_pal_overrides_timestamps(check_objects: Path) -> None:
    syms = _symbols(check_objects / "pal_rt700.o")
    assert {"et_pal_current_ticks", "et_pal_ticks_to_ns_multiplier", "et_pal_init"} <= syms["defined"]
    assert {"hil_cycle_counter_read", "hil_core_clock_hz"} <= syms["undefined"]


def test_main_uses_the_runtime_with_a_static_etdump(check_objects: Path) -> None:
    needed = _symbols(check_objects / "main.o")["undefined"]
    assert "executorch::etdump::ETDumpGen::ETDumpGen(executorch::runtime::Span<unsigned char>)" in needed
    assert "executorch::etdump::ETDumpGen::get_etdump_data()" in needed
    assert "executorch::runtime::runtime_init()" in needed
    assert {"model_pte", "model_pte_len", "hil_publish_etdump", "hil_board_init"} <= needed
    assert not any(name.startswith("malloc") for name in needed)


def test_check_fails_on_a_bad_configuration(tmp_path: Path) -> None:
    proc = _make(f"{tmp_path}/main.o", f"RT700_CHECK_DIR={tmp_path}", f"PYTHON={sys.executable}",
                 "RT700_CHECK_EXTRA_FLAGS=-DHIL_ITERATIONS=0")
    assert proc.returncode != 0
    assert "HIL_ITERATIONS must be at least 1" in proc.stderr


def test_check_names_a_python_without_executorch(tmp_path: Path) -> None:
    proc = _make("firmware-check", f"RT700_CHECK_DIR={tmp_path}", "PYTHON=/bin/false")
    assert proc.returncode != 0
    assert "no ExecuTorch headers" in proc.stderr and "PYTHON=/bin/false" in proc.stderr


def test_firmware_target_refuses_other_boards_and_missing_model() -> None:
    proc = _make("firmware", "BOARD=qemu", "MODEL=x.pte")
    assert proc.returncode != 0 and "only BOARD=rt700" in proc.stderr
    proc = _make("firmware", "BOARD=rt700", "MODEL=does/not/exist.pte")
    assert proc.returncode != 0 and "does/not/exist.pte" in proc.stderr


# ---- cmake configure ---------------------------------------------------------------------------

def _cmake(build: Path, *defs: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in INPUT_VARS}
    return subprocess.run(["cmake", "-S", str(RT700), "-B", str(build), *defs], env=env,
                          capture_output=True, text=True, timeout=120)


def test_configure_names_every_missing_variable(tmp_path: Path) -> None:
    proc = _cmake(tmp_path / "build")
    assert proc.returncode != 0
    for var in INPUT_VARS:
        assert f"{var} is not set" in proc.stderr, proc.stderr


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


SDK_FILES = {
    "devices/RT/RT700/MIMXRT798S": ["startup_MIMXRT798S_cm33_core0.S", "system_MIMXRT798S_cm33_core0.c",
                                    "MIMXRT798S_cm33_core0.h", "fsl_device_registers.h",
                                    "MIMXRT798Sxxxx_cm33_core0_flash.ld"],
    "devices/RT/RT700/MIMXRT798S/drivers": [f"fsl_{n}.{e}" for n in ("clock", "power", "reset", "common",
                                            "lpflexcomm", "gpio", "cache") for e in "ch"]
    + ["fsl_common_arm.c", "fsl_iopctl.h"],
    "drivers/lpuart": ["fsl_lpuart.c", "fsl_lpuart.h", "fsl_debug_console.c", "fsl_debug_console.h",
                       "fsl_str.c", "fsl_str.h", "fsl_assert.c", "fsl_adapter_lpuart.c", "fsl_adapter_uart.h"],
    "CMSIS/Core/Include": ["core_cm33.h"],
}
BOARD_FILES = ["board.c", "clock_config.c", "pin_mux.c", "hardware_init.c",
               "board.h", "clock_config.h", "pin_mux.h", "app.h"]


def _fake_inputs(root: Path, et_extra: str = "") -> list[str]:
    """A stand-in SDK tree (two boards), ExecuTorch root and Neutron dir: empty files, right names."""
    for folder, names in SDK_FILES.items():
        for name in names:
            (root / "sdk" / folder).mkdir(parents=True, exist_ok=True)
            (root / "sdk" / folder / name).touch()
    for board in ("mimxrt700evk", "mimxrt999evk"):
        folder = root / "sdk/examples/_boards" / board / "demo_apps/hello_world/cm33_core0"
        folder.mkdir(parents=True)
        for name in BOARD_FILES:
            (folder / name).touch()
    et = root / "et"
    (et / "devtools/etdump").mkdir(parents=True)
    (et / "devtools/etdump/etdump_flatcc.h").touch()
    (et / "stub.c").write_text("int hil_stub;\n")
    (et / "CMakeLists.txt").write_text(
        "foreach(t executorch etdump flatccrt portable_ops_lib quantized_ops_lib "
        "executorch_delegate_neutron)\n  add_library(${t} STATIC stub.c)\nendforeach()\n" + et_extra)
    (root / "neutron").mkdir()
    for lib in ("libNeutronDriver.a", "libNeutronFirmware.a"):
        (root / "neutron" / lib).touch()
    (root / "m.pte").write_bytes(b"PTE")
    gcc = shutil.which("arm-none-eabi-gcc")
    assert gcc is not None
    return [f"-DMCUX_SDK={root / 'sdk'}", f"-DEXECUTORCH_ROOT={et}", f"-DNEUTRON_LIB_DIR={root / 'neutron'}",
            f"-DARMGCC_DIR={Path(gcc).resolve().parent.parent}", f"-DMODEL={root / 'm.pte'}"]


def test_configure_against_standin_sdk(tmp_path: Path) -> None:
    build = tmp_path / "build"
    proc = _cmake(build, *_fake_inputs(tmp_path), "-DHIL_ITERATIONS=7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mimxrt999evk" not in proc.stdout
    assert "mimxrt700evk/demo_apps/hello_world/cm33_core0/pin_mux.c" in proc.stdout
    cache = (build / "CMakeCache.txt").read_text()
    for opt in ("EXECUTORCH_BUILD_DEVTOOLS", "EXECUTORCH_ENABLE_EVENT_TRACER"):
        assert f"{opt}:BOOL=ON" in cache
    flags = (build / "CMakeFiles/hil_rt700.dir/flags.make").read_text()
    for flag in ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", "-DET_EVENT_TRACER_ENABLED",
                 "-DCPU_MIMXRT798SGFOA_cm33_core0", "-DHIL_ITERATIONS=7", " -g"):
        assert flag in flags
    link = (build / "CMakeFiles/hil_rt700.dir/link.txt").read_text()
    assert "-Wl,--whole-archive executorch/libportable_ops_lib.a" in link
    assert "libexecutorch_delegate_neutron.a -Wl,--no-whole-archive" in link
    assert "MIMXRT798Sxxxx_cm33_core0_flash.ld" in link and "nosys.specs" in link
    assert "--gc-sections" in link and "libNeutronFirmware.a" in link
    assert "-Wl,--section-start=.modeldata=0x20430000" in link


def test_configure_refuses_an_executorch_that_disables_devtools(tmp_path: Path) -> None:
    proc = _cmake(tmp_path / "build", *_fake_inputs(tmp_path, "set(EXECUTORCH_BUILD_DEVTOOLS OFF)\n"))
    assert proc.returncode != 0
    assert "EXECUTORCH_BUILD_DEVTOOLS=OFF" in " ".join(proc.stderr.split())
