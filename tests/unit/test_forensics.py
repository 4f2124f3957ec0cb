"""Crash forensics on a real target: QEMU's mps2-an505 running replay images that fault or hang.

Each report is checked against what the harness did not compute: the fault registers against values
worked out by hand from the Armv8-M manual, the function and line against binutils' addr2line on the
same ELF, the faulting instruction against objdump's disassembly.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from hil.boards.base import RunPlan
from hil.boards.qemu import QemuBoard
from hil.config.board_config import BoardConfig, load_board_config
from hil.base.errors import TargetFault, TargetHang
from hil.firmware.qemu_image import build_qemu_image

from test_gdbmi import SPIN_LD, no_orphans  # noqa: F401  (shared fixture: no QEMU or gdb left behind)

CONSOLE = ["Model buffer loaded, has 1 methods", "Starting the model execution..."]
UNMAPPED = 0x58000000  # an address nothing decodes on mps2-an505 (firmware/qemu/main.c)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def cfg() -> BoardConfig:
    return load_board_config("qemu")


def addr2line(elf: Path, address: int) -> tuple[str, str]:
    """binutils' function and `file:line` for `address`."""
    out = subprocess.run(["arm-none-eabi-addr2line", "-f", "-e", str(elf), f"0x{address:x}"],
                         capture_output=True, text=True, check=True, timeout=30).stdout.splitlines()
    function, where = out[0], out[1].split(" (discriminator")[0]
    return function, f"{Path(where.split(':')[0]).name}:{where.split(':')[1]}"


def run_variant(cfg: BoardConfig, cache: Path, tmp_path: Path, fault: str, timeout: float = 30) -> tuple[Exception, dict, Path, float]:
    elf = build_qemu_image(bytes(range(256)) * 16, CONSOLE, runs=1, fault=fault, cache=cache)
    start = time.monotonic()
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(elf)
        with pytest.raises((TargetFault, TargetHang)) as info:
            board.run(timeout=timeout, plan=RunPlan(1))
    elapsed = time.monotonic() - start
    return info.value, json.loads((tmp_path / "fault.json").read_text()), elf, elapsed


def test_a_bus_fault_is_caught_in_its_handler_and_reported_in_words(cfg, cache, tmp_path) -> None:
    error, report, elf, elapsed = run_variant(cfg, cache, tmp_path, "bus")
    assert elapsed < 30
    pc = int(report["stacked_frame"]["PC"], 16)
    function, where = addr2line(elf, pc)
    assert function == "replay_bus_fault"
    first = str(error).splitlines()[0]
    assert first.startswith(f"BusFault: precise data bus error at 0x{UNMAPPED:08x}, in replay_bus_fault ({where})")
    # CFSR = PRECISERR (bit 9) | BFARVALID (bit 15); BFAR = the address read
    assert report["fault_registers"]["CFSR"] == "0x00008200" and report["fault_registers"]["BFAR"] == f"0x{UNMAPPED:08x}"
    assert report["exception"] == "BusFault" and report["handler"] == ["BusFault_Handler"]
    assert int(report["core"]["xpsr"], 16) & 0x1FF == 5  # IPSR: exception 5, BusFault
    assert report["location"]["function"] == "replay_bus_fault" and report["location"]["address"] == f"0x{pc:08x}"
    # the stacked LR returns into the function that called the faulting one
    assert addr2line(elf, int(report["stacked_frame"]["LR"], 16) & ~1)[0] in ("main", "replay_fault")
    assert [frame["function"] for frame in report["backtrace"]][-1] == "main"
    assert "CFSR 0x00008200" in str(error) and "last console lines" in str(error)


