"""The boards-free board: QEMU mps2-an505 (a Cortex-M33) running the replay image.

It travels the same road as the RT700: serial capture before anything runs, GDB/MI flash
(`-target-download`), reset, the run-configuration handshake at `hil_config_ready`, breakpoint at
`hil_etdump_ready`, dump of `result.buf/size`, then the target runs to its end: the debugger stops it on
entry to `semihost_exit` and reads its exit status (QEMU serves no semihosting: hil.target.guest_exit).
With a keeper (the pytest session's, hil.boards.qemu_keep) QEMU is then kept, halted, for the next run of
the same image; without one it is stopped.
Files in `workdir`: serial.log, mi.log (GDB transcript), qemu.log, trace.etdump. With a keeper, QEMU's
own log is a file of the keeper's (it outlives the run) and `workdir`'s qemu.log is written by `close()`:
the bytes QEMU wrote during this run, so no file of a run folder changes after its run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from hil.boards.base import RunCapture, RunPlan
from hil.config.board_config import BoardConfig
from hil.drift.readout import DEBUG_FILE, read_out_debug_buffer
from hil.base.errors import BoardConfigError, TargetError, TargetFault, TimeoutExpired
from hil.base.progress import Progress
from hil.target.capture import RunContext, raise_if_fault
from hil.target.etdump_stream import read_out
from hil.target.forensics import FaultWatch
from hil.target.gdbmi import GdbMiSession
from hil.target.guest_exit import EXIT_FUNCTION, ExitWatch
from hil.target.ports import LOOPBACK
from hil.target.qemu import QemuProcess, pty_opened_by_other
from hil.target.qemu_fate import blame_qemu_first, uart_held_by_other, uart_peer
from hil.target.run_config import run_planned
from hil.target.serial_reader import SerialReader
from hil.target.stack_mark import read_stack_mark
from hil.target.tensor_io import read_outputs
from hil.base.steps import StepTimer
from hil.base.entry_check import file_sum
from hil.boards.qemu_keep import KeptQemu, LogPart, QemuKeeper

END_LINE = "Program complete, exiting."
# Seconds QEMU's UART socket gets to show up as connected in `info chardev`.
SERIAL_ATTACH_S = 5.0
# Seconds a failure waits for QEMU's exit status when QEMU may be dying (only on the way to an error).
QEMU_REAP_S = 0.5
# How an image without the run-configuration handshake gets it (the harness builds the replay image).
REBUILD_HINT = "the harness builds QEMU replay images itself: hil.firmware.qemu_image.build_qemu_image(..., runs=N)"


class QemuBoard:
    """QEMU as a board: `flash()` starts it halted and downloads the ELF; `run()` captures the ETDump."""

    def __init__(self, cfg: BoardConfig, workdir: Path, progress: Progress | None = None,
                 keeper: QemuKeeper | None = None) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.serial_log = self.workdir / "serial.log"
        self.mi_log = self.workdir / "mi.log"
        self.qemu_log = self.workdir / "qemu.log"
        self.etdump_path = self.workdir / "trace.etdump"
        self.timer = StepTimer(progress=progress)
        self.image: Path | None = None
        self._qemu: QemuProcess | None = None
        self._serial: SerialReader | None = None
        self._gdb: GdbMiSession | None = None
        # The session's keeper of QEMU processes (the pytest plugin's), None for one run per process.
        self.keeper = keeper
        self.flash_record: dict[str, str] | None = None  # the manifest's `flash`: downloaded or skipped, and why
        self._sha256 = ""
        self._kept_runs = 0  # runs the attached QEMU served before this one
        self._parked = False  # the run ended cleanly, halted at EXIT_FUNCTION: QEMU can be kept
        # With a keeper: QEMU's whole log (the keeper's file) and where this run's part of it starts.
        self._log_part: LogPart | None = None

    # -- the Board protocol ----------------------------------------------------------------

    def flash(self, image: Path, progress: Callable[[float], None] | None = None, *, force: bool = False) -> None:
        """Start QEMU halted, attach the console and GDB, and download `image`; the CPU stays halted.

        With a keeper (hil.boards.qemu_keep), a kept QEMU that holds `image` (same sha256) is attached
        to instead, unless `force`: no new process, no download; run() resets the core.
        GDB's download into QEMU takes well under a second, so `progress` only hears "done"."""
        image = Path(image)
        if not image.is_file():
            raise TargetError(f"board '{self.name}': image not found: {image}")
        if self._qemu is not None:
            self.close()
        self.timer.seconds.clear()
        self._sha256, self._kept_runs = file_sum(image).sha256, 0
        kept = self.keeper.take(self.cfg, self._sha256) if self.keeper is not None else None
        if kept is not None and force:
            kept.close()
            kept = None
        if kept is not None:
            self._attach_kept(kept, image)
            if progress is not None:
                progress(1.0)
            return
        self.flash_record = {"done": "downloaded", "why": "forced (--force-flash)" if force else (
            "a new QEMU (no session keeps one)" if self.keeper is None else
            f"a new QEMU: none kept holds sha256 {self._sha256[:16]} of {image.name}")}
        log = self.qemu_log
        if self.keeper is not None:  # it may outlive this run: its log too
            log = self.keeper.new_log()
            self._log_part = LogPart(log, 0)
            self.flash_record["qemu_log"] = str(log)
        try:
            with self._step("connect", f"start QEMU ({self.cfg.require('qemu.machine')}) and attach gdb"):
                self._qemu = QemuProcess(
                    str(self.cfg.get("qemu.executable", "qemu-system-arm")),
                    str(self.cfg.require("qemu.machine")),
                    self.cfg.get("qemu.cpu"),
                    log,
                    serial_pty=bool(self.cfg.get("qemu.serial_pty")),
                    icount_shift=icount_shift(self.cfg),
                ).launch()
                # gdb loads the ELF while QEMU boots: the two starts overlap (~0.3 s each).
                self._gdb = GdbMiSession(self.cfg.gdb, image, self.mi_log)
                self._qemu.ensure_ready()
                # The console is open before a single instruction runs (-S): no line is lost.
                self._serial = SerialReader(self._console_url(), self.serial_log, name=f"{self.name} console").start()
                self._gdb.connect(LOOPBACK, self._qemu.gdb_port)
                self._wait_serial_attached()
            with self._step("flash", f"download {image.name}"):
                self._gdb.download()
            if progress is not None:
                progress(1.0)
            self.image = image
        except TargetError as exc:  # QEMU's death first: gdb only sees its stub go away
            error = blame_qemu_first(exc, self._qemu, self.name, QEMU_REAP_S)
            self.close()
            raise error from exc.__cause__
        except BaseException:
            self.close()
            raise

    def _attach_kept(self, kept: KeptQemu, image: Path) -> None:
        """A new gdb and console, in this run's folder, on the kept QEMU still halted after its last run."""
        self._qemu, self._serial, self._kept_runs = kept.qemu, kept.serial, kept.runs
        log = kept.qemu.log_path
        self._log_part = LogPart.from_now(log)
        try:
            with self._step("connect", "attach gdb to the kept QEMU"):
                kept.serial.log_to(self.serial_log)
                self._gdb = GdbMiSession(self.cfg.gdb, image, self.mi_log)
                self._gdb.connect(LOOPBACK, kept.qemu.gdb_port)
        except BaseException:
            self.close()
            raise
        self.image = image
        self.flash_record = {"done": "skipped", "why": f"{kept.describe()} (log: {log}); "
                                                       "the core is reset instead of a new QEMU and download",
                             "qemu_log": str(log)}

    def attach(self) -> tuple[GdbMiSession, SerialReader]:
        """The debugger and console of the flashed target, reset and halted: for callers that drive
        the target step by step (the `hil_board` fixture) instead of through `run()`."""
        if self._gdb is None or self._serial is None or self.image is None:
            raise TargetError(f"board '{self.name}': attach() before flash()")
        self._gdb.reset(str(self.cfg.get("qemu.reset_monitor", "system_reset")))
        self._watch_exit(self._gdb)
        return self._gdb, self._serial

    def run(self, timeout: float, plan: RunPlan) -> RunCapture:
        """Reset, configure `plan`, run to the breakpoint, dump the ETDump, let the image finish; all within `timeout` s."""
        gdb, serial, qemu = self._gdb, self._serial, self._qemu
        if gdb is None or serial is None or qemu is None or self.image is None:
            raise TargetError(f"board '{self.name}': run() before flash()")
        if not qemu.alive:
            raise TargetError(f"board '{self.name}': QEMU is gone (a run ends it); flash() again before run()")
        deadline = time.monotonic() + timeout
        self._parked = False
        ctx = RunContext(self.name, self.cfg.breakpoint, serial, self.mi_log, self.image,
                         faults=FaultWatch(self.cfg.fault_handlers), fault_path=self.workdir / "fault.json")
        start = len(serial.text)  # a streamed ETDump's frames come after this (this boot's lines)
        try:
            with self._step("run_to_breakpoint", f"run {plan.describe()} to {self.cfg.breakpoint}"):
                gdb.reset(str(self.cfg.get("qemu.reset_monitor", "system_reset")))
                self._watch_exit(gdb)
                run_planned(gdb, ctx, plan, deadline, rebuild=REBUILD_HINT)
            debug = None
            if plan.debug_outputs:  # its console line comes first, so it is read first
                with self._step("read_debug_buffer", "read the debug outputs out of the target's RAM"):
                    debug = read_out_debug_buffer(gdb, ctx, self.cfg.ram_regions, self.workdir / DEBUG_FILE)
            with self._step("read_etdump", "read the ETDump (out of the target's RAM, or from the console's frames)"):
                result, etdump, check = read_out(gdb, ctx, plan.stream, self.cfg.result_expr, self.cfg.ram_regions,
                                                 self.etdump_path, start, timeout=max(1.0, _left(deadline)))
                outputs = read_outputs(gdb, ctx, self.cfg.ram_regions) if plan.inputs is not None else None
                stack = read_stack_mark(gdb, self.cfg.ram_regions).to_dict()
            with self._step("finish", "let the image finish"):
                exit_code = self._finish(ctx, deadline)
        except TargetError as exc:
            raise blame_qemu_first(exc, qemu, self.name, QEMU_REAP_S) from exc.__cause__
        return RunCapture(
            serial_log=self.serial_log,
            console=serial.text,
            etdump=etdump,
            result_addr=result.address,
            steps_s=dict(self.steps_s),
            crc32=check,
            outputs=outputs,
            exit_code=exit_code,
            debug_buffer=debug,
            stack=stack,
        )

    def close(self) -> None:
        """Stop gdb, the console reader and QEMU (or hand QEMU to the keeper), whatever state they are in, then
        write this run's part of a kept log into qemu.log; safe to call twice."""
        try:
            self._end_target()
        finally:
            part, self._log_part = self._log_part, None
            if part is not None:
                part.save(self.qemu_log, self.name)

    def _end_target(self) -> None:
        gdb, serial, qemu = self._gdb, self._serial, self._qemu
        self._gdb = self._serial = self._qemu = None
        parked, self._parked = self._parked, False
        keep = parked and self.keeper is not None and qemu is not None and qemu.alive
        try:
            if gdb is not None:
                # Leave the stub without detaching: a detach resumes QEMU's CPU, and an image halted at its exit
                # would run into the semihosting trap QEMU does not serve (a HardFault on the console). Only an
                # image halted there is asked: a run cut short (a signal, a timeout) may have gdb busy, and its
                # QEMU is stopped anyway.
                disconnected = parked and qemu is not None and qemu.alive and _disconnected(gdb)
                keep = keep and disconnected
                gdb.close()
        finally:
            if keep and serial is not None and qemu is not None and self._give_back(qemu, serial):
                return
            try:
                if serial is not None:
                    serial.close()
            finally:
                if qemu is not None:
                    qemu.close()

    def _give_back(self, qemu: QemuProcess, serial: SerialReader) -> bool:
        """Hand the QEMU halted after a clean run, console attached, to the keeper for the image's next run."""
        assert self.keeper is not None and self.image is not None
        return self.keeper.keep(self.cfg, KeptQemu(qemu, serial, self._sha256, self.image, self._kept_runs + 1))

    def __enter__(self) -> "QemuBoard":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- steps -----------------------------------------------------------------------------

    @property
    def steps_s(self) -> dict[str, float]:
        """How long each of the board's own steps took (hil.base.steps), kept even for a step that failed."""
        return self.timer.seconds

    @contextlib.contextmanager
    def _step(self, name: str, detail: str) -> Iterator[None]:
        with self.timer.step(name, detail):
            yield

    def _console_url(self) -> str:
        """QEMU's UART socket; or, with `[qemu].serial_pty = LINK`, the console that serves LINK.

        In a lab, ser2net serves the path LINK like a board's serial port (a labgrid place exports it):
        the board points LINK at this QEMU's pty and reads the place's console (`serial.url`).
        """
        assert self._qemu is not None
        link = self.cfg.get("qemu.serial_pty")
        if not link:
            return f"socket://{LOOPBACK}:{self._qemu.serial_port}"
        url = self.cfg.get("serial.url")
        if not url:
            raise TargetError(f"board '{self.name}': [qemu].serial_pty = {link!r} needs the console serving it "
                              "(serial.url: --hil-place NAME, or --port rfc2217://HOST:PORT)")
        pty = self._qemu.pty_path
        assert pty is not None  # ensure_ready() waited for it
        tmp = Path(f"{link}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(pty)
        os.replace(tmp, link)  # atomic: the server never sees the link missing
        return str(url)

    def _serial_attached(self) -> tuple[bool, str]:
        """Whether the console's reader is attached to QEMU's UART, and what was looked at."""
        assert self._gdb is not None and self._qemu is not None
        pty = self._qemu.pty_path if self._qemu.serial_pty else None
        if pty is not None:
            qemu_pid = self._qemu.process.pid if self._qemu.process else None
            return pty_opened_by_other(pty, qemu_pid), f"no reader has {pty} open"
        info = self._gdb.console("monitor info chardev")
        peer, ours = uart_peer(info), self._serial.local_port() if self._serial is not None else None
        if peer is not None and ours is not None and peer != ours:
            raise uart_held_by_other(self.name, self._qemu.serial_port, peer, self.qemu_log)
        return any(line.startswith("serial0:") and "<->" in line for line in info.splitlines()), (
            f"info chardev: {info.strip()!r}")

    def _wait_serial_attached(self) -> None:
        """Make sure our console reader is attached before the CPU runs.

        QEMU drops UART bytes while its chardev has no client; the kernel completes our TCP
        connect before QEMU's main loop accepts it, so ask QEMU itself (`info chardev`). With a pty,
        the reader (ser2net) must hold the pty open.
        """
        deadline = time.monotonic() + SERIAL_ATTACH_S
        while True:
            attached, info = self._serial_attached()
            if attached:
                return
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"board '{self.name}': QEMU did not attach the console within {SERIAL_ATTACH_S:g} s"
                    f" ({info}; log: {self.qemu_log})"
                )
            time.sleep(0.02)

    def _finish(self, ctx: RunContext, deadline: float) -> int:
        """Let the image run to its exit: the debugger stops it on entry to `semihost_exit` (hil.target.guest_exit),
        its status in r0, after its last line came through. QEMU stays halted there: close() stops it, or the
        keeper keeps it for the image's next run, which resets the core (hil.boards.qemu_keep)."""
        assert self._gdb is not None
        try:
            stop = self._gdb.continue_until_stop(_left(deadline))
            raise_if_fault(self._gdb, ctx, stop)
            if stop.frame_func != EXIT_FUNCTION or stop.exit_code is None:
                raise ctx.failure(f"target stopped again after the breakpoint instead of finishing: {stop.describe()}")
            ctx.serial.expect(END_LINE, _left(deadline))
        except TargetError as exc:
            if str(exc).startswith(f"board '{self.name}'") or isinstance(exc, TargetFault):
                raise
            raise ctx.failure(f"target did not finish after the ETDump was read: {exc}", type(exc)) from exc
        if stop.exit_code != 0:
            raise ctx.failure(f"the image's exit status is {stop.exit_code} ({EXIT_FUNCTION}'s argument)")
        self._parked = True
        return 0

    def _watch_exit(self, gdb: GdbMiSession) -> None:
        """Take the image's exit at `semihost_exit` (QEMU serves no semihosting). An image without it has no
        clean end: its run ends in the fault or the deadline the harness reports."""
        ExitWatch(gdb).arm()


def icount_shift(cfg: BoardConfig) -> int | None:
    """`[qemu].icount_shift`: instruction counting with 2^N ns per instruction (None: QEMU's real-time clock)."""
    value = cfg.get("qemu.icount_shift")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10:
        raise BoardConfigError(f"board '{cfg.name}' ({cfg.source}): qemu.icount_shift must be a whole number "
                               f"from 0 to 10 (2^N ns of virtual time per instruction), not {value!r}")
    return value


def _disconnected(gdb: GdbMiSession) -> bool:
    """`-target-disconnect`: gdb leaves QEMU's stub without a detach (which would resume the CPU)."""
    try:
        gdb.command("-target-disconnect")
    except TargetError:
        return False
    return True


def _left(deadline: float) -> float:
    """Seconds left before `deadline`, never negative (a 0 s wait still checks once)."""
    return max(0.0, deadline - time.monotonic())
