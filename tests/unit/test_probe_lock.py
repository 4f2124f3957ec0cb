"""The per-probe lock, against real processes: waiting names the holder, dead holders never block."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hil.base.errors import BoardConfigError, TimeoutExpired
from hil.probe.lock import LockHolder, ProbeLock, lock_dir

PROBE = "0123456789ABCDEF:mcu-link"

# A separate Python process that takes the lock, says so, optionally forks a child that inherits
# the lock's descriptor (as a careless subprocess would), then holds on for HOLD seconds.
HOLDER = r"""
import os, subprocess, sys, time
from pathlib import Path
from hil.probe.lock import ProbeLock
lock = ProbeLock(sys.argv[1], directory=Path(sys.argv[2]), timeout=10).acquire()
if sys.argv[4] == "inherit":
    child = subprocess.Popen(["sleep", "60"], pass_fds=(lock._fd,))
    print("child", child.pid, flush=True)
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
lock.release()
print("released", flush=True)
"""


def _start_holder(directory: Path, hold: float, mode: str = "plain") -> tuple[subprocess.Popen, int | None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, PROBE, str(directory), str(hold), mode],
        stdout=subprocess.PIPE, text=True,
    )
    child = None
    line = proc.stdout.readline().split()
    if line and line[0] == "child":
        child = int(line[1])
        line = proc.stdout.readline().split()
    assert line == ["locked"], f"holder did not take the lock: {line}"
    return proc, child


def test_lock_records_holder_and_releases(tmp_path):
    lock = ProbeLock(PROBE, directory=tmp_path, timeout=1)
    with lock:
        holder = LockHolder.parse(lock.path.read_text())
        assert holder is not None and holder.pid == os.getpid() and not holder.is_dead()
        assert lock.path.parent == tmp_path and ":" not in lock.path.name
        # A second descriptor on the same file (another user in this process) must not get in.
        with pytest.raises(TimeoutExpired):
            ProbeLock(PROBE, directory=tmp_path, timeout=0.2).acquire()
    assert not lock.held and lock.path.read_text() == ""
    ProbeLock(PROBE, directory=tmp_path, timeout=0.2).acquire().release()


def test_lock_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    assert lock_dir() == tmp_path / "locks"
    with pytest.raises(BoardConfigError):
        ProbeLock("")


def test_waiter_times_out_naming_the_holder_pid(tmp_path):
    proc, _ = _start_holder(tmp_path, hold=30)
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutExpired) as err:
            ProbeLock(PROBE, directory=tmp_path, timeout=0.5).acquire()
        assert 0.5 <= time.monotonic() - start < 3
        assert f"pid {proc.pid}" in str(err.value) and str(tmp_path) in str(err.value)
    finally:
        proc.kill()
        proc.wait()


def test_waiter_gets_the_lock_when_the_holder_releases(tmp_path):
    proc, _ = _start_holder(tmp_path, hold=0.6)
    try:
        lock = ProbeLock(PROBE, directory=tmp_path, timeout=10).acquire()
        assert lock.waited_s >= 0.3 and lock.takeover is None  # a clean release is no takeover
        lock.release()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_holder_killed_with_sigkill_is_taken_over(tmp_path):
    proc, _ = _start_holder(tmp_path, hold=60)
    os.kill(proc.pid, signal.SIGKILL)
    time.sleep(0.2)  # not reaped yet: a zombie, which holds nothing
    try:
        start = time.monotonic()
        lock = ProbeLock(PROBE, directory=tmp_path, timeout=5).acquire()
        assert time.monotonic() - start < 2
        assert lock.takeover is not None and lock.takeover.pid == proc.pid
        assert LockHolder.parse(lock.path.read_text()).pid == os.getpid()
        lock.release()
    finally:
        proc.wait()


def test_stale_file_kept_locked_by_an_orphan_child_does_not_block(tmp_path):
    """The holder dies but a child it spawned still has the flock: the stale file is replaced."""
    proc, child = _start_holder(tmp_path, hold=60, mode="inherit")
    assert child is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        lock = ProbeLock(PROBE, directory=tmp_path, timeout=5, poll=0.05).acquire()
        assert lock.takeover is not None and lock.takeover.pid == proc.pid
        # Whoever comes next waits for *us*, not for the orphan.
        with pytest.raises(TimeoutExpired) as err:
            ProbeLock(PROBE, directory=tmp_path, timeout=0.3).acquire()
        assert f"pid {os.getpid()}" in str(err.value)
        lock.release()
    finally:
        os.kill(child, signal.SIGKILL)
