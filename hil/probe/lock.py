"""One board, one user: an exclusive lock per debug probe, shared by every process on this host.

Two CI jobs flashing the same board at once corrupt each other's runs, and a job cancelled with
SIGKILL (a CI job cancelled hard) must not leave the board locked for everyone. `fcntl.flock` gives
both: the kernel drops the lock when its holder dies. The lock file also records who holds it
(pid, process start time, host, since when) so a waiter can say whom it waits for, and so a lock
file whose recorded holder is dead but whose flock is still held (a forked child that inherited
the descriptor outlives its parent) is recognised as stale and replaced.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from hil.base.no_follow import no_follow
from hil.base.errors import BoardConfigError, TimeoutExpired
from hil.base.held_lock import HeldLock

LOG = logging.getLogger(__name__)

DEFAULT_LOCK_DIR = Path("/tmp/et-hil-locks")


def lock_dir() -> Path:
    """`$HIL_LOCK_DIR` (tests and shared CI hosts set it) or /tmp/et-hil-locks."""
    env = os.environ.get("HIL_LOCK_DIR")
    return Path(env) if env else DEFAULT_LOCK_DIR


def _proc_start_ticks(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot, so a recycled pid is not taken for the holder."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: split after its closing parenthesis.
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])  # field 22 overall
    except (IndexError, ValueError):
        return None


def _proc_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a probe lock, as written in the lock file."""

    pid: int
    host: str
    start_ticks: int | None
    since: float

    def describe(self) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} (since {stamp})"

    def is_dead(self) -> bool:
        """True only when we can tell: same host, and the pid is gone, a zombie, or a recycled pid."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # exists, owned by someone else
        if _proc_state(self.pid) in ("Z", "X"):
            return True  # killed but not yet reaped by its parent: it holds nothing any more
        ticks = _proc_start_ticks(self.pid)
        return self.start_ticks is not None and ticks is not None and ticks != self.start_ticks

    @classmethod
    def parse(cls, text: str) -> "LockHolder | None":
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["host"]), data.get("start_ticks"), float(data["since"]))
        except (ValueError, KeyError, TypeError):
            return None

    @classmethod
    def me(cls) -> "LockHolder":
        return cls(os.getpid(), socket.gethostname(), _proc_start_ticks(os.getpid()), time.time())

    def dumps(self) -> str:
        return json.dumps({"pid": self.pid, "host": self.host, "start_ticks": self.start_ticks, "since": self.since})


def _safe_name(probe_id: str) -> str:
    if not probe_id:
        raise BoardConfigError("probe lock: empty probe id (resolve the probe's unique id before locking)")
    return re.sub(r"[^A-Za-z0-9._-]", "_", probe_id)


class ProbeLock(HeldLock):
    """Exclusive use of one probe by one process; a context manager.

    `acquire()` waits up to `timeout` s for the current holder and then raises TimeoutExpired
    naming it. `takeover` is set when a stale lock file (dead holder) was replaced, so the board
    can report it as a step of the run.
    """

    def __init__(self, probe_id: str, *, directory: Path | None = None, timeout: float = 60.0, poll: float = 0.1):
        self.probe_id = probe_id
        self.path = (directory or lock_dir()) / f"{_safe_name(probe_id)}.lock"
        self.timeout = timeout
        self.poll = poll
        self.takeover: LockHolder | None = None
        self.waited_s = 0.0
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _try_lock_once(self) -> int | None:
        """Open the lock file and try to flock it; returns the fd when we own the file at `self.path`."""
        fd = no_follow(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # despite the umask: the next CI job may run as another user
        except PermissionError:
            pass  # someone else's file; it is already shared or they must fix it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # Someone may have replaced a stale file between our open and our flock: the lock we
        # hold is only worth anything while it is on the file the path names now.
        if not self._still_at_path(fd):
            os.close(fd)
            return None
        return fd

    def _still_at_path(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def _read_holder(self) -> LockHolder | None:
        try:
            return LockHolder.parse(self.path.read_text())
        except OSError:
            return None

    def acquire(self) -> "ProbeLock":
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(self.path.parent, 0o1777)  # shared by every user on the lab host, like /tmp
        except PermissionError:
            pass
        start = time.monotonic()
        announced = False
        stale_seen: LockHolder | None = None
        while True:
            previous = self._read_holder()
            fd = self._try_lock_once()
            if fd is not None:
                if previous is not None and previous.pid != os.getpid() and previous.is_dead():
                    self.takeover = previous
                    LOG.warning("probe %s: took over the stale lock %s left by %s",
                                self.probe_id, self.path, previous.describe())
                os.ftruncate(fd, 0)
                os.pwrite(fd, LockHolder.me().dumps().encode(), 0)
                if not self._still_at_path(fd):
                    os.close(fd)  # a waiter replaced the file as stale before we wrote: start over
                    continue
                self._fd = fd
                self.waited_s = time.monotonic() - start
                return self
            holder = self._read_holder()
            if holder is not None and holder.is_dead() and holder == stale_seen and holder == self._read_holder():
                # The flock outlived its owner (a child inherited the descriptor): the file is
                # stale. Unlinking it lets the next open create a fresh, lockable file. The same
                # dead holder must be seen on two polls, so a new owner that has just locked
                # the file but not yet written its name is not mistaken for the dead one.
                LOG.warning("probe %s: lock %s is held but its owner %s is dead; replacing the file",
                            self.probe_id, self.path, holder.describe())
                self.takeover = holder
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            stale_seen = holder if holder is not None and holder.is_dead() else None
            waited = time.monotonic() - start
            who = holder.describe() if holder else "an unknown process"
            if waited >= self.timeout:
                raise TimeoutExpired(
                    f"probe {self.probe_id} is in use by {who}; waited {waited:.1f} s "
                    f"(lock file {self.path}; end that process or wait for it)"
                )
            if not announced:
                LOG.warning("probe %s is in use by %s; waiting up to %.0f s (lock file %s)",
                            self.probe_id, who, self.timeout, self.path)
                announced = True
            time.sleep(self.poll)
