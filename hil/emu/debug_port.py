"""The M33's Private Peripheral Bus as the debugger and the core both see it: debug, DWT, FPB, SCB, ROM table.

Why a model of its own: pyOCD identifies and drives a core only through these registers. It must meet a
v8-M core: CPUID 0x410FD210 (Cortex-M33 r0p0), the SCS, DWT and FPB as CoreSight class-9 components with the
M33's part number 0xD21 and DEVARCH ids (SCS 0x2A04, DWT 0x1A02, FPB 0x1A03; pyOCD's coresight/component_ids.py),
no Security Extension (ID_PFR1 = 0) and the single-precision FPU (MVFR0). Run control is the architecture's:
DHCSR (key 0xA05F; C_HALT, C_STEP), DCRSR/DCRDR for core and FP registers, DEMCR (VC_CORERESET, VC_HARDERR),
AIRCR (key 0x05FA; SYSRESETREQ), DFSR (halt reasons, write one to clear). FPB v2 comparators become breakpoints
in the core (an enabled comparator holds the address | 1). DWT CYCCNT is the core's instruction count.
"""

from __future__ import annotations

from hil.emu.core import M33Core

CPUID_M33 = 0x410FD210
DHCSR, DCRSR, DCRDR, DEMCR = 0xE000EDF0, 0xE000EDF4, 0xE000EDF8, 0xE000EDFC
AIRCR, VTOR, DFSR = 0xE000ED0C, 0xE000ED08, 0xE000ED30
CFSR, HFSR, MMFAR, BFAR = 0xE000ED28, 0xE000ED2C, 0xE000ED34, 0xE000ED38
DWT, FPB, SCS, ROM_TABLE = 0xE0001000, 0xE0002000, 0xE000E000, 0xE00FF000
DWT_CTRL, DWT_CYCCNT = DWT, DWT + 4
FP_CTRL, FP_COMP0, FP_CODE_COMPARATORS = FPB, FPB + 8, 8
DHCSR_KEY, AIRCR_KEY = 0xA05F, 0x05FA
C_DEBUGEN, C_HALT, C_STEP = 1, 2, 4
S_REGRDY, S_HALT, S_RETIRE_ST, S_RESET_ST = 1 << 16, 1 << 17, 1 << 24, 1 << 25
DFSR_HALTED, DFSR_BKPT, DFSR_VCATCH = 1, 2, 8
VC_CORERESET, VC_HARDERR = 1, 1 << 10
SYSRESETREQ = 1 << 2

IDENTITY = {
    0xE000ED00: CPUID_M33,
    0xE000ED40: 0x00000030,  # ID_PFR0: ARM and Thumb state
    0xE000ED44: 0x00000200,  # ID_PFR1: M-profile programmers' model, no Security Extension
    0xE000ED48: 0x00200000,  # ID_DFR0: v8-M debug
    0xE000ED60: 0x01101110,  # ID_ISAR0: no low-overhead loops (v8.0-M)
    0xE000ED6C: 0x01111110,  # ID_ISAR3
    0xE000ED78: 0x00000000,  # CLIDR: no cache
    0xE000ED90: 0x00000000,  # MPU_TYPE: no MPU regions modelled
    0xE000EF40: 0x10110021,  # MVFR0: single precision, FP registers
    0xE000EF44: 0x11000011,  # MVFR1
    0xE000EF48: 0x00000040,  # MVFR2
}
_ARM_DESIGNER = 0x23B  # JEP106 bank 4, id 0x3B, as DEVARCH.ARCHITECT


def _coresight_ids(base: int, part: int, devarch: int | None, devtype: int = 0) -> dict[int, int]:
    """CIDR/PIDR (and DEVARCH/DEVTYPE for a class-9 component) of an Arm component at `base`."""
    klass = 0x9 if devarch is not None else 0x1
    ids = {base + 0xFE0: part & 0xFF, base + 0xFE4: 0xB0 | (part >> 8 & 0xF), base + 0xFE8: 0x0B,
           base + 0xFEC: 0, base + 0xFD0: 0x04, base + 0xFF0: 0x0D, base + 0xFF4: klass << 4, base + 0xFF8: 0x05,
           base + 0xFFC: 0xB1}
    if devarch is not None:
        ids.update({base + 0xFBC: _ARM_DESIGNER << 21 | 1 << 20 | devarch, base + 0xFCC: devtype})
    return ids


def _rom_entry(component: int) -> int:
    return ((component - ROM_TABLE) & 0xFFFFF000) | 3  # present, 32-bit format


def identity_words() -> dict[int, int]:
    words = dict(IDENTITY)
    words.update({ROM_TABLE: _rom_entry(SCS), ROM_TABLE + 4: _rom_entry(DWT), ROM_TABLE + 8: _rom_entry(FPB),
                  ROM_TABLE + 12: 0})
    words.update(_coresight_ids(ROM_TABLE, 0x4C9, None))
    words.update(_coresight_ids(SCS, 0xD21, 0x2A04))
    words.update(_coresight_ids(DWT, 0xD21, 0x1A02))
    words.update(_coresight_ids(FPB, 0xD21, 0x1A03))
    return words


