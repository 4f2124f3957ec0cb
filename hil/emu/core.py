"""The Cortex-M33 of the emulated RT700: unicorn's UC_CPU_ARM_CORTEX_M33 with the RT700 map, run by a thread.

Why these pieces:
- Memory: XIP flash and SRAM are host buffers mapped into unicorn (mem_map_ptr), so the debugger reads and
  writes them without stopping the core; the SRAM is mapped twice (0x20000000 and its secure alias 0x30000000).
  The core may not write the flash (it is XIP, read-only on the bus): such a write is a bus fault.
- Time: DWT CYCCNT is the number of instructions executed. A block hook (native C, hil.emu.block_count) adds
  each translation block's instruction count, decoded once per block and cached; a stop inside a block
  (breakpoint, halt, fault, a CYCCNT read) takes back the instructions after the stopping one, so the count is exact.
- Exceptions: unicorn has no M-profile exception model, so a fault (an unmapped or read-only access, an
  undefined instruction) is entered here as the core would: the basic frame stacked on the main stack,
  LR = EXC_RETURN 0xFFFFFFF9, IPSR = 3, the fault status registers set, PC = the HardFault vector. The core
  then runs on into the handler, where the harness's breakpoint stops it as on silicon.
- Bring-up: the functions of hil.emu.rt700_map.BRING_UP_SKIPPED return at once (R0 = 0), each counted.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable
from typing import Any

from unicorn import (UC_ARCH_ARM, UC_HOOK_CODE, UC_HOOK_INTR, UC_HOOK_MEM_INVALID, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MODE_MCLASS,
                     UC_MODE_THUMB, UC_PROT_ALL, UC_PROT_EXEC, UC_PROT_READ, Uc, UcError)
from unicorn import arm_const as arm
from unicorn import unicorn_const as const

from hil.emu import rt700_map as rt
from hil.emu.block_count import BlockCounter

# DCRSR register selectors (Armv8-M Architecture Reference Manual, DCRSR.REGSEL) -> unicorn registers.
CORE_REGISTERS: dict[int, int] = {i: getattr(arm, f"UC_ARM_REG_R{i}") for i in range(13)}
CORE_REGISTERS.update({13: arm.UC_ARM_REG_SP, 14: arm.UC_ARM_REG_LR, 15: arm.UC_ARM_REG_PC,
                       16: arm.UC_ARM_REG_XPSR, 17: arm.UC_ARM_REG_MSP, 18: arm.UC_ARM_REG_PSP,
                       0x21: arm.UC_ARM_REG_FPSCR})
CORE_REGISTERS.update({0x40 + i: getattr(arm, f"UC_ARM_REG_S{i}") for i in range(32)})
REGSEL_CONTROL_PRIMASK = 0x14  # CONTROL[31:24] FAULTMASK[23:16] BASEPRI[15:8] PRIMASK[7:0]

EXC_RETURN_THREAD_MSP = 0xFFFFFFF9
HARDFAULT = 3
HFSR_FORCED = 1 << 30
CFSR_UNDEFINSTR, CFSR_IBUSERR, CFSR_PRECISERR, CFSR_BFARVALID = 1 << 16, 1 << 8, 1 << 9, 1 << 15
DWT_CTRL, CYCCNT = 0xE0001000, 0xE0001004  # DWT CTRL and CYCCNT
BKPT_INTNO = 7  # QEMU's EXCP_BKPT, as unicorn reports it to an interrupt hook


class FaultState:
    """The SCB's fault status words the core sets on fault entry (CFSR, HFSR, MMFAR, BFAR)."""

    def __init__(self) -> None:
        self.cfsr = self.hfsr = self.bfar = self.mmfar = 0
        self.ipsr = 0

    def clear(self) -> None:
        self.__init__()


