"""The connected board, step by step: what the `hil_board` fixture hands a test that brings its own firmware.

`hil_profile(model)` runs the whole road for a model the harness exports itself. A user with their
own image (built by their own build, with their own breakpoint and result expression) needs the
pieces instead: flash it, watch the console, run to a breakpoint, dump the ETDump, profile it
against their ETRecord. Each piece is the one the harness's own run uses (hil.target), so the
errors, logs and checks are the same.

    def test_my_firmware(hil_board):
        hil_board.flash("build/my_app.elf")
        hil_board.configure(iterations=5)          # only for firmware with the et-hil handshake
        hil_board.run_to("hil_etdump_ready")
        hil_board.read_etdump("hil_etdump_result")
        profile = hil_board.profile("build/etrecord.bin")
        hil_board.console.expect(r"Inference time: \\d+ us", timeout=5)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hil.records.profile_model import Profile
from hil.boards.console import DEFAULT_EXPECT_TIMEOUT_S, Console
from hil.boards import open_board
from hil.config.board_config import BoardConfig
from hil.base.errors import TargetError
from hil.records.manifest import is_simulated
from hil.run.folder import RunFolder, finish_profile, finish_session
from hil.target.capture import RunContext, read_out_etdump, run_to_breakpoint
from hil.target.gdbmi import GdbMiSession
from hil.target.run_config import CONFIG_SYMBOL, RunPlan, check_echo, configure_run
from hil.target.serial_reader import SerialReader

DEFAULT_TIMEOUT_S = 60.0
REBUILD_HINT = "link firmware/common/hil_result.c into your image and call hil_config_ready() before the first run"


class BoardSession:
    """One board, opened on `workdir` (serial.log, mi.log, trace.etdump, profile.json land there)."""

    def __init__(self, cfg: BoardConfig, workdir: Path) -> None:
        self.cfg = cfg
        self.workdir = Path(workdir)
        self._board: Any = None
        self._gdb: GdbMiSession | None = None
        self._serial: SerialReader | None = None
        self._image: Path | None = None
        self._plan: RunPlan | None = None
        self._console: Console | None = None

    # -- the steps --------------------------------------------------------------------------

    def flash(self, elf: Path | str, *, force: bool = False) -> None:
        """Put `elf` on the board and halt it at reset, the console already listening. A board that holds
        `elf` already (read back through the probe) is not programmed again, unless `force`."""
        self.close()
        self._image = Path(elf).resolve()
        self._plan = None
        self._board = open_board(self.cfg, self.workdir)
        self._board.flash(self._image, force=force)
        self._gdb, self._serial = self._board.attach()
        self._console = Console(self._serial, self.cfg.get("serial.expect_timeout_s", DEFAULT_EXPECT_TIMEOUT_S))

    @property
    def console(self) -> Console:
        """The serial console of the flashed board: `expect(pattern | [patterns], timeout)`, `expect_exact(text)`,
        `not_matching=`, `text` (hil.boards.console); the default timeout is `[serial].expect_timeout_s`."""
        self._need()
        assert self._console is not None
        return self._console

    def configure(self, iterations: int, warmup: int = 0, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """The run-configuration handshake (hil_config_ready / hil_run_config) for firmware that has it:
        how many inferences to run. The console must echo exactly what was written."""
        gdb, _ = self._need()
        plan = RunPlan(iterations, warmup)
        configure_run(gdb, self._context(self.cfg.breakpoint), plan, timeout, rebuild=REBUILD_HINT)
        self._plan = plan

    def run_to(self, breakpoint: str | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Run until `breakpoint` (FUNCTION or file.c:LINE; default the board file's) is hit."""
        gdb, _ = self._need()
        where = breakpoint or self.cfg.breakpoint
        if self._plan is None and self._has_handshake(gdb):
            raise TargetError(f"board '{self.cfg.name}': image {self._image} waits for its run configuration"
                              f" ({CONFIG_SYMBOL}); call configure(iterations, warmup) before run_to()")
        run_to_breakpoint(gdb, self._context(where), timeout)
        if self._plan is not None:
            check_echo(self._context(where), self._plan)

    def read_etdump(self, result_expr: str | None = None) -> bytes:
        """At the breakpoint: dump `(result_expr).buf .. +size` (default the board file's) to trace.etdump."""
        gdb, _ = self._need()
        expr = result_expr or self.cfg.result_expr
        _, data = read_out_etdump(gdb, self._context(self.cfg.breakpoint), expr, self.cfg.ram_regions,
                                  self.workdir / "trace.etdump")
        return data

    def profile(self, etrecord: Path | str, *, model: str | None = None, pte: Path | str | None = None) -> Profile:
        """Profile the ETDump just read against `etrecord`; writes profile.json and manifest.json.

        Ticks are read as cycles of the board's clock (the RT700 runtime's PAL ticks, and the QEMU
        replay image's), with the console's `Core/NPU Frequency` line winning, as in a harness run.
        """
        from hil.records.console import parse_console
        from hil.analysis.profile import TimeScale, board_time_scale, build_profile

        etdump = self.workdir / "trace.etdump"
        if not etdump.is_file():
            raise TargetError(f"board '{self.cfg.name}': profile() before read_etdump(): no {etdump}")
        _, serial = self._need()
        time.sleep(0.1)  # the console lines printed with the result, if the firmware prints any
        # The board's ticks at its clock (the console's line may win); the emulated RT700 counts instructions, shown
        # at the board file's rate whatever its console says.
        scale = (board_time_scale(self.cfg.kind, self.cfg.clock_mhz, neutron=False) if self.cfg.kind == "rt700-emu"
                 else TimeScale.core_cycles(self.cfg.clock_mhz))
        built = build_profile(etdump, etrecord, board=self.cfg.name, model=model or Path(self._image or "image").stem,
                              simulated=is_simulated(self.cfg.kind), time_scale=scale,
                              console=parse_console(serial.text), pte_path=pte)
        assert self._image is not None  # _need() passed: an image was flashed
        return finish_session(RunFolder(self.workdir), self.cfg, finish_profile(built), self._image, scale)

    def close(self) -> None:
        """Stop the board's processes and ports; safe to call twice."""
        board, self._board, self._gdb, self._serial = self._board, None, None, None
        if board is not None:
            board.close()

    # -- helpers ----------------------------------------------------------------------------

    def _need(self) -> tuple[GdbMiSession, SerialReader]:
        if self._gdb is None or self._serial is None:
            raise TargetError(f"board '{self.cfg.name}': nothing flashed yet; call flash(elf) first")
        return self._gdb, self._serial

    def _context(self, breakpoint: str) -> RunContext:
        gdb, serial = self._need()
        return RunContext(self.cfg.name, breakpoint, serial, gdb.transcript_path, self._image)

    @staticmethod
    def _has_handshake(gdb: GdbMiSession) -> bool:
        try:
            gdb.evaluate_int(f"sizeof({CONFIG_SYMBOL}.magic)")
        except TargetError:
            return False
        return True
