"""Cortex-M (Armv8-M Mainline) fault state in words: which exception, what the fault status registers say.

Why a module of its own: turning CFSR/HFSR/SFSR bits into "precise data bus error at 0x58000000" is
pure arithmetic on numbers the debugger read, the same for every board, and testable against the
architecture manual without a target. The bit positions and names are the Armv8-M Architecture
Reference Manual's (System Control Block: CFSR = MMFSR | BFSR << 8 | UFSR << 16 at 0xE000ED28, HFSR
0xE000ED2C, MMFAR 0xE000ED34, BFAR 0xE000ED38; Security Attribution Unit: SFSR 0xE000EDE4, SFAR
0xE000EDE8) and match CMSIS's SCB_CFSR_* / SCB_HFSR_* / SAU_SFSR_* definitions.
"""

from __future__ import annotations

from dataclasses import dataclass

# Where the registers are: CFSR, HFSR, DFSR, MMFAR, BFAR are five consecutive words.
SCB_CFSR = 0xE000ED28
SCB_FAULT_BLOCK_WORDS = 5  # CFSR, HFSR, DFSR, MMFAR, BFAR
SAU_SFSR = 0xE000EDE4  # SFSR, SFAR: two consecutive words (Security Extension only)

# Exception numbers, as IPSR (xPSR[8:0]) holds them in handler mode.
EXCEPTIONS = {1: "Reset", 2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault",
              7: "SecureFault", 11: "SVCall", 12: "DebugMonitor", 14: "PendSV", 15: "SysTick"}
FAULT_EXCEPTIONS = frozenset({3, 4, 5, 6, 7})
CONFIGURABLE = ("MemManage", "BusFault", "UsageFault")

# (bit, words) per register; the *ARVALID bits are not causes: they say the address register holds the address.
_MMFSR = ((0, "instruction access violation"), (1, "data access violation"),
          (3, "MemManage fault while unstacking on exception return"),
          (4, "MemManage fault while stacking on exception entry"),
          (5, "MemManage fault during lazy floating-point state preservation"))
_BFSR = ((0, "instruction bus error"), (1, "precise data bus error"), (2, "imprecise data bus error"),
         (3, "bus fault while unstacking on exception return"), (4, "bus fault while stacking on exception entry"),
         (5, "bus fault during lazy floating-point state preservation"))
_UFSR = ((0, "undefined instruction"), (1, "invalid state (EPSR.T clear: a branch to an even address?)"),
         (2, "invalid PC load on exception return (a bad EXC_RETURN)"),
         (3, "coprocessor access with the coprocessor absent or disabled"),
         (4, "stack overflow (stack pointer below its limit register)"),
         (8, "unaligned access"), (9, "divide by zero"))
_HFSR = ((1, "bus fault on a vector table read"), (30, "escalated from a configurable fault"),
         (31, "debug event"))
_SFSR = ((0, "invalid Secure state entry point"), (1, "invalid integrity signature on exception return"),
         (2, "invalid exception return"), (3, "attribution unit violation"),
         (4, "invalid transition from Secure to Non-secure state"),
         (5, "lazy state preservation error"), (7, "lazy state error"))
MMARVALID, BFARVALID, SFARVALID = 1 << 7, 1 << 15, 1 << 6
HFSR_FORCED = 1 << 30
# The causes whose address register holds the faulting address when its VALID bit is set.
_ADDRESSED = {"data access violation", "precise data bus error", "attribution unit violation"}


@dataclass(frozen=True)
class FaultRegisters:
    """The fault status and address registers as read from the target (None: the debugger could not)."""

    cfsr: int
    hfsr: int
    mmfar: int
    bfar: int
    sfsr: int | None = None
    sfar: int | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {name: None if value is None else f"0x{value:08x}"
                for name, value in (("CFSR", self.cfsr), ("HFSR", self.hfsr), ("MMFAR", self.mmfar),
                                    ("BFAR", self.bfar), ("SFSR", self.sfsr), ("SFAR", self.sfar))}


