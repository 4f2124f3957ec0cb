"""Crash forensics: when the target faults or hangs, say which exception, where, and why.

A firmware engineer's first questions about a dead run are "which fault, at which address, in which
function and line, called from where"; "breakpoint not reached" answers none of them. The evidence
is fragile: a fault handler that prints, resets or spins overwrites registers and stack, so the
harness catches the fault *before* the handler runs, with a breakpoint on the first instruction of
each handler (`FaultWatch`, names from the board file's `debug.fault_handlers`; CMSIS/MCUXpresso names
by default). DEMCR vector catch would need no symbols, but QEMU's GDB stub does not model it, while
breakpoints on handler symbols work on every stub. At that instruction the core has just stacked the
interrupted context (R0-R3, R12, LR, PC, xPSR) on the stack EXC_RETURN names, and the fault status
registers still describe the fault. A hang (the deadline passes) is interrupted and examined the same
way: where the core is, a backtrace, and the fault registers if it is in fact spinning in a handler.

Everything is read through the GDB/MI session that runs the target, and symbols are gdb's own
(`info symbol`, `info line *ADDR`, `-stack-list-frames`), so the report holds for any ELF with debug
information. The decoding of the registers lives in hil.target.fault_registers.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base.atomic import write_json
from hil.base.defaults import DEFAULT_FAULT_HANDLERS  # noqa: F401  (re-exported: callers import it here)
from hil.base.errors import TargetError
from hil.target.fault_registers import (
    FAULT_EXCEPTIONS, SAU_SFSR, SCB_CFSR, SCB_FAULT_BLOCK_WORDS, STACKED_FRAME, ExcReturn, FaultCause,
    FaultRegisters, cause_of, exception_name,
)
from hil.target.gdbmi import GdbMiSession, StopEvent
from hil.target.guest_exit import semihosting_call

BACKTRACE_DEPTH = 16
SIGNAL_FRAME = "<signal handler called>"  # how gdb names the exception frame it unwinds through
_INFO_LINE = re.compile(r'Line (\d+) of "([^"]+)"')
# What GCC appends to the symbol of a specialised copy of a function (replay_bus_fault.isra.0): the
# source function is the name before it.
_CLONE_SUFFIX = re.compile(r"\.(?:isra|constprop|part|cold|lto_priv)(?:\.\d+)*$")


@dataclass(frozen=True)
class CodeLocation:
    """An address in the image, with gdb's function and source line for it when it has them."""

    address: int
    function: str | None = None
    file: str | None = None
    line: int | None = None

    def describe(self) -> str:
        """`function (file.c:line)`, as much of it as is known."""
        where = f"{Path(self.file).name}:{self.line}" if self.file and self.line else None
        if self.function:
            return f"{self.function} ({where})" if where else f"{self.function} (0x{self.address:08x}, no line info)"
        return f"0x{self.address:08x} ({where})" if where else f"0x{self.address:08x} (no symbol)"

    def as_dict(self) -> dict[str, Any]:
        return {"address": f"0x{self.address:08x}", "function": self.function, "file": self.file, "line": self.line}


