"""The emulated target cannot reach the host: an image that makes each semihosting call which touches the
host (a shell command, a file opened for writing or reading, removed, renamed, a temporary name) changes
nothing the test planted, and the run fails with one line naming the call.

Each image is a few lines of C linked with the product's QEMU start-up, console, exit and link script; the
operation is chosen at compile time. The same image run by a plain QEMU with semihosting on (the control)
does change the planted files: so the image really makes the call, and it is the harness that stops it.
Planted files are checked with hashlib before and after.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.base.errors import TargetFault
from hil.base.paths import FIRMWARE_DIR
from hil.boards.qemu import QemuBoard
from hil.boards.qemu_keep import unkept_children
from hil.config.board_config import load_board_config
from hil.target.qemu import SANDBOX
from hil.target.run_config import RunPlan

QEMU_DIR = FIRMWARE_DIR / "qemu"
SECRET = b"the host's secret, never to reach the guest\n"
ORIGINAL = b"planted by the test\n" * 8

# Each call as the image makes it: r0 the operation, r1 its parameter block (Arm semihosting 2.0).
CALLS = {
    "SYS_SYSTEM": (0x12, "const char c[] = \"echo pwned > \" VICTIM; uint32_t b[] = {(uint32_t)c, sizeof c - 1};"),
    "SYS_OPEN": (0x01, "uint32_t b[] = {(uint32_t)VICTIM, 4 /* \"w\" */, sizeof VICTIM - 1};"),
    "SYS_OPEN_READ": (0x01, "uint32_t b[] = {(uint32_t)SECRET, 0 /* \"r\" */, sizeof SECRET - 1};"),
    "SYS_REMOVE": (0x0E, "uint32_t b[] = {(uint32_t)VICTIM, sizeof VICTIM - 1};"),
    "SYS_RENAME": (0x0F, "uint32_t b[] = {(uint32_t)VICTIM, sizeof VICTIM - 1, (uint32_t)MOVED, sizeof MOVED - 1};"),
    "SYS_TMPNAM": (0x0D, "static char n[64]; uint32_t b[] = {(uint32_t)n, 7, sizeof n};"),
}

PROBE_C = """
#include <stdint.h>
#include "hw.h"
#include "hil_result.h"
volatile struct hil_run_config_t hil_run_config;
__attribute__((noinline, used)) void hil_config_ready(void) { __asm__ volatile("" ::: "memory"); }
static uint32_t semihost(uint32_t op, void *block)
{
    register uint32_t r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
int main(void)
{
    uart_init();
    BLOCK
    uint32_t handle = semihost(OP, b);
    if (OP == 0x01 && ((uint32_t *)b)[1] == 0) { /* opened for reading: read it and print it */
        static char text[128];
        uint32_t rd[] = {handle, (uint32_t)text, sizeof text - 1};
        uint32_t left = semihost(0x06, rd);
        uart_write(text, sizeof text - 1 - left);
    } else if (OP == 0x01) { /* opened for writing: write over it */
        static const char over[] = "written by the guest";
        uint32_t wr[] = {handle, (uint32_t)over, sizeof over - 1};
        semihost(0x05, wr);
    }
    uart_puts("probe done\\r\\n");
    hil_config_ready();
    return 0;
}
"""


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    yield
    leaked = unkept_children()
    for child in leaked:
        child.close(grace=0.5)
    assert leaked == []


def _plant(folder: Path) -> dict[str, str]:
    """The files the guest goes for, fresh; their sha256 by name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "moved").unlink(missing_ok=True)
    (folder / "victim").write_bytes(ORIGINAL)
    (folder / "secret").write_bytes(SECRET)
    return _sums(folder)


def _sums(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _probe(work: Path, call: str, planted: Path) -> Path:
    op, block = CALLS[call]
    source = work / f"{call}.c"
    source.write_text(PROBE_C.replace("BLOCK", block).replace("OP", str(op)))
    sources = [QEMU_DIR / name for name in ("startup.c", "uart.c", "semihost.c", "freestanding.c")]
    elf = work / f"{call}.elf"
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-g", "-O1", "-std=c11", "-ffreestanding",
         f"-DVICTIM=\"{planted / 'victim'}\"", f"-DSECRET=\"{planted / 'secret'}\"",
         f"-DMOVED=\"{planted / 'moved'}\"", f"-I{QEMU_DIR}", f"-I{FIRMWARE_DIR / 'common'}", str(source),
         *map(str, sources), f"-T{QEMU_DIR / 'link.ld'}", "-nostartfiles", "-nostdlib",
         "-Wl,--no-warn-rwx-segments", "-lgcc", "-o", str(elf)],
        check=True, timeout=60, capture_output=True,
    )
    return elf


def _plain_qemu(elf: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    """The image alone in QEMU with semihosting served (no harness), its console on stdout."""
    return subprocess.run(["qemu-system-arm", "-machine", "mps2-an505", "-nographic", "-monitor", "none",
                           "-semihosting-config", "enable=on,target=native", *extra, "-kernel", str(elf)],
                          capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_semihosting_call_reaches_the_host_and_the_run_names_it(call: str, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    elf = _probe(tmp_path, call, planted)

    before = _plant(planted)  # the control: served, the call does reach the host
    control = _plain_qemu(elf)
    assert control.returncode == 0, control
    if call == "SYS_OPEN_READ":
        assert SECRET in control.stdout
    elif call != "SYS_TMPNAM":
        assert _sums(planted) != before, call

    before = _plant(planted)
    board = QemuBoard(load_board_config("qemu"), tmp_path / "run")
    try:
        board.flash(elf)
        with pytest.raises(TargetFault) as info:
            board.run(timeout=30, plan=RunPlan(1))
    finally:
        board.close()
    name = "SYS_OPEN" if call == "SYS_OPEN_READ" else call
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"the image made semihosting call {name} (0x{CALLS[call][0]:02x}), refused: QEMU runs"
                            " with semihosting off"), first
    assert _sums(planted) == before
    assert SECRET not in (tmp_path / "run" / "serial.log").read_bytes()


def test_the_sandbox_alone_stops_a_host_command(tmp_path: Path) -> None:
    """Belt and braces: even with semihosting served, QEMU's seccomp filter as the harness sets it kills QEMU
    (SIGSYS) before the shell command runs."""
    planted = tmp_path / "planted"
    elf = _probe(tmp_path, "SYS_SYSTEM", planted)
    before = _plant(planted)
    done = _plain_qemu(elf, "-sandbox", SANDBOX)
    assert done.returncode == -signal.SIGSYS, done
    assert _sums(planted) == before
