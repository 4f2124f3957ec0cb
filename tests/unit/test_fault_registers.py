"""Fault status registers in words, checked against bit positions taken by hand from the Armv8-M
Architecture Reference Manual (and CMSIS's core_cm33.h), not from the module under test."""

from __future__ import annotations

import pytest

from hil.target.fault_registers import ExcReturn, FaultRegisters, cause_of, decode, exception_name


def regs(cfsr: int = 0, hfsr: int = 0, mmfar: int = 0, bfar: int = 0, sfsr: int | None = None,
         sfar: int | None = None) -> FaultRegisters:
    return FaultRegisters(cfsr, hfsr, mmfar, bfar, sfsr, sfar)


@pytest.mark.parametrize(("exception", "registers", "kind", "words"), [
    # PRECISERR (CFSR bit 9) with BFARVALID (bit 15): 0x200 | 0x8000
    ("BusFault", regs(cfsr=0x8200, bfar=0x58000000), "BusFault", ("precise data bus error at 0x58000000",)),
    # the same without BFARVALID: no address to give
    ("BusFault", regs(cfsr=0x0200, bfar=0x58000000), "BusFault", ("precise data bus error",)),
    # IMPRECISERR (bit 10) and STKERR (bit 12)
    ("BusFault", regs(cfsr=0x1400), "BusFault",
     ("imprecise data bus error", "bus fault while stacking on exception entry")),
    # UNDEFINSTR (bit 16), DIVBYZERO (bit 25), UNALIGNED (bit 24), STKOF (bit 20)
    ("UsageFault", regs(cfsr=0x0001_0000), "UsageFault", ("undefined instruction",)),
    ("UsageFault", regs(cfsr=0x0200_0000), "UsageFault", ("divide by zero",)),
    ("UsageFault", regs(cfsr=0x0100_0000), "UsageFault", ("unaligned access",)),
    ("UsageFault", regs(cfsr=0x0010_0000), "UsageFault", ("stack overflow (stack pointer below its limit register)",)),
    # DACCVIOL (bit 1) with MMARVALID (bit 7): 0x82
    ("MemManage", regs(cfsr=0x82, mmfar=0x20001234), "MemManage", ("data access violation at 0x20001234",)),
    # HardFault FORCED (HFSR bit 30) from a bus fault that could not take its own handler
    ("HardFault", regs(cfsr=0x8200, hfsr=0x4000_0000, bfar=0x60000000), "BusFault",
     ("precise data bus error at 0x60000000",)),
    # HardFault on a vector table read (HFSR bit 1): nothing escalated
    ("HardFault", regs(hfsr=0x2), "HardFault", ("bus fault on a vector table read",)),
    # SecureFault: AUVIOL (SFSR bit 3) with SFARVALID (bit 6)
    ("SecureFault", regs(sfsr=0x48, sfar=0x30000000), "SecureFault", ("attribution unit violation at 0x30000000",)),
    # a fault exception whose register says nothing
    ("UsageFault", regs(), "UsageFault", ()),
])
def test_the_cause_in_words(exception, registers, kind, words) -> None:
    cause = cause_of(exception, registers)
    assert (cause.kind, cause.words) == (kind, words)


def test_decode_lists_every_kind_that_has_a_bit_set() -> None:
    both = decode(regs(cfsr=0x0001_8200, hfsr=0x4000_0000, bfar=0x58000000))
    assert both == {"BusFault": ["precise data bus error at 0x58000000"], "UsageFault": ["undefined instruction"],
                    "HardFault": ["escalated from a configurable fault"]}
    assert decode(regs()) == {}


def test_registers_as_the_report_shows_them() -> None:
    assert regs(cfsr=0x8200, bfar=0x58000000).as_dict() == {
        "CFSR": "0x00008200", "HFSR": "0x00000000", "MMFAR": "0x00000000", "BFAR": "0x58000000",
        "SFSR": None, "SFAR": None}


@pytest.mark.parametrize(("ipsr", "name"), [(0, None), (3, "HardFault"), (4, "MemManage"), (5, "BusFault"),
                                            (6, "UsageFault"), (7, "SecureFault"), (15, "SysTick"), (16, "IRQ 0"),
                                            (59, "IRQ 43")])
def test_exception_names_from_ipsr(ipsr, name) -> None:
    assert exception_name(ipsr) == name


@pytest.mark.parametrize(("value", "valid", "psp", "secure", "extra"), [
    (0xFFFFFFF9, True, False, True, 0),   # what QEMU's an505 stacks on: secure, thread mode, main stack
    (0xFFFFFFFD, True, True, True, 0),    # thread mode on the process stack
    (0xFFFFFFBC, True, True, False, 0),   # non-secure, process stack (bit 6 clear)
    (0xFFFFFFD9, True, False, True, 40),  # DCRS (bit 5) clear: additional state context below the frame
    (0x10000321, False, False, False, 0),  # an ordinary return address is no EXC_RETURN
])
def test_exc_return_says_where_the_frame_is(value, valid, psp, secure, extra) -> None:
    exc = ExcReturn(value)
    assert (exc.valid, exc.on_psp, exc.secure_stack, exc.extra_context_bytes) == (valid, psp, secure, extra)