@dataclass
class FaultReport:
    """What the examination found; `to_dict()` is fault.json."""

    kind: str  # "fault" or "hang"
    summary: str  # the first line of the error
    exception: str | None  # from IPSR; None in thread mode
    cause: FaultCause
    location: CodeLocation | None  # the faulting instruction (stacked PC), or where a hung core is
    caller: CodeLocation | None  # the stacked LR (fault) or LR (hang)
    core: dict[str, int]  # pc, lr, sp, xpsr when stopped
    handler: tuple[str, ...] = ()  # the fault handler(s) the debugger stopped at
    registers: FaultRegisters | None = None
    frame: dict[str, int] | None = None  # the stacked R0-R3, R12, LR, PC, xPSR
    frame_stack: str | None = None  # "MSP 0x..." / "PSP 0x..."
    backtrace: list[CodeLocation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def details(self) -> list[str]:
        """The lines after the summary: registers, frame, backtrace, anything that could not be read."""
        hex32 = "0x{:08x}".format
        lines = []
        stopped = f"stopped at {'/'.join(self.handler)}, " if self.handler else ""
        mode = f"exception {self.exception}" if self.exception else "thread mode"
        core = ", ".join(f"{name.upper() if name != 'xpsr' else 'xPSR'} {hex32(value)}" for name, value in self.core.items())
        lines.append(f"{stopped}{mode}; core {core}")
        if self.caller is not None:
            lines.append(f"LR returns to {self.caller.describe()}")
        if self.frame is not None:
            lines.append(f"stacked frame ({self.frame_stack}): "
                         + " ".join(f"{name} {hex32(self.frame[name])}" for name in STACKED_FRAME))
        if self.registers is not None:
            lines.append(" ".join(f"{name} {value}" for name, value in self.registers.as_dict().items() if value))
        if self.backtrace:
            lines.append("backtrace: " + " <- ".join(f"#{n} {loc.describe()}" for n, loc in enumerate(self.backtrace)))
        lines += [f"note: {note}" for note in self.notes]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "et-hil/fault/1",
            "kind": self.kind,
            "summary": self.summary,
            "exception": self.exception,
            "cause": self.cause.kind,
            "cause_words": list(self.cause.words),
            "location": None if self.location is None else self.location.as_dict(),
            "caller": None if self.caller is None else self.caller.as_dict(),
            "handler": list(self.handler),
            "core": {name: f"0x{value:08x}" for name, value in self.core.items()},
            "stacked_frame": None if self.frame is None else {k: f"0x{v:08x}" for k, v in self.frame.items()},
            "stacked_on": self.frame_stack,
            "fault_registers": None if self.registers is None else self.registers.as_dict(),
            "backtrace": [loc.as_dict() for loc in self.backtrace],
            "notes": list(self.notes),
        }


class FaultWatch:
    """Breakpoints on the first instruction of each fault handler the image has.

    `*ADDRESS`, not the name: a breakpoint on a function name lands after its prologue, which may
    already have pushed registers and moved the stack pointer. Handlers sharing one address (weak
    aliases of one default handler) share one breakpoint, which matters on a board with few
    hardware breakpoints. Names the image lacks are skipped and listed in `missing`.
    """

    def __init__(self, handlers: Sequence[str] = DEFAULT_FAULT_HANDLERS) -> None:
        self.handlers = tuple(handlers)
        self.missing: list[str] = []
        self._names: dict[int, tuple[str, ...]] = {}

    def arm(self, gdb: GdbMiSession) -> None:
        by_address: dict[int, list[str]] = {}
        for name in self.handlers:
            try:
                by_address.setdefault(gdb.evaluate_int(f"&{name}"), []).append(name)
            except TargetError:
                self.missing.append(name)
        for address, names in by_address.items():
            self._names[gdb.break_insert(f"*0x{address:x}")] = tuple(names)

    def handler_hit(self, stop: StopEvent) -> tuple[str, ...] | None:
        """The handler names of the breakpoint `stop` hit, or None when it is not one of ours."""
        if stop.reason != "breakpoint-hit" or stop.breakpoint is None:
            return None
        return self._names.get(stop.breakpoint)


def examine_fault(gdb: GdbMiSession, handler: tuple[str, ...]) -> FaultReport:
    """The core stopped at the first instruction of a fault handler: read the fault while it is intact."""
    core = _read_core(gdb)
    exception = exception_name(core["xpsr"] & 0x1FF)
    registers, notes = _read_fault_registers(gdb)
    cause = cause_of(exception, registers)
    frame, frame_stack = _stacked_frame(gdb, core, notes)
    trace = _backtrace(gdb, notes)
    if frame is not None:
        location: CodeLocation | None = locate(gdb, frame["PC"])
        caller: CodeLocation | None = locate(gdb, frame["LR"] & ~1)
    else:
        location, caller = _interrupted_frame(trace), None
    report = FaultReport("fault", "", exception, cause, location, caller, core, handler, registers, frame,
                         frame_stack, trace, notes)
    report.summary = _fault_summary(report)
    call = semihosting_call(gdb, frame) if frame is not None else None
    if call is not None:  # the fault is the trap QEMU no longer serves: say what the image tried first
        report.summary = f"{call}; {report.summary}"
    return report


