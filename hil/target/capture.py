"""The board-independent half of a run: reach the "ETDump ready" breakpoint, check the result, dump it.

QEMU and the RT700 differ in how they start, flash and reset; from the breakpoint on they are
the same GDB/MI conversation, so it lives here once. Every failure message names the board,
the breakpoint, the last console lines and where the serial log and GDB transcript are.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hil.config.board_config import MemoryRegion
from hil.base.errors import TargetError, TargetFault, TargetHang, TimeoutExpired
from hil.target.forensics import FaultReport, FaultWatch, examine_fault, examine_hang, write_fault_json
from hil.target.gdbmi import GdbMiSession, StopEvent
from hil.target.serial_reader import SerialReader

# The firmware line protocol: printed once the ETDump is ready (firmware/common/hil_protocol.h,
# HIL_FMT_RESULT_BUF: `Result buf: 0x%x, size: %u, crc32: 0x%x`; older firmware printed no CRC, and
# `%p`, hence `(nil)`). Numbers are bounded to 32 bits' worth of digits: a garbled line is not ours.
RESULT_LINE = re.compile(
    r"Result buf: (0x[0-9a-fA-F]{1,16}|\(nil\)|0), size: (\d{1,20})(?!\d)(?:, crc32: 0x([0-9a-fA-F]{1,8})(?![0-9a-fA-F]))?"
)
# The same line, whole: its end of line seen. A line still arriving matches RESULT_LINE too early
# ("size: 18" of "size: 1832, crc32: ..."), so the console is read for the whole line only.
RESULT_LINE_DONE = re.compile(RESULT_LINE.pattern + r"[^\n]*\n")
# Seconds for the console to catch up with what GDB already sees (UART and socket latency).
CONSOLE_LAG_S = 5.0
# Seconds an interrupt gets when the breakpoint deadline passes.
INTERRUPT_S = 3.0


@dataclass(frozen=True)
class RunContext:
    """What every failure message needs: who failed, where it was headed, where the evidence is."""

    board: str
    breakpoint: str
    serial: SerialReader
    transcript: Path
    image: Path | None = None
    # Breakpoints on the fault handlers (armed by run_planned), and where a fault or hang report goes.
    faults: FaultWatch | None = None
    fault_path: Path | None = None

    def failure(self, what: str, error: type[TargetError] = TargetError) -> TargetError:
        image = f"image {self.image}, " if self.image is not None else ""
        return error(
            f"board '{self.board}': {what} ({image}breakpoint '{self.breakpoint}');"
            f" last console lines:\n{self.serial.describe_tail()}\n"
            f"(serial log: {self.serial.log_path}; GDB transcript: {self.transcript})"
        )

    def forensic_failure(self, report: FaultReport) -> TargetError:
        """A fault or hang: its summary first (`BusFault: ... at 0x..., in f (file.c:line)`), then the
        evidence; the report goes to fault.json as well."""
        written = "not written"
        if self.fault_path is not None:
            try:
                written = str(write_fault_json(self.fault_path, report, board=self.board,
                                               image=None if self.image is None else str(self.image)))
            except OSError as exc:
                written = f"not written: {exc}"
        details = "".join(f"\n  {line}" for line in report.details())
        message = (
            f"{report.summary} [board '{self.board}']{details}\n  last console lines:\n{self.serial.describe_tail()}\n"
            f"(fault report: {written}; serial log: {self.serial.log_path}; GDB transcript: {self.transcript})"
        )
        error = TargetHang if report.kind == "hang" else TargetFault
        return error(message, fault=report.to_dict())


@dataclass(frozen=True)
class EtdumpResult:
    """Where the firmware says its ETDump is (`result.buf`, `result.size`), and the CRC-32 it printed
    for it (None when its `Result buf:` line carries none)."""

    address: int
    size: int
    crc32: int | None = None

    def crc_record(self, etdump: bytes) -> dict[str, Any]:
        """What the manifest says about the CRC check of `etdump`, the bytes read for this result."""
        read = f"0x{zlib.crc32(etdump):08x}"
        if self.crc32 is None:
            return {"checked": False, "read": read, "note": "the firmware printed no CRC-32: check skipped"}
        return {"checked": True, "firmware": f"0x{self.crc32:08x}", "read": read}


def run_to_breakpoint(gdb: GdbMiSession, ctx: RunContext, timeout: float) -> StopEvent:
    """Break at ctx.breakpoint and continue; anything but hitting it within `timeout` s is a TargetError."""
    try:
        number = gdb.break_insert(ctx.breakpoint)
    except TargetError as exc:
        raise TargetError(f"board '{ctx.board}': {exc} (check debug.breakpoint in the board file)") from exc
    return continue_to_breakpoint(gdb, ctx, number, timeout)


def continue_to_breakpoint(gdb: GdbMiSession, ctx: RunContext, number: int, timeout: float) -> StopEvent:
    """Continue until breakpoint `number` (set at ctx.breakpoint) is hit; a timeout interrupts the target."""
    try:
        stop = gdb.continue_until_stop(timeout)
    except TimeoutExpired:
        raise _hang(gdb, ctx, f"breakpoint '{ctx.breakpoint}' not reached within {timeout:.1f} s") from None
    except TargetError as exc:
        raise ctx.failure(f"lost the debugger before the breakpoint: {exc}") from exc
    raise_if_fault(gdb, ctx, stop)
    if stop.reason != "breakpoint-hit" or stop.breakpoint != number:
        if stop.target_gone:
            ctx.serial.wait_ended(CONSOLE_LAG_S / 5)  # let the console's last lines arrive for the message
        raise ctx.failure(f"target stopped before the breakpoint: {stop.describe()}")
    return stop


def raise_if_fault(gdb: GdbMiSession, ctx: RunContext, stop: StopEvent) -> None:
    """When `stop` is at a fault handler's breakpoint: examine the fault and raise it as TargetFault."""
    handler = ctx.faults.handler_hit(stop) if ctx.faults is not None else None
    if handler is None:
        return
    try:
        report = examine_fault(gdb, handler)
    except TargetError as exc:  # the debugger went away mid-examination: say what is known
        raise ctx.failure(f"the target stopped in fault handler {'/'.join(handler)}; examining it failed: {exc}",
                          TargetFault) from exc
    raise ctx.forensic_failure(report)


