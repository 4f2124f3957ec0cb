"""SIGINT (Ctrl-C), SIGTERM and SIGHUP each unwind the harness as a KeyboardInterrupt that names the signal
(what manifest.json's `error` says: hil.run.pipeline), in a fresh interpreter that sends itself the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import os, signal, sys
from hil.target.process import stop_children_on_sigterm
stop_children_on_sigterm()
try:
    os.kill(os.getpid(), int(sys.argv[1]))
    signal.sigtimedwait([], 0)  # a bytecode boundary: the handler has run by now
except KeyboardInterrupt as exc:
    print(f"interrupted by {exc}")
"""


@pytest.mark.parametrize(("signum", "named"), [(signal.SIGINT, "signal 2 (SIGINT)"),
                                               (signal.SIGTERM, "signal 15 (SIGTERM)"),
                                               (signal.SIGHUP, "signal 1 (SIGHUP)")])
def test_each_interrupting_signal_is_named(signum: int, named: str):
    done = subprocess.run([sys.executable, "-c", CHILD, str(int(signum))], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (done.returncode, done.stdout) == (0, f"interrupted by {named}\n"), done.stderr


def test_a_handler_someone_else_installed_is_left_alone():
    child = ("import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
             "from hil.target.process import stop_children_on_sigterm\nstop_children_on_sigterm()\n"
             "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout == "True\n", done.stderr


WAITING_CHILD = """
import os, signal, sys, threading, time
from pathlib import Path
from hil.target.process import ManagedProcess, stop_children_on_sigterm
stop_children_on_sigterm()
child = ManagedProcess(["sleep", "60"], "sleeper", Path(sys.argv[1])).start()

def signals() -> None:
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)  # the harness is told to stop while it waits for its child
    time.sleep(0.1)
    os.kill(child.pid, signal.SIGKILL)  # the child ends 0.1 s later (its own session: the signal never reached it)

threading.Thread(target=signals, daemon=True).start()
try:
    child.wait(30)
except KeyboardInterrupt as exc:
    print(f"interrupted by {exc}; child reaped: {child.popen.returncode is not None}")
child.close()
"""


def test_an_interrupted_wait_for_a_child_gives_up_at_once(tmp_path: Path):
    """CPython's Popen.wait, interrupted, waits 0.25 s more for the child to end too (it assumes the child got the
    Ctrl-C as well): a child killed 0.1 s after the signal was reaped inside that wait. A managed child never gets
    the signal, so the wait is skipped: the KeyboardInterrupt comes while the child still runs."""
    done = subprocess.run([sys.executable, "-c", WAITING_CHILD, str(tmp_path / "sleeper.log")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout == "interrupted by signal 15 (SIGTERM); child reaped: False\n", done.stderr