def examine_hang(gdb: GdbMiSession, what: str) -> FaultReport:
    """The core was halted after a deadline (`what` says which): where it is, and a fault if it sits in a handler."""
    core = _read_core(gdb)
    ipsr = core["xpsr"] & 0x1FF
    exception = exception_name(ipsr)
    notes: list[str] = []
    trace = _backtrace(gdb, notes)
    here = locate(gdb, core["pc"])
    if ipsr in FAULT_EXCEPTIONS:  # a fault the watch did not catch (no handler symbol): the handler spins
        registers, notes_regs = _read_fault_registers(gdb)
        notes += notes_regs
        frame, frame_stack, location, caller = _frame_of_a_spinning_handler(gdb, core, notes)
        report = FaultReport("fault", "", exception, cause_of(exception, registers),
                             location or _interrupted_frame(trace) or here, caller, core, (), registers, frame,
                             frame_stack, trace, notes)
        report.summary = f"{_fault_summary(report)}; found when {what}"
        return report
    caller = None if ExcReturn(core["lr"]).valid else locate(gdb, core["lr"] & ~1)
    mode = f" (in exception {exception})" if exception else ""
    return FaultReport("hang", f"Hang: {what}; the core is in {here.describe()}{mode}", exception,
                       FaultCause(None, ()), here, caller, core, (), None, None, None, trace, notes)


def _frame_of_a_spinning_handler(
    gdb: GdbMiSession, core: dict[str, int], notes: list[str]
) -> tuple[dict[str, int] | None, str | None, CodeLocation | None, CodeLocation | None]:
    """The stacked frame of a handler found spinning, when it evidently pushed nothing.

    A default handler (`b .`, as in the SDKs' startup code) leaves LR = EXC_RETURN and SP where the
    exception entry left it, so the frame is where it was at entry. A handler that pushed registers
    moved SP; what lies there then is no frame, which shows: the stacked xPSR lacks the Thumb bit or
    the stacked PC is in no function. Only a frame that passes both is used, and the report says so.
    """
    scratch: list[str] = []
    frame, frame_stack = _stacked_frame(gdb, core, scratch)
    if frame is not None and frame["xPSR"] >> 24 & 1:
        location = locate(gdb, frame["PC"])
        if location.function is not None:
            notes.append(f"the core was spinning in the handler: frame read at {frame_stack}, where the exception"
                         " entry left it (LR still holds EXC_RETURN; Thumb bit and PC check out)")
            return frame, frame_stack, location, locate(gdb, frame["LR"] & ~1)
    notes.append("the core was already inside the handler and has moved its stack: the stacked frame is not read")
    return None, None, None, None


def _fault_summary(report: FaultReport) -> str:
    """`BusFault: precise data bus error at 0x58000000, in replay_bus_fault (main.c:68)`."""
    kind = report.cause.kind or report.exception or "Fault"
    escalated = " (escalated to HardFault)" if report.exception == "HardFault" and kind != "HardFault" else ""
    words = " and ".join(report.cause.words) or "no fault status bit set"
    where = report.location.describe() if report.location is not None else "an unknown place"
    return f"{kind}{escalated}: {words}, in {where}"


def locate(gdb: GdbMiSession, address: int) -> CodeLocation:
    """gdb's function and source line for `address` (None for what it does not know)."""
    function = file = line = None
    try:
        symbol = gdb.console(f"info symbol 0x{address:x}").strip()
        if symbol and not symbol.startswith("No symbol"):
            function = _CLONE_SUFFIX.sub("", symbol.split(" in section")[0].split(" + ")[0].strip()) or None
        match = _INFO_LINE.search(gdb.console(f"info line *0x{address:x}"))
        if match:
            line, file = int(match.group(1)), match.group(2)
    except TargetError:
        pass  # a location without names is still a location
    return CodeLocation(address, function, file, line)


