"""The emulated RT700's core, registers and probe, on a hand-counted assembly program (tests/unit/emu_program.py).

What each test checks comes from outside the emulator: instruction counts counted by hand in the program's
comments, addresses from binutils' nm, the fault status bits of the Armv8-M Architecture Reference Manual
(CFSR.PRECISERR bit 9, BFARVALID bit 15, HFSR.FORCED bit 30), the bytes the program writes to LPUART0.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from elftools.elf.elffile import ELFFile
from pyocd.core import exceptions

import emu_program
from hil.emu.probe import EmulatedProbe
from hil.emu.server import build_board

DHCSR, DEMCR, FP_COMP0 = 0xE000EDF0, 0xE000EDFC, 0xE0002008
CFSR, HFSR, BFAR = 0xE000ED28, 0xE000ED2C, 0xE000ED38


@pytest.fixture
def board(tmp_path):
    """(the board's debug registers, its console socket, the program's ELF), the program loaded and reset-halted."""
    elf = emu_program.build(tmp_path)
    scs, console = build_board(0, elf)
    with open(elf, "rb") as handle:
        for segment in ELFFile(handle).iter_segments():
            if segment.header.p_type == "PT_LOAD" and segment.header.p_filesz:
                scs.core.write(segment["p_paddr"], segment.data())
    reader = socket.create_connection(("127.0.0.1", console.port), timeout=5)
    scs.write_word(DEMCR, 1)  # VC_CORERESET: halt at the reset vector
    scs.system_reset()
    yield scs, reader, elf
    scs.core.halt()
    reader.close()
    console.close()


def _run_to(scs, address: int, comparator: int = 0) -> None:
    scs.write_word(FP_COMP0 + 4 * comparator, address | 1)  # an FPB v2 comparator: address | enable
    scs.write_word(DHCSR, 0xA05F0001)  # C_DEBUGEN, C_HALT clear: run
    deadline = time.monotonic() + 10
    while not scs.read_word(DHCSR) & (1 << 17):  # S_HALT
        assert time.monotonic() < deadline, "the core never halted"
        time.sleep(0.01)


def test_reset_takes_sp_and_pc_from_the_vector_table(board):
    scs, _, elf = board
    assert scs.core.read_register(15) == emu_program.symbol(elf, "Reset_Handler")
    assert scs.core.read_register(13) == 0x20100000
    assert scs.read_word(0xE000ED00) == 0x410FD210  # CPUID: Cortex-M33 r0p0


def test_cycle_counter_counts_the_instructions_executed_exactly(board):
    scs, _, elf = board
    _run_to(scs, emu_program.symbol(elf, "hil_mark"))
    assert scs.core.read_register(15) == emu_program.symbol(elf, "hil_mark")
    assert scs.core.word(0x20000000) == emu_program.COUNTED


def test_a_spinning_bring_up_function_is_returned_from_and_the_console_gets_every_byte(board):
    scs, reader, elf = board
    _run_to(scs, emu_program.symbol(elf, "hil_mark"))
    assert scs.core.skipped == {"SystemInit": 1}
    assert reader.recv(16) == b"hi\r\n"


def test_a_bus_fault_enters_the_hardfault_handler_as_silicon_does(board):
    scs, _, elf = board
    _run_to(scs, emu_program.symbol(elf, "HardFault_Handler"))
    core = scs.core
    assert core.read_register(15) == emu_program.symbol(elf, "HardFault_Handler")
    assert core.read_register(14) == 0xFFFFFFF9  # EXC_RETURN: thread mode, main stack, basic frame
    assert core.read_register(16) & 0x1FF == 3  # IPSR: HardFault
    assert scs.read_word(CFSR) == (1 << 9) | (1 << 15)  # PRECISERR | BFARVALID
    assert scs.read_word(BFAR) == 0x70000000
    assert scs.read_word(HFSR) == 1 << 30  # FORCED
    frame = struct.unpack("<8I", core.read(core.read_register(13), 32))  # r0-r3, r12, lr, pc, xpsr
    assert frame[0] == 0x70000000 and frame[6] == emu_program.symbol(elf, "fault_here")


def test_a_software_breakpoint_into_flash_is_refused_and_one_into_sram_taken(board):
    scs, _, elf = board
    probe = EmulatedProbe("emu", scs)
    probe.write_ap(0x00, 0x23000051)  # CSW: 16-bit transfers
    probe.write_ap(0x04, emu_program.symbol(elf, "hil_mark"))
    with pytest.raises(exceptions.TransferFaultError):
        probe.write_ap(0x0C, 0xBE00)  # BKPT #0 in the low halfword lane
    assert probe.refused_breakpoints == 1
    probe.write_ap(0x04, 0x20000100)
    probe.write_ap(0x0C, 0xBE00)
    assert scs.core.read(0x20000100, 2) == b"\x00\xbe"


# Hand-assembled Thumb code, 7 instructions in 22 bytes (Armv8-M ARM encodings, little-endian halfwords):
# movs r0,#1 (0x2001) | bl (0xF000 0xF800: top bits 0b11110) | ldr.w r1,[r3,#4] (0xF8D3 0x1004: 0b11111)
# | nop (0xBF00) | it eq (0xBF08) | vadd.f32 s0,s0,s1 (0xEE30 0x0A20: 0b11101) | orr.w r2,r2,#0x1000000 (0xF042 0x7280)
HAND_CODE = bytes.fromhex("0120" "00f000f8" "d3f80410" "00bf" "08bf" "30ee200a" "42f08072")
HAND_COUNT = 7


def test_the_native_decoder_counts_hand_made_thumb_code():
    import ctypes

    from hil.emu.block_count import native_library, thumb_starts

    lib = ctypes.CDLL(str(native_library()))
    lib.hil_thumb_count.restype = ctypes.c_uint32
    assert lib.hil_thumb_count(HAND_CODE, len(HAND_CODE)) == HAND_COUNT
    assert lib.hil_thumb_count(HAND_CODE[:6], 6) == 2  # movs + bl
    assert len(thumb_starts(HAND_CODE, 0)) == HAND_COUNT


@pytest.mark.parametrize("counting", ["native", "python"])
def test_each_counter_agrees_with_a_per_instruction_oracle(tmp_path, counting):
    """The block counters against unicorn's UC_HOOK_CODE, called once per instruction executed (the program has no
    IT block), and against the hand count of emu_program.COUNTED."""
    from unicorn import UC_HOOK_CODE

    from hil.emu.direct_run import load_core, run_to

    elf = emu_program.build(tmp_path)
    core = load_core(elf, counting)
    assert core.counter.native == (counting == "native")
    oracle = {"n": 0}

    def count(_uc, address, _size, _data):
        oracle["n"] += 1

    core.uc.hook_add(UC_HOOK_CODE, count)
    run_to(core, emu_program.symbol(elf, "hil_mark"), 10)
    assert core.word(0x20000000) == emu_program.COUNTED
    # Hand count to the stop at hil_mark: bl SystemInit (1) + 4 x (movs, bl, putc_'s 6 with TDRE set) (32) + the
    # 11 of DEMCR/DWT set-up and `a` + 10 x (subs, bne) (20) + ldr, subs, ldr, str, bl hil_mark (5) = 69.
    # The oracle also saw SystemInit's first instruction (the skip returned before it ran) and hil_mark's (the
    # breakpoint stopped before it ran): unicorn calls the later code hooks of an instruction whose hook stopped.
    assert core.executed == 69 == oracle["n"] - core.skipped["SystemInit"] - 1