class SystemControlSpace:
    """The PPB's registers over one `M33Core` (see the module docstring)."""

    def __init__(self, core: M33Core) -> None:
        self.core = core
        core.ppb = self
        core.on_stop = self._core_stopped
        self.words = identity_words()
        self.dcrdr = 0
        self.demcr = 0
        self.dfsr = 0
        self.vtor = 0x28004000
        self.reset_seen = False
        self.cyccnt_enabled = False
        self._cyccnt_base = 0  # CYCCNT = (base + instructions since `_cyccnt_at`) while enabled
        self._cyccnt_at = 0
        self.resets = 0
        # neutronInit's one effect the image can see: it unlocks the DWT and sets CYCCNT to 0 (libNeutronFirmware.a's
        # neutronPrivateFwInit writes 0xC5ACCE55 and 0xE0001000 words), so the skipped call keeps it.
        core.skip_effects["neutronInit"] = self._counter_restarted

    def _counter_restarted(self) -> None:
        self._cyccnt_base, self._cyccnt_at = 0, self.core.executed

    # -- halting ---------------------------------------------------------------------------

    def _core_stopped(self, reason: str) -> None:
        self.dfsr |= {"breakpoint": DFSR_BKPT, "vector catch": DFSR_VCATCH}.get(reason, DFSR_HALTED)

    def system_reset(self) -> None:
        """SYSRESETREQ: the core restarts from the vector table; halted there when DEMCR.VC_CORERESET is set."""
        self.core.halt()
        self.core.peripherals.reset()
        self.vtor = 0x28004000
        self.cyccnt_enabled, self._cyccnt_base = False, 0
        self.core.reset(self.vtor)
        self.reset_seen = True
        self.resets += 1
        if self.demcr & VC_CORERESET:
            self.dfsr |= DFSR_VCATCH
        else:
            self.core.resume()

    # -- the cycle counter ------------------------------------------------------------------

    def cyccnt(self, from_core: bool) -> int:
        if not self.cyccnt_enabled:
            return self._cyccnt_base
        now = self.core.cycle_count() if from_core else self.core.executed
        return (self._cyccnt_base + now - self._cyccnt_at) & 0xFFFFFFFF

    def _set_cyccnt(self, value: int, enabled: bool, from_core: bool) -> None:
        self._cyccnt_at = self.core.cycle_count() if from_core else self.core.executed
        self._cyccnt_base, self.cyccnt_enabled = value & 0xFFFFFFFF, enabled

    # -- register access ---------------------------------------------------------------------

    def read_word(self, address: int, from_core: bool = False) -> int:
        core = self.core
        if address == DHCSR:
            halted = core.halted
            value = C_DEBUGEN | S_RETIRE_ST | ((S_HALT | C_HALT | S_REGRDY) if halted else 0)
            if self.reset_seen:
                value |= S_RESET_ST
                self.reset_seen = False
            return value
        if address == DCRDR:
            return self.dcrdr
        if address == DEMCR:
            return self.demcr
        if address == DFSR:
            return self.dfsr
        if address == VTOR:
            return self.vtor
        if address == DWT_CYCCNT:
            return self.cyccnt(from_core)
        if address == DWT_CTRL:
            return int(self.cyccnt_enabled)
        if address == FP_CTRL:
            return 1 << 28 | FP_CODE_COMPARATORS << 4 | int(self.words.get(FP_CTRL, 0) & 1)
        faults = core.faults
        named = {CFSR: faults.cfsr, HFSR: faults.hfsr, MMFAR: faults.mmfar, BFAR: faults.bfar}
        if address in named:
            return named[address]
        return self.words.get(address, 0)

    def write_word(self, address: int, value: int, from_core: bool = False) -> None:
        core = self.core
        if address == DHCSR and not from_core:
            if value >> 16 == DHCSR_KEY:
                self._run_control(value)
        elif address == DCRDR:
            self.dcrdr = value
        elif address == DCRSR and not from_core:
            if value & (1 << 16):
                core.write_register(value & 0x7F, self.dcrdr)
            else:
                self.dcrdr = core.read_register(value & 0x7F)
        elif address == DEMCR:
            self.demcr = value
            core.catch_hardfault = bool(value & VC_HARDERR)
        elif address == DFSR:
            self.dfsr &= ~value
        elif address == VTOR:
            self.vtor = value & ~0x7F
        elif address == AIRCR:
            if value >> 16 == AIRCR_KEY and value & SYSRESETREQ:
                if from_core:
                    core.uc.emu_stop()
                self.system_reset()
        elif address == DWT_CYCCNT:
            self._set_cyccnt(value, self.cyccnt_enabled, from_core)
        elif address == DWT_CTRL:
            self._set_cyccnt(self.cyccnt(from_core), bool(value & 1), from_core)
        elif address == CFSR:
            core.faults.cfsr &= ~value
        elif address == HFSR:
            core.faults.hfsr &= ~value
        elif FP_COMP0 <= address < FP_COMP0 + 4 * FP_CODE_COMPARATORS:
            self._comparator(address, value)
        else:
            self.words[address] = value

    def _comparator(self, address: int, value: int) -> None:
        old = self.words.get(address, 0)
        if old & 1:
            self.core.clear_breakpoint(old & ~1)
        self.words[address] = value
        if value & 1:
            self.core.set_breakpoint(value & ~1)

    def _run_control(self, value: int) -> None:
        core = self.core
        if value & C_HALT:
            if not core.halted:
                core.halt()
                self.dfsr |= DFSR_HALTED
        elif value & C_STEP:
            core.resume(step=True)
        else:
            core.resume()
