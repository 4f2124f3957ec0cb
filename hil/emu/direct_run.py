"""An image run on the bare emulated core, without pyOCD or gdb: from reset to one symbol (hil_etdump_ready).

Why: the instruction counters (native, Python, none) are compared on the same run by the counting oracle test
and timed by bench/rt700_emu_cost.py; both need the emulator alone, so that the figure is the core's, not the
debug road's. The firmware's handshakes are left untouched, so the image runs its defaults (one iteration).
"""

from __future__ import annotations

import time
from pathlib import Path

from elftools.elf.elffile import ELFFile

from hil.emu.core import M33Core
from hil.emu.debug_port import VC_CORERESET
from hil.emu.server import build_board

DEMCR = 0xE000EDFC


def symbol_address(elf: Path, name: str) -> int:
    """A symbol's address in the ELF (Thumb bit cleared); KeyError naming it if absent."""
    with open(elf, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        found = table.get_symbol_by_name(name) if table is not None else None
        if not found:
            raise KeyError(f"{elf}: no symbol {name}")
        return found[0]["st_value"] & ~1


def load_core(elf: Path, counting: str = "native") -> M33Core:
    """The core with the image's loadable segments written, its bring-up functions skipped, reset."""
    scs, console = build_board(0, elf, counting=counting)
    console.close()  # nothing reads the console here: its bytes go nowhere
    core = scs.core
    with open(elf, "rb") as handle:
        for segment in ELFFile(handle).iter_segments():
            if segment.header.p_type == "PT_LOAD" and segment.header.p_filesz:
                core.write(segment["p_paddr"], segment.data())
    scs.write_word(DEMCR, VC_CORERESET)  # halted at the reset vector: run_to starts it
    scs.system_reset()
    return core


def run_to(core: M33Core, address: int, timeout_s: float) -> float:
    """Run until the core halts at `address`; the seconds it took. TimeoutError (core halted) if it never does."""
    core.set_breakpoint(address)
    start = time.perf_counter()
    core.resume()
    thread = core._thread
    if thread is not None:
        thread.join(timeout_s)
    took = time.perf_counter() - start
    if not core.halted or core.pc != address:
        core.halt()
        raise TimeoutError(f"the core did not reach 0x{address:08x} in {timeout_s} s (pc 0x{core.pc:08x})")
    return took
