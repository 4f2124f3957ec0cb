"""The stack's high-water mark: the scan on hand-made stacks, then the firmware's own paint read back
through GDB from an image whose stack use is known by construction.

The image is a few lines of C (main calls a function with a volatile local array of N bytes, written
whole, then stops at `hil_etdump_ready`) linked with the product's QEMU start-up (firmware/qemu/startup.c,
which paints the stack) and link script: the mark must lie between N and N plus the frames around it.
"""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.base.paths import FIRMWARE_DIR
from hil.config.board_config import MemoryRegion
from hil.target.gdbmi import GdbMiSession
from hil.target.ports import LOOPBACK
from hil.boards.qemu_keep import unkept_children
from hil.target.qemu import QemuProcess
from hil.target.stack_mark import PAINT_WORD, high_water, read_stack_mark

LIMIT, TOP = 0x38000000, 0x38000100  # a hand-made 256-byte stack
PAINT = struct.pack("<I", PAINT_WORD)
QEMU_DIR = FIRMWARE_DIR / "qemu"
RAM = [MemoryRegion(0x38000000, 4 << 20)]
# Bytes a frame around the array may add: the reset handler's, main's and the function's own saved
# registers and padding, and the paint's unpainted margin (HIL_STACK_PAINT_MARGIN, 64).
FRAMES_BOUND = 256

DEEP_C = """
#include <stdint.h>
__attribute__((noinline, used)) void hil_etdump_ready(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void deep(void)
{
    volatile uint8_t buffer[ARRAY_BYTES];
    for (uint32_t i = 0; i < ARRAY_BYTES; ++i) {
        buffer[i] = (uint8_t)(i | 1u);
    }
    hil_etdump_ready();
}
int main(void) { deep(); return 0; }
"""


def _stack(used_words: int, total_words: int = 64) -> bytes:
    """A stack whose top `used_words` words were written (never with the paint), the rest still painted."""
    return PAINT * (total_words - used_words) + struct.pack("<I", 0x12345678) * used_words


@pytest.mark.parametrize("used_words", [1, 7, 63])
def test_the_mark_is_the_lowest_word_that_lost_its_paint(used_words: int) -> None:
    mark = high_water(_stack(used_words), LIMIT, TOP)
    assert (mark.used_bytes, mark.overflowed, mark.note) == (4 * used_words, False, None)
    assert mark.to_dict()["free_bytes"] == 256 - 4 * used_words


def test_a_painted_word_inside_the_used_part_does_not_lower_the_mark() -> None:
    region = bytearray(_stack(10))
    region[-8:-4] = PAINT  # the program wrote the paint's value once, high in the used part
    assert high_water(bytes(region), LIMIT, TOP).used_bytes == 40


def test_an_untouched_stack_used_nothing() -> None:
    assert high_water(PAINT * 64, LIMIT, TOP).used_bytes == 0


def test_a_stack_written_down_to_its_limit_overflowed() -> None:
    region = bytearray(_stack(10))
    region[0:4] = b"\0\0\0\0"  # the lowest word: the stack reached __StackLimit
    mark = high_water(bytes(region), LIMIT, TOP)
    assert (mark.used_bytes, mark.overflowed) == (256, True)


def test_an_image_that_does_not_paint_is_not_measured() -> None:
    mark = high_water(b"\0" * 256, LIMIT, TOP)
    assert mark.used_bytes is None and "does not paint" in (mark.note or "")


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    yield
    leaked = unkept_children()  # a QEMU the pytest session keeps is not this test's (hil.boards.qemu_keep)
    for child in leaked:
        child.close(grace=0.5)
    assert leaked == []


def _deep_image(work: Path, array_bytes: int, optimize: str) -> Path:
    """The known-stack image, with the product's start-up, console, semihosting and link script."""
    (work / "deep.c").write_text(DEEP_C)
    sources = [QEMU_DIR / name for name in ("startup.c", "uart.c", "semihost.c", "freestanding.c")]
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-g", optimize, "-std=c11", "-ffreestanding",
         "-fno-tree-loop-distribute-patterns", f"-DARRAY_BYTES={array_bytes}u", f"-I{QEMU_DIR}",
         f"-I{FIRMWARE_DIR / 'common'}", "deep.c", *map(str, sources), f"-T{QEMU_DIR / 'link.ld'}",
         "-nostartfiles", "-nostdlib", "-Wl,--no-warn-rwx-segments", "-lgcc", "-o", "deep.elf"],
        cwd=work, check=True, timeout=60, capture_output=True,
    )
    return work / "deep.elf"


@pytest.mark.parametrize("optimize", ["-O0", "-O2"])
def test_the_mark_read_through_gdb_covers_a_known_array(tmp_path: Path, optimize: str) -> None:
    array_bytes = 4096
    elf = _deep_image(tmp_path, array_bytes, optimize)
    qemu = QemuProcess("qemu-system-arm", "mps2-an505", "cortex-m33", tmp_path / "qemu.log").start()
    gdb = GdbMiSession("gdb-multiarch", elf, tmp_path / "mi.log")
    try:
        gdb.connect(LOOPBACK, qemu.gdb_port)
        gdb.download()
        gdb.reset()
        number = gdb.break_insert("hil_etdump_ready")
        stop = gdb.continue_until_stop(10)
        assert (stop.reason, stop.breakpoint) == ("breakpoint-hit", number)
        mark = read_stack_mark(gdb, RAM)
        sp = gdb.evaluate_int("$sp")
    finally:
        gdb.close()
        qemu.close()
    assert mark.note is None and not mark.overflowed
    assert mark.size_bytes == 0x4000  # firmware/qemu/link.ld's __stack_size
    assert array_bytes <= mark.used_bytes <= array_bytes + FRAMES_BOUND, mark
    assert mark.used_bytes >= mark.top - sp  # at least what is live at the breakpoint
