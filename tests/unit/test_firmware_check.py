"""The RT700 firmware's build glue, exercised for real without the bench PC's SDKs.

- `make firmware-check`: the firmware sources compile for the Cortex-M33 against the headers of
  the installed executorch wheel (stand-ins only for the MCUXpresso board headers), and the
  objects define/need the symbols the harness and the runtime rely on.
(The CMake configure step has its own tests: test_rt700_configure.py.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hil.base.paths import REPO_ROOT

MK = "firmware/rt700/rt700.mk"
RT700 = REPO_ROOT / "firmware" / "rt700"
APP = REPO_ROOT / "firmware" / "app"


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
    sources = sorted(p.stem for p in [*RT700.glob("src/*.c*"), *APP.glob("*.c*"), *RT700.parent.glob("common/*.c")])
    assert sorted(p.stem for p in check_objects.glob("*.o")) == sources


def test_result_handshake_symbols(check_objects: Path) -> None:
    syms = _symbols(check_objects / "hil_result.o")["defined"]
    assert {"hil_etdump_ready", "hil_etdump_result", "hil_publish_etdump"} <= syms


def test_pal_overrides_timestamps(check_objects: Path) -> None:
    syms = _symbols(check_objects / "pal.o")
    assert {"et_pal_current_ticks", "et_pal_ticks_to_ns_multiplier", "et_pal_init", "et_pal_abort"} <= syms["defined"]
    assert {"hil_cycle_counter_read", "hil_core_clock_hz"} <= syms["undefined"]


def test_main_uses_the_runtime_with_a_static_etdump(check_objects: Path) -> None:
    needed = _symbols(check_objects / "main.o")["undefined"]
    assert "executorch::etdump::ETDumpGen::ETDumpGen(executorch::runtime::Span<unsigned char>)" in needed
    assert "executorch::etdump::ETDumpGen::get_etdump_data()" in needed
    assert "executorch::runtime::runtime_init()" in needed
    assert {"model_pte", "model_pte_len", "hil_publish_etdump", "hil_board_init"} <= needed
    assert not any(name.startswith("malloc") for name in needed)


def test_log_lines_print_sizes_through_the_vsnprintf_wrapper(check_objects: Path) -> None:
    syms = _symbols(check_objects / "hil_console.o")
    assert "__wrap_vsnprintf" in syms["defined"] and "__real_vsnprintf" in syms["undefined"]


def test_check_fails_on_a_bad_configuration(tmp_path: Path) -> None:
    proc = _make(f"{tmp_path}/main.o", f"RT700_CHECK_DIR={tmp_path}", f"PYTHON={sys.executable}",
                 "RT700_CHECK_EXTRA_FLAGS=-DHIL_MAX_RUNS=0u")
    assert proc.returncode != 0
    assert "HIL_MAX_RUNS must be at least 1" in proc.stderr


def test_check_names_a_python_without_executorch(tmp_path: Path) -> None:
    proc = _make("firmware-check", f"RT700_CHECK_DIR={tmp_path}", "PYTHON=/bin/false")
    assert proc.returncode != 0
    assert "no ExecuTorch headers" in proc.stderr and "PYTHON=/bin/false" in proc.stderr


def test_firmware_target_refuses_other_boards_and_missing_model() -> None:
    proc = _make("firmware", "BOARD=qemu", "MODEL=x.pte")
    assert proc.returncode != 0 and "only BOARD=rt700" in proc.stderr
    proc = _make("firmware", "BOARD=rt700", "MODEL=does/not/exist.pte")
    assert proc.returncode != 0 and "does/not/exist.pte" in proc.stderr
