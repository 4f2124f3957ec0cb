"""The MIMXRT798S (core 0) memory map as the bench image uses it, and what the emulation leaves out.

Addresses from NXP's device GCC link script and the image's own (firmware/rt700/link/hil_rt700_flash.ld):
XSPI0 XIP flash at 0x28000000 (the boot header, vectors at 0x28004000, code), on-chip SRAM 0x20000000-0x2077FFFF,
peripherals in 0x40000000-0x5FFFFFFF, the Private Peripheral Bus at 0xE0000000. LPUART0 (LP_FLEXCOMM0) sits at
0x40110000 (non-secure) and 0x50110000 (secure) in the SDK's MIMXRT798S_cm33_core0_COMMON.h. The four functions listed in BRING_UP_SKIPPED spin on status bits
of clock, cache and NPU hardware that a register file cannot answer; the emulation returns from each at once and
records that it did (so the console's `Core/NPU Frequency` line is the reset clock's, 64 MHz, not 324 MHz).
"""

from __future__ import annotations

from dataclasses import dataclass

FLASH_BASE = 0x28000000
FLASH_SIZE = 0x01000000  # 16 MiB of the EVK's octal flash are mapped: the image uses the first 2 MiB + 16 KiB
SRAM_BASE = 0x20000000
SRAM_SIZE = 0x00780000
SRAM_SECURE_ALIAS = 0x30000000  # the same SRAM seen through the secure alias
PERIPH_BASE = 0x40000000
PERIPH_SIZE = 0x20000000
PPB_BASE = 0xE0000000
PPB_SIZE = 0x00100000

LPUART0 = (0x40110000, 0x50110000)  # non-secure and secure addresses of the same LPUART
VECTOR_TABLE = 0x28004000

# Functions that spin on hardware status the emulation does not model (symbols of the SDK and the Neutron
# driver, each checked in the pinned sources): returned from at their first instruction.
BRING_UP_SKIPPED = (
    ("SystemInit", "polls the XCACHE/CACHE64 GO bits (devices/.../MIMXRT798S/system_MIMXRT798S_cm33_core0.c)"),
    ("CLOCK_EnableClock", "polls CLKCTL3 (0x40061010) for the clock to run (devices/.../MIMXRT798S/drivers/fsl_clock.c)"),
    ("BOARD_BootClockHSRUN", "waits for FRO0 to lock (status at 0x40001300) (examples/_boards/mimxrt700evk/.../cm33_core0/clock_config.c)"),
    ("neutronInit", "waits on RSTCTL0 (0x40000020) to release the NPU (libNeutronDriver.a, neutronPrivateFwInit)"),
)

NOT_EMULATED = ("the boot ROM and the XSPI boot header", "the clock tree, PMIC and XSPI bring-up",
                "the eIQ Neutron NPU (CPU-only programs only)", "the device pack's flash algorithm",
                "caches, wait states and real cycles (DWT CYCCNT counts executed instructions)")


@dataclass(frozen=True)
class Region:
    """A range of the map and whether the debugger may write it directly (flash needs the programming port)."""

    name: str
    start: int
    size: int

    def contains(self, address: int, length: int = 1) -> bool:
        return self.start <= address and address + length <= self.start + self.size


FLASH = Region("xspi0_flash", FLASH_BASE, FLASH_SIZE)
SRAM = Region("sram", SRAM_BASE, SRAM_SIZE)
SRAM_ALIAS = Region("sram_secure_alias", SRAM_SECURE_ALIAS, SRAM_SIZE)
PERIPHERALS = Region("peripherals", PERIPH_BASE, PERIPH_SIZE)