class M33Core:
    """The core, its memory and its run thread. `mmio` maps peripheral and PPB reads/writes to their models."""

    def __init__(self, peripherals: Any, ppb: Any = None, *, counting: str = "native") -> None:
        self.uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS, arm.UC_CPU_ARM_CORTEX_M33)
        self.flash = ctypes.create_string_buffer(b"\xff" * rt.FLASH_SIZE, rt.FLASH_SIZE)
        self.sram = ctypes.create_string_buffer(rt.SRAM_SIZE)
        self.uc.mem_map_ptr(rt.FLASH_BASE, rt.FLASH_SIZE, UC_PROT_READ | UC_PROT_EXEC, self.flash)
        self.uc.mem_map_ptr(rt.SRAM_BASE, rt.SRAM_SIZE, UC_PROT_ALL, self.sram)
        self.uc.mem_map_ptr(rt.SRAM_SECURE_ALIAS, rt.SRAM_SIZE, UC_PROT_ALL, self.sram)
        self.peripherals = peripherals
        self.ppb = ppb
        self.uc.mmio_map(rt.PERIPH_BASE, rt.PERIPH_SIZE, self._periph_read, None, self._periph_write, None)
        self.uc.mmio_map(rt.PPB_BASE, rt.PPB_SIZE, self._ppb_read, None, self._ppb_write, None)
        self.faults = FaultState()
        self.counter = BlockCounter(self.uc, counting=counting)  # instructions executed: DWT CYCCNT follows it
        self._bad_access: tuple[int, int] | None = None  # (uc access type, address) of the last invalid access
        self.skipped: dict[str, int] = {}
        self._skips: dict[int, str] = {}
        self.skip_effects: dict[str, Callable[[], None]] = {}  # what a skipped function did that software sees
        self._breakpoints: dict[int, int] = {}  # address -> unicorn hook handle
        self.breakpoint_hits = {"fpb": 0, "bkpt": 0}  # halts at an FPB comparator, at a BKPT instruction
        self._resume_over: int | None = None
        self.stop_reason: str | None = None  # "halt", "step", "breakpoint", "vector catch"
        self.on_stop: Callable[[str], None] = lambda _reason: None
        self.catch_hardfault = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.uc.hook_add(UC_HOOK_MEM_INVALID, self._on_bad_access)
        self.uc.hook_add(UC_HOOK_INTR, self._on_interrupt)
        # unicorn does not bring PC up to date for an MMIO callback (it holds the block's start there), but does
        # for a memory hook: this one, over DWT CTRL and CYCCNT alone, says which instruction reads or sets the counter.
        self._reader_pc = 0
        self.uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_counter_access, begin=DWT_CTRL, end=CYCCNT + 3)

    # -- memory as the debugger sees it ------------------------------------------------------

    def buffer_for(self, address: int, length: int) -> tuple[ctypes.Array, int] | None:
        """(host buffer, offset) holding [address, address+length), or None outside flash and SRAM."""
        for region, buffer in ((rt.FLASH, self.flash), (rt.SRAM, self.sram), (rt.SRAM_ALIAS, self.sram)):
            if region.contains(address, length):
                return buffer, address - region.start
        return None

    def read(self, address: int, length: int) -> bytes:
        found = self.buffer_for(address, length)
        if found is None:
            raise ValueError(f"no memory at 0x{address:08x} (+{length})")
        buffer, offset = found
        return ctypes.string_at(ctypes.addressof(buffer) + offset, length)

    def write(self, address: int, data: bytes) -> None:
        found = self.buffer_for(address, len(data))
        if found is None:
            raise ValueError(f"no memory at 0x{address:08x} (+{len(data)})")
        buffer, offset = found
        ctypes.memmove(ctypes.addressof(buffer) + offset, data, len(data))
        if self.halted:  # code may have changed: drop what unicorn translated from it
            self.uc.ctl_remove_cache(address, address + len(data))
            self.counter.forget()

    def word(self, address: int) -> int:
        return struct.unpack("<I", self.read(address, 4))[0]

    # -- registers --------------------------------------------------------------------------

    def read_register(self, regsel: int) -> int:
        if regsel == REGSEL_CONTROL_PRIMASK:
            return ((self.uc.reg_read(arm.UC_ARM_REG_CONTROL) & 0xFF) << 24
                    | (self.uc.reg_read(arm.UC_ARM_REG_FAULTMASK) & 1) << 16
                    | (self.uc.reg_read(arm.UC_ARM_REG_BASEPRI) & 0xFF) << 8
                    | (self.uc.reg_read(arm.UC_ARM_REG_PRIMASK) & 1))
        reg = CORE_REGISTERS.get(regsel)
        if reg is None:
            return 0
        value = self.uc.reg_read(reg) & 0xFFFFFFFF
        if regsel == 16:  # unicorn keeps no exception number: the one this emulation entered
            value = (value & ~0x1FF) | self.faults.ipsr | (1 << 24)
        return value

    def write_register(self, regsel: int, value: int) -> None:
        if regsel == REGSEL_CONTROL_PRIMASK:
            self.uc.reg_write(arm.UC_ARM_REG_PRIMASK, value & 1)
            self.uc.reg_write(arm.UC_ARM_REG_BASEPRI, (value >> 8) & 0xFF)
            self.uc.reg_write(arm.UC_ARM_REG_FAULTMASK, (value >> 16) & 1)
            self.uc.reg_write(arm.UC_ARM_REG_CONTROL, (value >> 24) & 0xFF)
        elif regsel in CORE_REGISTERS:
            if regsel == 16:
                self.faults.ipsr = value & 0x1FF
            self.uc.reg_write(CORE_REGISTERS[regsel], value | 1 if regsel == 15 else value)  # PC bit 0: Thumb

    @property
    def pc(self) -> int:
        return self.uc.reg_read(arm.UC_ARM_REG_PC)

    # -- reset, skips, breakpoints ------------------------------------------------------------

    def reset(self, vector_table: int = rt.VECTOR_TABLE) -> None:
        """Core reset as the boot ROM leaves it for the image: SP and PC from the vector table, Thumb, no exception."""
        for regsel in (*range(13), 14):
            self.uc.reg_write(CORE_REGISTERS[regsel], 0)
        self.uc.reg_write(arm.UC_ARM_REG_LR, 0xFFFFFFFF)
        self.uc.reg_write(arm.UC_ARM_REG_CONTROL, 0)
        self.uc.reg_write(arm.UC_ARM_REG_PRIMASK, 0)
        self.uc.reg_write(arm.UC_ARM_REG_MSP, self.word(vector_table))
        self.uc.reg_write(arm.UC_ARM_REG_SP, self.word(vector_table))
        self.uc.reg_write(arm.UC_ARM_REG_PC, self.word(vector_table + 4) | 1)  # unicorn takes bit 0 as the Thumb state
        self.faults.clear()
        self.uc.ctl_flush_tb()
        self.counter.forget()

    def skip_functions(self, addresses: dict[int, str]) -> None:
        """Return at once from each function at these (Thumb bit cleared) addresses, counting each skip."""
        self._skips.update(addresses)
        for address in addresses:
            self.uc.hook_add(UC_HOOK_CODE, self._on_skip, begin=address, end=address)

    def set_breakpoint(self, address: int) -> None:
        if address not in self._breakpoints:
            self._breakpoints[address] = self.uc.hook_add(UC_HOOK_CODE, self._on_breakpoint, begin=address,
                                                          end=address)
            self.uc.ctl_remove_cache(address, address + 4)

    def clear_breakpoint(self, address: int) -> None:
        handle = self._breakpoints.pop(address, None)
        if handle is not None:
            self.uc.hook_del(handle)
            self.uc.ctl_remove_cache(address, address + 4)

    # -- hooks --------------------------------------------------------------------------------

    @property
    def executed(self) -> int:
        """Instructions executed since power-up (DWT CYCCNT follows it)."""
        return self.counter.executed

    @executed.setter
    def executed(self, value: int) -> None:
        self.counter.executed = value

    def _not_done(self, pc: int) -> int:
        """Instructions of the current block from `pc` on: counted by the block hook but not executed."""
        return sum(1 for start in self.counter.starts_of_current_block(self.uc) if start >= pc)

    def _take_back(self, pc: int) -> None:
        """A stop (or a skip) at `pc` inside the current block: its instructions from `pc` on did not run."""
        self.executed -= self._not_done(pc)
        self.counter.leave_block()

    def _stop(self, reason: str, pc: int) -> None:
        self._take_back(pc)
        self.stop_reason = reason
        self.uc.emu_stop()

    def _on_skip(self, uc: Uc, address: int, _size: int, _data: Any) -> None:
        name = self._skips[address]
        self.skipped[name] = self.skipped.get(name, 0) + 1
        self._take_back(address)
        self.skip_effects.get(name, lambda: None)()
        uc.reg_write(arm.UC_ARM_REG_R0, 0)
        uc.reg_write(arm.UC_ARM_REG_PC, uc.reg_read(arm.UC_ARM_REG_LR) | 1)

    def _on_breakpoint(self, uc: Uc, address: int, _size: int, _data: Any) -> None:
        if self._resume_over == address:
            self._resume_over = None
            return
        self.breakpoint_hits["fpb"] += 1
        self._stop("breakpoint", address)

    def _on_interrupt(self, uc: Uc, intno: int, _data: Any) -> None:
        if intno == BKPT_INTNO:  # a BKPT instruction (a software breakpoint): halt on it
            self.breakpoint_hits["bkpt"] += 1
            self._stop("breakpoint", self.pc)

    def _on_bad_access(self, uc: Uc, access: int, address: int, _size: int, _value: int, _data: Any) -> bool:
        self._bad_access = (access, address)
        return False

    def _on_counter_access(self, uc: Uc, _access: int, _address: int, _size: int, _value: int, _data: Any) -> None:
        self._reader_pc = uc.reg_read(arm.UC_ARM_REG_PC)

    def cycle_count(self) -> int:
        """Instructions executed before the one reading CYCCNT now (called from inside the core's MMIO callback)."""
        return self.executed - self._not_done(self._reader_pc)

    def _periph_read(self, uc: Uc, offset: int, size: int, _data: Any) -> int:
        return self.peripherals.read(rt.PERIPH_BASE + offset, size)

    def _periph_write(self, uc: Uc, offset: int, size: int, value: int, _data: Any) -> None:
        self.peripherals.write(rt.PERIPH_BASE + offset, size, value)

    def _ppb_read(self, uc: Uc, offset: int, size: int, _data: Any) -> int:
        word = self.ppb.read_word(rt.PPB_BASE + (offset & ~3), from_core=True) if self.ppb else 0
        return (word >> ((offset & 3) * 8)) & ((1 << (8 * size)) - 1)

    def _ppb_write(self, uc: Uc, offset: int, size: int, value: int, _data: Any) -> None:
        if self.ppb:
            self.ppb.write_word(rt.PPB_BASE + (offset & ~3), value << ((offset & 3) * 8), from_core=True)

    # -- faults -------------------------------------------------------------------------------

    def _enter_hardfault(self, error: UcError) -> None:
        """Exception entry for a fault unicorn reported: stack the frame, set the status, go to the handler."""
        pc = self.pc
        self._take_back(pc)
        access, address = self._bad_access or (None, 0)
        self._bad_access = None
        if error.errno == const.UC_ERR_INSN_INVALID:
            self.faults.cfsr |= CFSR_UNDEFINSTR
        elif error.errno in (const.UC_ERR_FETCH_UNMAPPED, const.UC_ERR_FETCH_PROT):
            self.faults.cfsr |= CFSR_IBUSERR
        else:
            self.faults.cfsr |= CFSR_PRECISERR | CFSR_BFARVALID
            self.faults.bfar = address & 0xFFFFFFFF
        self.faults.hfsr |= HFSR_FORCED
        reg = self.uc.reg_read
        sp = reg(arm.UC_ARM_REG_SP)
        frame_sp = (sp - 32) & ~7
        xpsr = (reg(arm.UC_ARM_REG_XPSR) & ~0x1FF) | self.faults.ipsr | (1 << 24) | ((sp & 4) << 7)
        frame = [reg(r) for r in (arm.UC_ARM_REG_R0, arm.UC_ARM_REG_R1, arm.UC_ARM_REG_R2, arm.UC_ARM_REG_R3,
                                  arm.UC_ARM_REG_R12, arm.UC_ARM_REG_LR)] + [pc, xpsr]
        self.write(frame_sp, struct.pack("<8I", *(v & 0xFFFFFFFF for v in frame)))
        self.uc.reg_write(arm.UC_ARM_REG_SP, frame_sp)
        self.uc.reg_write(arm.UC_ARM_REG_LR, EXC_RETURN_THREAD_MSP)
        self.faults.ipsr = HARDFAULT
        vtor = self.ppb.vtor if self.ppb else rt.VECTOR_TABLE
        self.uc.reg_write(arm.UC_ARM_REG_PC, self.word(vtor + 4 * HARDFAULT) | 1)

    # -- run control --------------------------------------------------------------------------

    @property
    def halted(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def resume(self, *, step: bool = False) -> None:
        """Run from PC (one instruction if `step`) in the run thread; a breakpoint at PC is stepped over first."""
        if not self.halted:
            return
        self.stop_reason = None
        self._resume_over = self.pc if self.pc in self._breakpoints else None
        self._thread = threading.Thread(target=self._run, args=(step,), name="emu-m33", daemon=True)
        self._thread.start()
        if step:
            self._thread.join()

    def _run(self, step: bool) -> None:
        while True:
            before = self.executed
            try:
                self.uc.emu_start(self.pc | 1, 0xFFFFFFFF, 0, 1 if step else 0)
            except UcError as error:
                self._enter_hardfault(error)
                if self.catch_hardfault or step:
                    self.stop_reason = "vector catch" if self.catch_hardfault else "step"
                    break
                continue
            if step:
                self.executed = before + 1
                self.stop_reason = "step"
            break
        self.counter.leave_block()
        self.on_stop(self.stop_reason or "halt")

    def halt(self, timeout: float = 5.0) -> None:
        """Stop the run thread (C_HALT) and wait for it."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        self.stop_reason = "halt"
        self.uc.emu_stop()
        thread.join(timeout)