@dataclass(frozen=True)
class FaultCause:
    """One fault's reading: the configurable fault behind it (`kind`) and what its status bits say."""

    kind: str | None
    words: tuple[str, ...]


def _words(value: int, bits: tuple[tuple[int, str], ...], address: int | None) -> list[str]:
    found = []
    for bit, words in bits:
        if value >> bit & 1:
            found.append(f"{words} at 0x{address:08x}" if address is not None and words in _ADDRESSED else words)
    return found


def decode(regs: FaultRegisters) -> dict[str, list[str]]:
    """Every cause the registers record, per fault kind ("MemManage", "BusFault", "UsageFault",
    "SecureFault", "HardFault"), in the manual's bit order; kinds with nothing set are left out."""
    mmfsr, bfsr, ufsr = regs.cfsr & 0xFF, regs.cfsr >> 8 & 0xFF, regs.cfsr >> 16 & 0xFFFF
    causes = {
        "MemManage": _words(mmfsr, _MMFSR, regs.mmfar if mmfsr & MMARVALID else None),
        "BusFault": _words(bfsr, _BFSR, regs.bfar if regs.cfsr & BFARVALID else None),
        "UsageFault": _words(ufsr, _UFSR, None),
        "SecureFault": _words(regs.sfsr or 0, _SFSR,
                              regs.sfar if regs.sfsr is not None and regs.sfsr & SFARVALID else None),
        "HardFault": _words(regs.hfsr, _HFSR, None),
    }
    return {kind: words for kind, words in causes.items() if words}


def cause_of(exception: str | None, regs: FaultRegisters | None) -> FaultCause:
    """The fault that started it all, and its words.

    A HardFault that HFSR says was FORCED is a configurable fault (MemManage, BusFault, UsageFault)
    that could not take its own handler (not enabled in SHCSR, or of too low priority): its kind is
    the one whose CFSR bits are set. Otherwise the exception's own register speaks for it.
    """
    if regs is None:
        return FaultCause(exception, ())
    causes = decode(regs)
    if exception == "HardFault" and regs.hfsr & HFSR_FORCED:
        for kind in (*CONFIGURABLE, "SecureFault"):
            if kind in causes:
                return FaultCause(kind, tuple(causes[kind]))
        return FaultCause(None, tuple(causes.get("HardFault", ())))
    if exception in causes:
        return FaultCause(exception, tuple(causes[exception]))
    return FaultCause(exception, ())


def exception_name(ipsr: int) -> str | None:
    """The exception an IPSR value names (None in thread mode, "IRQ n" for an interrupt)."""
    if ipsr == 0:
        return None
    return EXCEPTIONS.get(ipsr, f"IRQ {ipsr - 16}" if ipsr >= 16 else f"exception {ipsr}")


@dataclass(frozen=True)
class ExcReturn:
    """The EXC_RETURN value in LR on exception entry (Armv8-M ARM, "Exception return"): where the
    interrupted context's frame was stacked, and how."""

    value: int

    @property
    def valid(self) -> bool:
        return self.value >> 24 == 0xFF

    @property
    def on_psp(self) -> bool:
        """SPSEL (bit 2): the frame is on the process stack, else on the main stack."""
        return bool(self.value & 1 << 2)

    @property
    def secure_stack(self) -> bool:
        """S (bit 6): the frame is on a Secure stack."""
        return bool(self.value & 1 << 6)

    @property
    def extra_context_bytes(self) -> int:
        """DCRS (bit 5) clear: 40 bytes of additional state context (signature, R4-R11) lie below the basic frame."""
        return 0 if self.value & 1 << 5 else 40

    def stack_register(self) -> str:
        return "PSP" if self.on_psp else "MSP"


STACKED_FRAME = ("R0", "R1", "R2", "R3", "R12", "LR", "PC", "xPSR")