def _hang(gdb: GdbMiSession, ctx: RunContext, what: str) -> TargetError:
    """Halt a target that ran past its deadline and say where it was (and what fault, if it sits in one)."""
    try:
        stop = gdb.interrupt(INTERRUPT_S)
    except TargetError as exc:
        return ctx.failure(f"{what} (target could not be interrupted: {exc})", TimeoutExpired)
    if ctx.faults is None or stop.target_gone:
        return ctx.failure(f"{what} (target interrupted: {stop.describe()})", TimeoutExpired)
    try:
        report = examine_hang(gdb, what)
    except TargetError as exc:
        return ctx.failure(f"{what} (target interrupted: {stop.describe()}; examining it failed: {exc})",
                           TimeoutExpired)
    return ctx.forensic_failure(report)


def read_result(gdb: GdbMiSession, ctx: RunContext, expr: str, regions: list[MemoryRegion]) -> EtdumpResult:
    """Read `(expr).buf` and `(expr).size`; refuse an empty result or one outside the board's RAM."""
    try:
        address = gdb.evaluate_int(f"({expr}).buf")
        size = gdb.evaluate_int(f"({expr}).size")
    except TargetError as exc:
        raise ctx.failure(f"cannot read the ETDump result '{expr}': {exc} (check debug.result_expr)") from exc
    if size == 0:
        raise ctx.failure(f"'{expr}' reports an empty ETDump (buf 0x{address:08x}, size 0)")
    if not any(region.contains(address, size) for region in regions):
        shown = ", ".join(f"[0x{r.start:08x}, 0x{r.start + r.size:08x})" for r in regions) or "none configured"
        raise ctx.failure(
            f"'{expr}' = [0x{address:08x}, +{size}) lies outside the board's RAM ({shown}); refusing to dump it"
        )
    return EtdumpResult(address, size)


