"""A tiny bare-metal program for the emulated RT700, written in assembly so each figure a test checks is counted
by hand: vectors at 0x28004000 (where the RT700 image has them), a spinning `SystemInit` the emulator must return
from, "hi\\r\\n" on LPUART0 (secure address 0x50110000), two DWT CYCCNT reads around a loop of known length, then a
store to unmapped 0x70000000 (a precise bus fault) at the label `fault_here`."""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
    .syntax unified
    .cpu cortex-m33
    .thumb
    .section .vectors, "a"
    .word 0x20100000, Reset_Handler + 1, 0, HardFault_Handler + 1
    .text
    .thumb_func
    .global HardFault_Handler
HardFault_Handler:
    b HardFault_Handler
    .thumb_func
    .global SystemInit
SystemInit:
    b SystemInit                    @ spins forever unless the emulator returns from it
    .thumb_func
    .global putc_
putc_:
    ldr r1, =0x50110000
1:  ldr r2, [r1, #0x14]             @ STAT: wait for TDRE (bit 23)
    lsls r2, r2, #8
    bpl 1b
    str r0, [r1, #0x1c]             @ DATA
    bx lr
    .thumb_func
    .global hil_mark
hil_mark:
    nop
    bx lr
    .thumb_func
    .global Reset_Handler
Reset_Handler:
    bl SystemInit
    movs r0, #'h'
    bl putc_
    movs r0, #'i'
    bl putc_
    movs r0, #13
    bl putc_
    movs r0, #10
    bl putc_
    ldr r3, =0xE000EDFC             @ DEMCR.TRCENA
    ldr r2, [r3]
    orr r2, r2, #0x01000000
    str r2, [r3]
    ldr r3, =0xE0001000             @ DWT: CYCCNT = 0, CTRL.CYCCNTENA = 1
    movs r2, #0
    str r2, [r3, #4]
    movs r2, #1
    str r2, [r3]
    ldr r1, [r3, #4]                @ a: 1 instruction ...
    movs r0, #10                    @ ... + 1 ...
2:  subs r0, r0, #1                 @ ... + 10 x (subs, bne) = 22 instructions before b
    bne 2b
    ldr r2, [r3, #4]                @ b
    subs r2, r2, r1
    ldr r0, =0x20000000
    str r2, [r0]                    @ b - a at 0x20000000
    bl hil_mark
    .global fault_here
    ldr r0, =0x70000000
fault_here:
    str r2, [r0]                    @ nothing is mapped at 0x70000000: a precise bus fault
3:  b 3b
    .ltorg
"""
COUNTED = 22  # b - a, counted in the comments above
LINK = "MEMORY { FLASH (rx) : ORIGIN = 0x28004000, LENGTH = 64K }\nSECTIONS { .text : { KEEP(*(.vectors)) *(.text*) } > FLASH }\n"


def build(folder: Path) -> Path:
    """The program's ELF, assembled and linked by the cross toolchain."""
    source, script, elf = folder / "prog.S", folder / "prog.ld", folder / "prog.elf"
    source.write_text(SOURCE)
    script.write_text(LINK)
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-nostdlib", "-T", str(script), "-o", str(elf),
                    str(source), "-Wl,--no-warn-rwx-segments"], check=True, timeout=60)
    return elf


def symbol(elf: Path, name: str) -> int:
    """A symbol's address from binutils' nm (Thumb bit cleared)."""
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True, timeout=30).stdout
    for line in out.splitlines():
        value, _kind, found = line.split()
        if found == name:
            return int(value, 16) & ~1
    raise KeyError(name)
