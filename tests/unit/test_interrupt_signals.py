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