def fetch_etdump(gdb: GdbMiSession, ctx: RunContext, result: EtdumpResult, out_path: Path) -> bytes:
    """Dump the ETDump to `out_path` with `dump binary memory`; the target must still be there after it.

    There is no second way of reading it: with the target gone, gdb reads memory from the ELF file
    instead (an MI read then returned the image's initial bytes, zeros for the buffer), which looks
    like an ETDump to every check but the CRC. A failed dump fails the read-out, and a dump taken
    while the target went away is deleted.
    """
    try:
        gdb.dump_memory(result.address, result.size, out_path)
    except TargetError as exc:
        raise ctx.failure(f"cannot read the ETDump: {exc}") from exc
    try:
        require_target(gdb, ctx, "after the ETDump read-out")
    except TargetError:
        Path(out_path).unlink(missing_ok=True)
        raise
    return Path(out_path).read_bytes()


def require_target(gdb: GdbMiSession, ctx: RunContext, when: str) -> None:
    """The debugger still has the target: its registers read afresh (gdb answers from its cache otherwise)."""
    try:
        gdb.console("maintenance flush register-cache")
        gdb.evaluate("$pc")
    except TargetError as exc:
        raise ctx.failure(f"the target is gone {when}: what the debugger reads now comes from the ELF file,"
                          f" not the target ({exc})") from exc


def check_console_result(ctx: RunContext, result: EtdumpResult, timeout: float = CONSOLE_LAG_S) -> EtdumpResult:
    """The console's `Result buf: 0x..., size: N` must agree with what GDB read; returns `result`
    with the CRC-32 the line printed (None when it printed none)."""
    try:
        match = ctx.serial.expect(RESULT_LINE_DONE, timeout)
    except TargetError as exc:
        raise ctx.failure(f"the console never printed 'Result buf: ..., size: ...': {exc}") from exc
    printed_addr = 0 if match.group(1) == "(nil)" else int(match.group(1), 0)
    printed_size = int(match.group(2))
    if (printed_addr, printed_size) != (result.address, result.size):
        raise ctx.failure(
            f"console says buf 0x{printed_addr:08x}, size {printed_size} but GDB read"
            f" buf 0x{result.address:08x}, size {result.size}"
        )
    return replace(result, crc32=None if match.group(3) is None else int(match.group(3), 16))


def check_crc(ctx: RunContext, result: EtdumpResult, etdump: bytes) -> None:
    """The bytes read must have the CRC-32 the firmware printed for them (zlib.crc32, as hil_crc32.c)."""
    read = zlib.crc32(etdump)
    if result.crc32 is not None and read != result.crc32:
        raise ctx.failure(
            f"ETDump CRC-32 mismatch: the firmware printed crc32 0x{result.crc32:08x} for its {result.size} bytes"
            f" at 0x{result.address:08x}, the {len(etdump)} bytes read through the debugger have 0x{read:08x}"
            " (a garbled or partial read-out)"
        )


def read_out_etdump(
    gdb: GdbMiSession, ctx: RunContext, expr: str, regions: list[MemoryRegion], out_path: Path
) -> tuple[EtdumpResult, bytes]:
    """At the breakpoint: read and check `expr`, dump the bytes to `out_path`, cross-check the console
    and the CRC-32 it printed; the result returned carries that CRC."""
    require_target(gdb, ctx, "at the breakpoint")
    result = read_result(gdb, ctx, expr, regions)
    etdump = fetch_etdump(gdb, ctx, result, out_path)
    result = check_console_result(ctx, result)
    check_crc(ctx, result, etdump)
    return result, etdump
