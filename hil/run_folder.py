"""One run writes a run folder at a time: an flock on a lock file inside it.

Two `hil run` into the same `--out` used to both "pass" with serial.log, mi.log and qemu.log each
holding two runs interleaved. The second run now fails at once naming the holder's pid, or waits for
it (`--wait`). flock is the kernel's: a holder killed with SIGKILL releases it, so a lock is never
stale; the file records who holds it (pid, host, since) only so the refusal can say whom it waits for.
The descriptor is close-on-exec, so QEMU and gdb never inherit the lock.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

from hil.errors import InputError
from hil.held_lock import HeldLock
from hil.probe.lock import LockHolder

LOCK_NAME = ".hil-run.lock"


class RunFolderBusy(InputError):
    """Another run holds the run folder's lock."""


class RunFolderLock(HeldLock):
    """Exclusive use of `folder` by this process while a run writes it; a context manager."""

    def __init__(self, folder: Path, *, wait: bool = False, report: Callable[[str], None] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.wait = wait
        self.report = report
        self._fd: int | None = None

    def _holder(self) -> str:
        try:
            holder = LockHolder.parse(self.path.read_text())
        except OSError:
            holder = None
        return holder.describe() if holder is not None else "another process"

    def acquire(self) -> "RunFolderLock":
        if self._fd is not None:
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                who = self._holder()
                if not self.wait:
                    raise RunFolderBusy(
                        f"run folder {self.folder} is in use by {who}, another run writing it; wait for it"
                        " with --wait or choose another --out"
                    ) from None
                if self.report is not None:
                    self.report(f"run folder {self.folder} is in use by {who}; waiting for it")
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, LockHolder.me().dumps().encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self
