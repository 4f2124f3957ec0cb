"""The lab bench: an i.MX RT700 EVK on its MCU-Link, driven through pyOCD and GDB/MI.

The board composes the shared pieces in the order the bench needs:
lock the probe (one board, one user) -> open the serial console (before anything resets the
target, so no line is lost) -> pyOCD program + reset-and-halt -> `pyocd gdbserver` -> the same
run-configuration handshake and GDB/MI readout the QEMU board uses (hil/target/run_config.py,
hil/target/capture.py): one image runs whatever iteration count the run asks for. Each step is timed into
`RunCapture.steps_s`; `close()` undoes them in reverse on every path.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from pathlib import Path

from hil.boards.base import RunCapture, RunPlan
from hil.config.board_config import BoardConfig
from hil.drift.readout import DEBUG_FILE, read_out_debug_buffer
from hil.base.errors import BoardConfigError, HilError, TargetError
from hil.config.options import OVERRIDES
from hil.base.commands import RT700_IMAGE
from hil.base.progress import Progress
from hil.probe.gdbserver import PyocdGdbServer, end_stale_gdbservers
from hil.probe.lock import ProbeLock
from hil.probe.pyocd_flash import FlashReport, ProbeSettings, flash_image, is_remote, resolve_probe_id
from hil.target.capture import RunContext
from hil.target.etdump_stream import read_out
from hil.target.forensics import FaultWatch
from hil.target.gdbmi import GdbMiSession
from hil.target.run_config import run_planned
from hil.target.serial_reader import SerialReader
from hil.target.stack_mark import read_stack_mark
from hil.target.tensor_io import read_outputs
from hil.base.steps import StepTimer

LOG = logging.getLogger(__name__)

# Override name (`--hil-NAME` in pytest, `--NAME` in the CLI) -> the board-file key it overrides. The table itself lives
# once in hil/config/options.py (shared by the CLI and the pytest plugin); this is its RT700 view, e.g.
# probe -> pyocd.probe_id, port -> serial.url, target, pack, gdb, breakpoint, result_expr, elf (not the QEMU-only
# firmware -> qemu.firmware).
RT700_OVERRIDES: dict[str, str] = {opt.name.replace("-", "_"): opt.key for opt in OVERRIDES
                                   if not opt.key.startswith("qemu.")}

MCULINK_HWGREP = "hwgrep://1FC9:0143"
DONE_LINE = "Program complete, exiting."
# How an image without the run-configuration handshake gets it.
REBUILD_HINT = f"`{RT700_IMAGE} --model MODEL --out DIR` (its image has the handshake, firmware/common/hil_result.c)"


def serial_url_for(cfg: BoardConfig, probe_id: str) -> str:
    """The configured console URL, or the VCOM of exactly this probe (its USB serial number is the probe id)."""
    url = str(cfg.get("serial.url", "") or "")
    if not url and is_remote(probe_id):
        raise BoardConfigError(f"board '{cfg.name}': probe {probe_id} is on another host, so its VCOM is too: "
                               "pass the console as --port rfc2217://HOST:PORT (ser2net there), or use --hil-place")
    return url or f"{MCULINK_HWGREP} SER={probe_id}"


class Rt700Board:
    """Board protocol implementation for the RT700 lab bench (see the module docstring)."""

    name = "rt700"

    def __init__(self, cfg: BoardConfig, workdir: Path, progress: Progress | None = None) -> None:
        self.cfg = cfg
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.settings = ProbeSettings.from_config(cfg)  # bad target/pack settings fail here, not mid-run
        self.serial_log = self.workdir / "serial.log"
        self.timer = StepTimer(progress=progress)
        self.notes: list[str] = []
        self.probe_id: str | None = None
        self.flash_report: FlashReport | None = None
        self.flash_record: dict[str, str] | None = None  # the manifest's `flash`: programmed or skipped, and why
        self.image: Path | None = None
        self._lock: ProbeLock | None = None
        self._serial: SerialReader | None = None
        self._gdbserver: PyocdGdbServer | None = None
        self._gdb: GdbMiSession | None = None

    # -- steps -----------------------------------------------------------------------------

    @property
    def steps_s(self) -> dict[str, float]:
        """How long each of the board's own steps took (hil.base.steps), kept even for a step that failed."""
        return self.timer.seconds

    def _take_probe(self) -> None:
        """Resolve the probe id and lock it; the lock is per probe, so two boards on one host run side by side."""
        if self._lock is not None:
            return
        with self.timer.step("lock_probe", "find and lock the debug probe"):
            self._lock_probe()

    def _lock_probe(self) -> None:
        self.probe_id = resolve_probe_id(self.cfg)
        # From here on every step (flash, gdbserver, console) uses exactly the probe we locked.
        self.cfg = self.cfg.with_overrides({"pyocd.probe_id": self.probe_id})
        lock = ProbeLock(self.probe_id, timeout=float(self.cfg.get("pyocd.lock_timeout_s", 600)))
        lock.acquire()
        self._lock = lock
        if lock.takeover is not None:
            self.notes.append(f"took over a stale lock on probe {self.probe_id} left by {lock.takeover.describe()}")
        # Holding the lock, no live job runs a server for this probe: any left is a dead job's, holding the probe.
        self.notes.extend(end_stale_gdbservers(self.probe_id))

    def _open_serial(self) -> None:
        if self._serial is not None:
            return
        assert self.probe_id is not None
        with self.timer.step("open_serial", "open the board's console"):
            self._serial = self._console()

    def _console(self) -> SerialReader:
        assert self.probe_id is not None
        return SerialReader(
            serial_url_for(self.cfg, self.probe_id),
            self.serial_log,
            baudrate=int(self.cfg.get("serial.baudrate", 115200)),
            open_timeout=float(self.cfg.get("serial.open_timeout_s", 10)),
            reconnect=True,
            reconnect_timeout=float(self.cfg.get("serial.reconnect_timeout_s", 30)),
            reconnect_delay=float(self.cfg.get("serial.reconnect_delay_s", 0.25)),
            name=f"{self.name} console",
        ).start()

    # -- Board protocol --------------------------------------------------------------------

    def flash(self, image: Path, progress: Callable[[float], None] | None = None, *, force: bool = False) -> None:
        """Lock, open the console, then program `image` and leave the core halted at reset.

        The flash is read back first and programming skipped when it holds `image` already, unless `force`
        (hil.probe.flash_check); `flash_record` says which. `progress` is handed to pyOCD's FileProgrammer,
        which reports the fraction programmed."""
        self._take_probe()
        self._open_serial()
        try:
            with self.timer.step("flash", f"program {Path(image).name} with pyOCD") as advance:
                report = flash_image(self.cfg, Path(image), progress=_both(progress, advance), force=force)
        except HilError as exc:
            self.flash_report = getattr(exc, "flash_report", None)
            raise
        self.flash_report = report
        self.flash_record = {"done": report.done, "why": report.why}
        if report.retried:
            self.notes.append(f"flash needed {report.attempts} attempts: {'; '.join(report.errors)}")
        self.image = Path(image)

    def attach(self) -> tuple[GdbMiSession, SerialReader]:
        """Start `pyocd gdbserver`, connect GDB and reset-halt the flashed target; returns GDB and the console.

        `run()` starts with it; the `hil_board` fixture calls it to drive the target step by step."""
        if self.image is None or self._serial is None:
            raise TargetError(f"board '{self.cfg.name}': attach() before flash(): nothing is on the target")
        self._close_parts("_gdb", "_gdbserver")
        with self.timer.step("start_gdbserver", "start pyocd gdbserver"):
            self._gdbserver = self._start_gdbserver()
        with self.timer.step("connect_gdb", "connect gdb and reset-halt the target"):
            self._gdb = GdbMiSession(self.cfg.gdb, self.image, self.workdir / "gdb-mi.log", name=f"{self.name} gdb")
            self._gdb.connect("127.0.0.1", self._gdbserver.port, timeout=self.settings.connect_timeout_s)
            # pyOCD's monitor command; the halt keeps the firmware still until the breakpoint is set.
            self._gdb.reset(monitor="reset halt")
        return self._gdb, self._serial

    def _start_gdbserver(self) -> PyocdGdbServer:
        return PyocdGdbServer(
            probe_id=str(self.probe_id),
            target=self.settings.target,
            pack=self.settings.pack,
            frequency_hz=self.settings.frequency_hz,
            log_path=self.workdir / "gdbserver.log",
        ).start(timeout=float(self.cfg.get("pyocd.gdbserver_timeout_s", 30)))

    def run(self, timeout: float, plan: RunPlan) -> RunCapture:
        """Reset under GDB, configure `plan`, run to the ETDump-ready breakpoint, dump the ETDump, let the firmware finish."""
        if self.image is None or self._serial is None:
            raise TargetError(f"board '{self.cfg.name}': run() before flash(): nothing is on the target")
        deadline = time.monotonic() + timeout
        serial = self._serial
        start = len(serial.text)  # a streamed ETDump's frames come after this (this boot's lines)
        try:
            self.attach()
            assert self._gdb is not None

            ctx = RunContext(self.cfg.name, self.cfg.breakpoint, serial, self._gdb.transcript_path, self.image,
                             faults=FaultWatch(self.cfg.fault_handlers), fault_path=self.workdir / "fault.json")
            with self.timer.step("run_to_breakpoint", f"run {plan.describe()} to {self.cfg.breakpoint}"):
                # At least a second: a slow gdbserver start must not leave the target no time at all.
                run_planned(self._gdb, ctx, plan, max(deadline, time.monotonic() + 1.0), rebuild=REBUILD_HINT)
            with self.timer.step("read_etdump", "read the ETDump out of the target's RAM"):
                debug = None
                if plan.debug_outputs:  # its console line comes first, so it is read first
                    debug = read_out_debug_buffer(self._gdb, ctx, self.cfg.ram_regions, self.workdir / DEBUG_FILE)
                result, etdump, check = read_out(self._gdb, ctx, plan.stream, self.cfg.result_expr,
                                                 self.cfg.ram_regions, self.workdir / "trace.etdump", start,
                                                 timeout=max(1.0, deadline - time.monotonic()))
                outputs = read_outputs(self._gdb, ctx, self.cfg.ram_regions) if plan.inputs is not None else None
                stack = read_stack_mark(self._gdb, self.cfg.ram_regions).to_dict()
            with self.timer.step("finish", "let the firmware finish"):
                self._gdb.command("-exec-continue")
                try:
                    serial.expect(re.escape(DONE_LINE), timeout=max(1.0, min(30.0, deadline - time.monotonic())))
                except TargetError as exc:
                    # The ETDump is already on disk; a firmware that never prints the last line is noted, not fatal.
                    self.notes.append(f"firmware did not print '{DONE_LINE}' after the dump: {exc}")
        finally:
            # The debug server holds the probe's USB interface: give it back as soon as the run ends.
            self._close_parts("_gdb", "_gdbserver")
        return RunCapture(
            serial_log=self.serial_log,
            console=serial.text,
            etdump=etdump,
            result_addr=result.address,
            steps_s=dict(self.steps_s),
            crc32=check,
            outputs=outputs,
            exit_code=None,  # a bare-metal board has no exit status
            notes=list(self.notes),
            debug_buffer=debug,
            stack=stack,
        )

    def _close_parts(self, *attrs: str) -> None:
        """Close the named parts in order, each even when an earlier one fails."""
        errors: list[str] = []
        for attr in attrs:
            part = getattr(self, attr)
            setattr(self, attr, None)
            if part is None:
                continue
            try:
                part.release() if isinstance(part, ProbeLock) else part.close()
            except (HilError, OSError) as exc:
                errors.append(f"{attr.strip('_')}: {exc}")
        if errors:
            LOG.warning("board '%s': errors while closing: %s", self.cfg.name, "; ".join(errors))

    def close(self) -> None:
        """gdb, gdbserver, console, lock, in that order; safe to call twice."""
        self._close_parts("_gdb", "_gdbserver", "_serial", "_lock")

    def __enter__(self) -> "Rt700Board":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _both(first: Callable[[float], None] | None, second: Callable[[float], None]) -> Callable[[float], None]:
    """The flash fraction to the caller's callback and to the step's own progress."""
    def both(fraction: float) -> None:
        if first is not None:
            first(fraction)
        second(fraction)
    return both
