"""QEMU kept between the runs of one image: the owner of the processes a pytest session reuses.

Starting QEMU and downloading the image costs every `hil_profile` call a second or more, and a suite
runs many tests of one image. A `QemuKeeper` (the pytest plugin holds one for the session and closes it
at the session's end) keeps, per board, the QEMU process of the last run that ended cleanly, halted at
`semihost_exit` with the image still in its memory. The next run of the same image (same sha256) on
the same board takes it, attaches a new gdb and console in its own run folder, and resets the core
(`monitor system_reset`) instead of starting QEMU again; a changed image, a forced flash or a run that
failed ends the kept process and starts a fresh one. `hil run` (one run per process) has no keeper.

The console reader stays attached too (QEMU does not notice a client leaving while its CPU is halted,
so a new reader would never be served); each run gives it its own serial.log (SerialReader.log_to).

The reset restarts the image from its reset vector: startup.c copies .data from its load image in
CODE and zeroes .bss, and the run-configuration handshake writes the plan (and the inputs) again, so
a run on a kept QEMU is the run a fresh one would do (tests/system/test_qemu_kept.py compares them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hil.config.board_config import BoardConfig
from hil.target.qemu import QemuProcess
from hil.target.serial_reader import SerialReader


@dataclass
class KeptQemu:
    """A QEMU process halted after a clean run, its console reader, and what it holds."""

    qemu: QemuProcess
    serial: SerialReader
    sha256: str
    image: Path
    runs: int = 1  # the runs it has served

    def describe(self) -> str:
        pid = self.qemu.process.pid if self.qemu.process is not None else "?"
        return f"QEMU (pid {pid}) holds sha256 {self.sha256[:16]} of {self.image.name}, {self.runs} run(s) so far"

    @property
    def usable(self) -> bool:
        return self.qemu.alive and not self.serial.ended

    def close(self) -> None:
        try:
            self.serial.close()
        finally:
            self.qemu.close()


def board_key(cfg: BoardConfig) -> str:
    """Which QEMU a board file means: its name and how QEMU is started (machine, cpu, icount, console)."""
    qemu = {key: cfg.get(f"qemu.{key}") for key in ("executable", "machine", "cpu", "icount_shift", "serial_pty")}
    return json.dumps({"board": cfg.name, "source": str(cfg.source), **qemu}, sort_keys=True, default=str)


class QemuKeeper:
    """At most one kept QEMU per board; `close()` ends them all (the session's end)."""

    def __init__(self) -> None:
        self._kept: dict[str, KeptQemu] = {}
        self.closed = False

    def take(self, cfg: BoardConfig, sha256: str) -> KeptQemu | None:
        """The kept QEMU of this board when it holds `sha256` and still runs; any other one is ended."""
        kept = self._kept.pop(board_key(cfg), None)
        if kept is None:
            return None
        if kept.sha256 == sha256 and kept.usable:
            return kept
        kept.close()
        return None

    def keep(self, cfg: BoardConfig, kept: KeptQemu) -> bool:
        """Hold `kept` for the board's next run; False (the caller ends it) once the keeper is closed."""
        if self.closed:
            return False
        old = self._kept.pop(board_key(cfg), None)
        if old is not None and old.qemu is not kept.qemu:
            old.close()
        self._kept[board_key(cfg)] = kept
        return True

    def close(self) -> None:
        """End every kept QEMU; safe to call twice."""
        self.closed = True
        kept, self._kept = list(self._kept.values()), {}
        for item in kept:
            item.close()
