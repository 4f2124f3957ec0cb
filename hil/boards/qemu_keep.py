"""QEMU kept between the runs of one image: the owner of the processes a pytest session reuses.

Starting QEMU and downloading the image costs every `hil_profile` call a second or more, and a suite
runs many tests of one image. A `QemuKeeper` (the pytest plugin holds one for the session and closes it
at the session's end) keeps, per board, the QEMU process of the last run that ended cleanly, halted at
`semihost_exit` with the image still in its memory. The next run of the same image (same sha256) on
the same board takes it, attaches a new gdb and console in its own run folder, and resets the core
(`monitor system_reset`) instead of starting QEMU again; a changed image, a forced flash or a run that
failed ends the kept process and starts a fresh one. `hil run` (one run per process) has no keeper.

The console reader stays attached too (QEMU does not notice a client leaving while its CPU is halted,
so a new reader would never be served); each run gives it its own serial.log (SerialReader.log_to), and
between runs it logs into the keeper's folder, so a run folder's serial.log never changes after its run.

QEMU's own log (stdout and stderr, `qemu-N.log`) lives in the keeper's `log_dir` (the pytest plugin's is
under the session's artifacts root), not in the run folder of the run that started it: a kept process goes
on writing it through later runs, and a run folder must not change after its run ended (a later run into
that folder would refuse the file as changed since). Each run folder gets its own qemu.log, the bytes QEMU
wrote during that run (QemuBoard.close), and the manifest's `flash` names the whole log.

Orphan checks tell a kept QEMU from a leak by `session_kept_pids()`: the pids held right now by a keeper
made for a pytest session (`session=True`). A kept QEMU is the session's, not a leak; it still ends with the
session (`close()`), which tests/system/test_qemu_kept.py and test_no_orphans.py check from /proc.

The reset restarts the image from its reset vector: startup.c copies .data from its load image in
CODE and zeroes .bss, and the run-configuration handshake writes the plan (and the inputs) again, so
a run on a kept QEMU is the run a fresh one would do (tests/system/test_qemu_kept.py compares them).
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from hil.base import atomic
from hil.base.errors import TargetError
from hil.config.board_config import BoardConfig
from hil.target.process import ManagedProcess, live_children
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
        return (f"QEMU (pid {self.pid or '?'}) holds sha256 {self.sha256[:16]} of {self.image.name}, "
                f"{self.runs} run(s) so far")

    @property
    def pid(self) -> int | None:
        return self.qemu.process.pid if self.qemu.process is not None else None

    @property
    def usable(self) -> bool:
        return self.qemu.alive and not self.serial.ended

    def close(self) -> None:
        try:
            self.serial.close()
        finally:
            self.qemu.close()


@dataclass(frozen=True)
class LogPart:
    """The part of a kept QEMU's log (the keeper's file) that one run owns: from byte `start` to the end
    when the run ends, copied into that run's folder then (QemuBoard.close)."""

    log: Path
    start: int

    @classmethod
    def from_now(cls, log: Path) -> "LogPart":
        """The part beginning at the log's present end (a file not there yet: its beginning)."""
        try:
            return cls(log, log.stat().st_size)
        except FileNotFoundError:
            return cls(log, 0)

    def save(self, dest: Path, board: str) -> None:
        """Write the part, as the log holds it now, into `dest` (atomically: `dest` is complete or absent).

        Called on the way out of a run, maybe unwinding its failure: that one is what is reported then,
        and a part that cannot be written is left out (the manifest's `flash` names the whole log)."""
        pending = sys.exc_info()[1]
        try:
            with open(self.log, "rb") as source:
                source.seek(self.start)
                atomic.write_bytes(dest, source.read())
        except OSError as exc:
            if pending is None:
                raise TargetError(f"board '{board}': cannot write this run's part of QEMU's log {self.log} "
                                  f"into {dest}: {exc}") from exc


def board_key(cfg: BoardConfig) -> str:
    """Which QEMU a board file means: its name and how QEMU is started (machine, cpu, icount, console)."""
    qemu = {key: cfg.get(f"qemu.{key}") for key in ("executable", "machine", "cpu", "icount_shift", "serial_pty")}
    return json.dumps({"board": cfg.name, "source": str(cfg.source), **qemu}, sort_keys=True, default=str)


# The keepers not closed yet, for session_kept_pids(); a keeper leaves it in close().
_open: list["QemuKeeper"] = []
_open_lock = threading.Lock()


def session_kept_pids() -> set[int]:
    """Pids of the QEMU processes a pytest session's keeper holds right now (between runs, halted).

    What an orphan check leaves out: those are the session's, ended with it, not a leak. A QEMU a run is
    using, or one a keeper made by a test itself (`session=False`) holds, is not in it."""
    with _open_lock:
        keepers = [k for k in _open if k.session]
    return {pid for k in keepers for pid in k.pids()}


def unkept_children() -> list[ManagedProcess]:
    """hil.target.process.live_children() less the QEMU processes a pytest session keeps: what is left
    running for no one, the count an orphan check takes inside a session that keeps QEMU."""
    kept = session_kept_pids()
    return [child for child in live_children() if child.pid not in kept]


class QemuKeeper:
    """At most one kept QEMU per board; `close()` ends them all (the session's end).

    `log_dir` holds the logs of every QEMU started to be kept (`new_log()`: one file per process, made
    when first needed); `session` says the keeper is a pytest session's (session_kept_pids)."""

    def __init__(self, log_dir: Path, *, session: bool = False) -> None:
        self.log_dir = Path(log_dir)
        self.session = session
        self._kept: dict[str, KeptQemu] = {}
        self._numbers = itertools.count(1)
        self.closed = False
        with _open_lock:
            _open.append(self)

    def new_log(self) -> Path:
        """A new, empty file in `log_dir` for the log of the next QEMU started with this keeper; made here
        (`x`: a name nobody holds yet), so two keepers given one folder never share a log."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        while True:
            path = self.log_dir / f"qemu-{next(self._numbers)}.log"
            try:
                path.open("xb").close()
            except FileExistsError:
                continue
            return path

    def console_log(self, kept: KeptQemu) -> Path:
        """Where a kept QEMU's console logs between two runs (nothing, its CPU halted; but never a run folder)."""
        log = kept.qemu.log_path
        return log.with_name(log.name.replace("qemu-", "console-", 1))

    def pids(self) -> set[int]:
        """Pids of the QEMU processes held now."""
        return {pid for kept in list(self._kept.values()) if (pid := kept.pid) is not None}

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
        """Hold `kept` for the board's next run, its console logging into `log_dir`; False (the caller ends
        it) once the keeper is closed."""
        if self.closed:
            return False
        kept.serial.log_to(self.console_log(kept))
        old = self._kept.pop(board_key(cfg), None)
        if old is not None and old.qemu is not kept.qemu:
            old.close()
        self._kept[board_key(cfg)] = kept
        return True

    def close(self) -> None:
        """End every kept QEMU; safe to call twice."""
        self.closed = True
        with _open_lock:
            if self in _open:
                _open.remove(self)
        kept, self._kept = list(self._kept.values()), {}
        for item in kept:
            item.close()
