"""The boards-free board: QEMU mps2-an505 (a Cortex-M33) running the replay image.

It travels the same road as the RT700: serial capture before anything runs, GDB/MI flash
(`-target-download`), reset, the run-configuration handshake at `hil_config_ready`, breakpoint at
`hil_etdump_ready`, dump of `result.buf/size`, then the target runs to its end and QEMU's exit
status is the image's.
Files in `workdir`: serial.log, mi.log (GDB transcript), qemu.log, trace.etdump.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from hil.boards.base import RunCapture, RunPlan
from hil.config import BoardConfig
from hil.errors import TargetError, TargetFault, TimeoutExpired
from hil.road.capture import RunContext, raise_if_fault, read_out_etdump
from hil.road.forensics import FaultWatch
from hil.road.gdbmi import GdbMiSession
from hil.road.ports import LOOPBACK
from hil.road.qemu import QemuProcess
from hil.road.run_config import run_planned
from hil.road.serial_reader import SerialReader

END_LINE = "Program complete, exiting."
# Seconds QEMU's UART socket gets to show up as connected in `info chardev`.
SERIAL_ATTACH_S = 5.0
# How an image without the run-configuration handshake gets it (the harness builds the replay image).
REBUILD_HINT = "the harness builds QEMU replay images itself: hil.firmware.qemu_image.build_qemu_image(..., runs=N)"


class QemuBoard:
    """QEMU as a board: `flash()` starts it halted and downloads the ELF; `run()` captures the ETDump."""

    def __init__(self, cfg: BoardConfig, workdir: Path) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.serial_log = self.workdir / "serial.log"
        self.mi_log = self.workdir / "mi.log"
        self.qemu_log = self.workdir / "qemu.log"
        self.etdump_path = self.workdir / "trace.etdump"
        self.steps_s: dict[str, float] = {}
        self.image: Path | None = None
        self._qemu: QemuProcess | None = None
        self._serial: SerialReader | None = None
        self._gdb: GdbMiSession | None = None

    # -- the Board protocol ----------------------------------------------------------------

    def flash(self, image: Path, progress: Callable[[float], None] | None = None) -> None:
        """Start QEMU halted, attach the console and GDB, and download `image`; the CPU stays halted.

        GDB's download into QEMU takes well under a second, so `progress` only hears "done"."""
        image = Path(image)
        if not image.is_file():
            raise TargetError(f"board '{self.name}': image not found: {image}")
        if self._qemu is not None:
            self.close()
        self.steps_s = {}
        try:
            with self._step("connect"):
                self._qemu = QemuProcess(
                    str(self.cfg.get("qemu.executable", "qemu-system-arm")),
                    str(self.cfg.require("qemu.machine")),
                    self.cfg.get("qemu.cpu"),
                    self.qemu_log,
                ).launch()
                # gdb loads the ELF while QEMU boots: the two starts overlap (~0.3 s each).
                self._gdb = GdbMiSession(self.cfg.gdb, image, self.mi_log)
                self._qemu.ensure_ready()
                # The console is open before a single instruction runs (-S): no line is lost.
                self._serial = SerialReader(
                    f"socket://{LOOPBACK}:{self._qemu.serial_port}", self.serial_log, name=f"{self.name} console"
                ).start()
                self._gdb.connect(LOOPBACK, self._qemu.gdb_port)
                self._wait_serial_attached()
            with self._step("flash"):
                self._gdb.download()
            if progress is not None:
                progress(1.0)
            self.image = image
        except BaseException:
            self.close()
            raise

    def attach(self) -> tuple[GdbMiSession, SerialReader]:
        """The debugger and console of the flashed target, reset and halted: for callers that drive
        the target step by step (the `hil_board` fixture) instead of through `run()`."""
        if self._gdb is None or self._serial is None or self.image is None:
            raise TargetError(f"board '{self.name}': attach() before flash()")
        self._gdb.reset(str(self.cfg.get("qemu.reset_monitor", "system_reset")))
        return self._gdb, self._serial

    def run(self, timeout: float, plan: RunPlan) -> RunCapture:
        """Reset, configure `plan`, run to the breakpoint, dump the ETDump, let the image finish; all within `timeout` s."""
        gdb, serial, qemu = self._gdb, self._serial, self._qemu
        if gdb is None or serial is None or qemu is None or self.image is None:
            raise TargetError(f"board '{self.name}': run() before flash()")
        if not qemu.alive:
            raise TargetError(f"board '{self.name}': QEMU is gone (a run ends it); flash() again before run()")
        deadline = time.monotonic() + timeout
        ctx = RunContext(self.name, self.cfg.breakpoint, serial, self.mi_log, self.image,
                         faults=FaultWatch(self.cfg.fault_handlers), fault_path=self.workdir / "fault.json")
        try:
            with self._step("run_to_breakpoint"):
                gdb.reset(str(self.cfg.get("qemu.reset_monitor", "system_reset")))
                run_planned(gdb, ctx, plan, deadline, rebuild=REBUILD_HINT)
            with self._step("read_etdump"):
                result, etdump = read_out_etdump(
                    gdb, ctx, self.cfg.result_expr, self.cfg.ram_regions, self.etdump_path
                )
            with self._step("finish"):
                exit_code = self._finish(ctx, deadline)
        except TargetError as exc:
            raise self._with_qemu_status(exc) from exc.__cause__
        return RunCapture(
            serial_log=self.serial_log,
            console=serial.text,
            etdump=etdump,
            result_addr=result.address,
            steps_s=dict(self.steps_s),
            crc32=result.crc_record(etdump),
            exit_code=exit_code,
        )

    def close(self) -> None:
        """Stop gdb, the console reader and QEMU, whatever state they are in; safe to call twice."""
        gdb, serial, qemu = self._gdb, self._serial, self._qemu
        self._gdb = self._serial = self._qemu = None
        try:
            if gdb is not None:
                gdb.close()
        finally:
            try:
                if serial is not None:
                    serial.close()
            finally:
                if qemu is not None:
                    qemu.close()

    def __enter__(self) -> "QemuBoard":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- steps -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Time one harness step; the time is kept even when the step fails."""
        start = time.monotonic()
        try:
            yield
        finally:
            self.steps_s[name] = round(time.monotonic() - start, 4)

    def _wait_serial_attached(self) -> None:
        """Make sure QEMU has accepted our console connection before the CPU runs.

        QEMU drops UART bytes while its chardev has no client; the kernel completes our TCP
        connect before QEMU's main loop accepts it, so ask QEMU itself (`info chardev`).
        """
        assert self._gdb is not None
        deadline = time.monotonic() + SERIAL_ATTACH_S
        while True:
            info = self._gdb.console("monitor info chardev")
            if any(line.startswith("serial0:") and "<->" in line for line in info.splitlines()):
                return
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"board '{self.name}': QEMU did not attach the console socket within {SERIAL_ATTACH_S:g} s"
                    f" (info chardev: {info.strip()!r}; log: {self.qemu_log})"
                )
            time.sleep(0.02)

    def _finish(self, ctx: RunContext, deadline: float) -> int | None:
        """Let the image run to its end: its last line, then QEMU's exit with the image's status."""
        assert self._gdb is not None and self._qemu is not None
        try:
            stop = self._gdb.continue_until_stop(_left(deadline))
            raise_if_fault(self._gdb, ctx, stop)
            if not stop.target_gone:
                raise ctx.failure(f"target stopped again after the breakpoint instead of finishing: {stop.describe()}")
            ctx.serial.expect(END_LINE, _left(deadline))
        except TargetError as exc:
            if str(exc).startswith(f"board '{self.name}'") or isinstance(exc, TargetFault):
                raise
            raise ctx.failure(f"target did not finish after the ETDump was read: {exc}", type(exc)) from exc
        exit_code = self._qemu.exit_status(timeout=_left(deadline))
        if exit_code is None:
            raise ctx.failure(f"QEMU did not exit after '{END_LINE}' (log: {self.qemu_log})", TimeoutExpired)
        if exit_code != 0:
            raise ctx.failure(f"QEMU exit status {exit_code} (the image's exit code; log: {self.qemu_log})")
        return exit_code

    def _with_qemu_status(self, exc: TargetError) -> TargetError:
        """Add QEMU's fate to a failure: 'QEMU died (status -9)' explains most lost debugger sessions."""
        qemu = self._qemu
        if qemu is None or qemu.alive:
            return exc
        note = f"; QEMU exited with status {qemu.exit_status(0.1)} (log: {self.qemu_log})"
        widened = type(exc)(f"{exc}{note}")
        widened.__dict__.update(exc.__dict__)  # a fault's report travels on
        return widened


def _left(deadline: float) -> float:
    """Seconds left before `deadline`, never negative (a 0 s wait still checks once)."""
    return max(0.0, deadline - time.monotonic())