def _read_core(gdb: GdbMiSession) -> dict[str, int]:
    """pc, lr, sp, xpsr as 32-bit values (GdbMiSession.register_int: xPSR's flags type, a widened EXC_RETURN)."""
    return {name: gdb.register_int(name) for name in ("pc", "lr", "sp", "xpsr")}


def _read_fault_registers(gdb: GdbMiSession) -> tuple[FaultRegisters | None, list[str]]:
    try:
        cfsr, hfsr, _dfsr, mmfar, bfar = struct.unpack("<5I", gdb.read_memory(SCB_CFSR, 4 * SCB_FAULT_BLOCK_WORDS))
    except TargetError as exc:
        return None, [f"the fault status registers at 0x{SCB_CFSR:08x} could not be read: {exc}"]
    try:
        sfsr, sfar = struct.unpack("<2I", gdb.read_memory(SAU_SFSR, 8))
    except TargetError:
        sfsr = sfar = None  # no Security Extension, or not readable from this state
    return FaultRegisters(cfsr, hfsr, mmfar, bfar, sfsr, sfar), []


def _stacked_frame(gdb: GdbMiSession, core: dict[str, int], notes: list[str]) -> tuple[dict[str, int] | None, str | None]:
    """R0-R3, R12, LR, PC, xPSR as the exception entry stacked them, from the stack EXC_RETURN names."""
    exc_return = ExcReturn(core["lr"])
    if not exc_return.valid:
        notes.append(f"LR 0x{core['lr']:08x} is not an EXC_RETURN value: no stacked frame")
        return None, None
    stack = exc_return.stack_register()
    if exc_return.on_psp:
        security = "_s" if exc_return.secure_stack else "_ns"
        candidates = [f"psp{security}", "psp"]
    else:
        candidates = ["sp"]  # handler mode runs on the main stack: SP is the MSP the frame was pushed to
    pointer = None
    for name in candidates:
        try:
            pointer = gdb.register_int(name)
            break
        except TargetError:
            continue
    if pointer is None:
        notes.append(f"the frame is on the {stack}, which this debugger does not expose ($psp): not read")
        return None, None
    pointer += exc_return.extra_context_bytes
    try:
        words = struct.unpack("<8I", gdb.read_memory(pointer, 32))
    except TargetError as exc:
        notes.append(f"the stacked frame at {stack} 0x{pointer:08x} could not be read: {exc}")
        return None, None
    return dict(zip(STACKED_FRAME, words)), f"{stack} 0x{pointer:08x}"


def _backtrace(gdb: GdbMiSession, notes: list[str]) -> list[CodeLocation]:
    try:
        result = gdb.command(f"-stack-list-frames 0 {BACKTRACE_DEPTH - 1}")
    except TargetError as exc:
        notes.append(f"no backtrace: {exc}")
        return []
    frames = (result.get("payload") or {}).get("stack") or []
    trace = []
    for frame in frames:
        frame = frame.get("frame", frame) if isinstance(frame, dict) else {}
        try:
            address = int(str(frame.get("addr", "0")), 16)
        except ValueError:
            address = 0
        line = frame.get("line")
        trace.append(CodeLocation(address, frame.get("func"), frame.get("fullname") or frame.get("file"),
                                  int(line) if str(line or "").isdigit() else None))
    return trace


def _interrupted_frame(trace: list[CodeLocation]) -> CodeLocation | None:
    """The frame gdb unwound to through the exception (the one after `<signal handler called>`)."""
    for index, frame in enumerate(trace[:-1]):
        if frame.function == SIGNAL_FRAME:
            return trace[index + 1]
    return None


def write_fault_json(path: Path, report: FaultReport, **context: Any) -> Path:
    """fault.json: the report plus `context` (board, image), written whole."""
    write_json(path, {**report.to_dict(), **context})
    return path