def test_an_undefined_instruction_is_a_usage_fault_at_the_udf(cfg, cache, tmp_path) -> None:
    error, report, elf, _ = run_variant(cfg, cache, tmp_path, "undef")
    pc = int(report["stacked_frame"]["PC"], 16)
    disassembly = subprocess.run(
        ["arm-none-eabi-objdump", "-d", f"--start-address=0x{pc:x}", f"--stop-address=0x{pc + 2:x}", str(elf)],
        capture_output=True, text=True, check=True, timeout=30).stdout
    assert re.search(rf"^\s*{pc:x}:.*\budf\b", disassembly, re.M), disassembly
    function, where = addr2line(elf, pc)
    assert function == "replay_undefined_instruction"
    assert str(error).splitlines()[0].startswith(f"UsageFault: undefined instruction, in {function} ({where})")
    assert report["fault_registers"]["CFSR"] == "0x00010000"  # UNDEFINSTR, bit 16
    assert report["cause"] == "UsageFault" and report["handler"] == ["UsageFault_Handler"]


def test_a_hang_is_interrupted_and_says_where_the_core_is(cfg, cache, tmp_path) -> None:
    error, report, elf, elapsed = run_variant(cfg, cache, tmp_path, "hang", timeout=3)
    assert isinstance(error, TargetHang) and elapsed < 30
    pc = int(report["core"]["pc"], 16)
    function, where = addr2line(elf, pc)
    assert function == "replay_hang"
    first = str(error).splitlines()[0]
    assert first.startswith("Hang: breakpoint 'hil_etdump_ready' not reached within")
    assert f"the core is in replay_hang ({where})" in first
    assert report["kind"] == "hang" and report["exception"] is None  # thread mode
    assert [frame["function"] for frame in report["backtrace"]][0] == "replay_hang"


# An image whose fault handler has a name the watch does not know: the fault escalates to HardFault
# (no configurable fault enabled) and the handler spins, so the harness only finds it at the deadline.
SPINNING_HANDLER_C = """
volatile struct { unsigned int magic, iterations, warmup, max_runs; } hil_run_config = {0, 0, 0, 1000};
__attribute__((noinline, used)) void hil_config_ready(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline, used)) void hil_etdump_ready(void) { __asm__ volatile("" ::: "memory"); }
void quiet_fault_handler(void) { for (;;) { } }
__attribute__((noinline)) void run_model(void) { __asm__ volatile("udf #1"); }
void spin_reset(void) { run_model(); for (;;) { } }
__attribute__((section(".vectors"), used)) void (*const spin_vectors[8])(void) = {
    (void (*)(void))0x38010000, spin_reset, quiet_fault_handler, quiet_fault_handler, quiet_fault_handler,
    quiet_fault_handler, quiet_fault_handler, quiet_fault_handler };
"""


def test_a_fault_found_at_the_deadline_is_still_reported_as_the_fault(cfg, tmp_path) -> None:
    (tmp_path / "spin.c").write_text(SPINNING_HANDLER_C)
    (tmp_path / "spin.ld").write_text(SPIN_LD)
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-g", "-O1", "-nostdlib", "-nostartfiles",
                    "-Tspin.ld", "spin.c", "-o", "spin.elf", "-Wl,--no-warn-rwx-segments"],
                   cwd=tmp_path, check=True, timeout=60)
    with QemuBoard(cfg, tmp_path / "run") as board:
        board.flash(tmp_path / "spin.elf")
        with pytest.raises(TargetFault) as info:
            board.run(timeout=2, plan=RunPlan(1))
    first = str(info.value).splitlines()[0]
    # HFSR.FORCED (bit 30) with UFSR.UNDEFINSTR: a usage fault that had to take the HardFault handler
    assert first.startswith("UsageFault (escalated to HardFault): undefined instruction, in run_model (spin.c:")
    assert "breakpoint 'hil_config_ready' not reached" in first
    report = json.loads((tmp_path / "run" / "fault.json").read_text())
    assert report["exception"] == "HardFault" and report["fault_registers"]["HFSR"] == "0x40000000"
    assert report["fault_registers"]["CFSR"] == "0x00010000"
