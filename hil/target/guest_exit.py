"""The image's exit, taken by the debugger, and any other semihosting call named: QEMU serves none of them.

Why: with `-semihosting-config enable=on,target=native` QEMU serves every semihosting call of the guest on
the host: SYS_SYSTEM (0x12) runs a host shell command, SYS_OPEN, SYS_REMOVE and SYS_RENAME reach any host file
the harness may touch. An image given with `--elf`, or code run inside the runtime image by a crafted `.pte`,
is not trusted, and QEMU cannot serve one call (the exit) without all the others. So QEMU runs with
semihosting off (hil.target.qemu), and the one call the harness needs, the exit with a status
(firmware/qemu/semihost.c, SYS_EXIT_EXTENDED), is taken by the debugger the harness always has attached: a
breakpoint on the first instruction of `semihost_exit` reads the status from r0 before its `bkpt 0xab` runs,
and the stop is reported as the target's exit with that status. Any other `bkpt 0xab` is a breakpoint
instruction with no debug monitor: the core escalates it to HardFault, the fault watch stops there, and
`semihosting_call()` names the call (r0 of the stacked frame) so the one line says what the image tried.

The call numbers are Arm's semihosting specification's, as QEMU's target/arm/arm-semi.c defines them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hil.base.errors import TargetError
from hil.target.gdbmi import GdbMiSession
from hil.target.mi_records import StopEvent

# Where the harness's QEMU images end (firmware/qemu/semihost.c).
EXIT_FUNCTION = "semihost_exit"
# `bkpt 0xab`, the AArch32 Thumb semihosting trap, as the two bytes in memory (little-endian 0xbeab).
THUMB_SEMIHOSTING_TRAP = b"\xab\xbe"
SEMIHOSTING_CALLS = {
    0x01: "SYS_OPEN", 0x02: "SYS_CLOSE", 0x03: "SYS_WRITEC", 0x04: "SYS_WRITE0", 0x05: "SYS_WRITE",
    0x06: "SYS_READ", 0x07: "SYS_READC", 0x08: "SYS_ISERROR", 0x09: "SYS_ISTTY", 0x0A: "SYS_SEEK",
    0x0C: "SYS_FLEN", 0x0D: "SYS_TMPNAM", 0x0E: "SYS_REMOVE", 0x0F: "SYS_RENAME", 0x10: "SYS_CLOCK",
    0x11: "SYS_TIME", 0x12: "SYS_SYSTEM", 0x13: "SYS_ERRNO", 0x15: "SYS_GET_CMDLINE", 0x16: "SYS_HEAPINFO",
    0x18: "SYS_EXIT", 0x20: "SYS_EXIT_EXTENDED", 0x30: "SYS_ELAPSED", 0x31: "SYS_TICKFREQ",
}


@dataclass
class ExitWatch:
    """A breakpoint on `EXIT_FUNCTION`'s first instruction; a stop there reads as the target's exit (status r0)."""

    gdb: GdbMiSession
    number: int | None = None

    def arm(self) -> bool:
        """Set the breakpoint and translate the stops that hit it; False for an image without the function."""
        try:
            self.number = self.gdb.break_insert(f"*{EXIT_FUNCTION}")
        except TargetError:
            return False
        self.gdb.stop_filter = self.translate
        return True

    def translate(self, stop: StopEvent) -> StopEvent:
        """`stop` itself, or for a stop at the exit: "exited" with r0 as the exit code; QEMU stays halted."""
        if stop.reason != "breakpoint-hit" or stop.breakpoint is None or stop.breakpoint != self.number:
            return stop
        status = self.gdb.evaluate_int("$r0") & 0xFFFFFFFF
        return StopEvent("exited", frame_func=EXIT_FUNCTION, exit_code=status,
                         detail=f"at {EXIT_FUNCTION} (taken by the debugger; QEMU serves no semihosting)")


def semihosting_call(gdb: GdbMiSession, frame: dict[str, int]) -> str | None:
    """What the faulting instruction of a stacked `frame` was, when it is a semihosting trap; else None."""
    try:
        instruction = gdb.read_memory(frame["PC"] & ~1, 2)
    except TargetError:
        return None
    if instruction != THUMB_SEMIHOSTING_TRAP:
        return None
    number = frame["R0"] & 0xFFFFFFFF
    name = SEMIHOSTING_CALLS.get(number, "an unknown call")
    return (f"the image made semihosting call {name} (0x{number:02x}), refused: QEMU runs with semihosting off,"
            " so an image cannot reach the host (the harness takes only the exit, at its breakpoint)")
