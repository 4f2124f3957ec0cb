"""A child started through hil.target.process dies with the harness, even when the harness is SIGKILLed.

Real processes only: a Python "harness" child starts a `sleep` through ManagedProcess, from its main
thread or from a short-lived worker thread, reports the sleeper's pid, and is then killed with
SIGKILL, so no atexit hook or `finally` runs. The kernel's parent-death signal must end the sleeper.
Both lifelines of hil.target.spawner are run: setpriv, and the Python stand-in a machine without
setpriv on PATH gets (the harness reports which one it used, so neither case passes by accident).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import shutil

import pytest

REPO = Path(__file__).resolve().parents[2]

HARNESS = textwrap.dedent(
    """
    import sys, threading, time
    from pathlib import Path
    from hil.target.process import ManagedProcess
    from hil.target.spawner import lifeline

    out, how = Path(sys.argv[1]), sys.argv[2]
    (out / "lifeline").write_text(lifeline().kind)
    started = []

    def start():
        started.append(ManagedProcess(["sleep", "600"], "sleeper", out / "sleeper.log").start())

    if how == "worker-thread":
        worker = threading.Thread(target=start)
        worker.start()
        worker.join()  # the forking thread is gone: the child must live on regardless
        time.sleep(0.5)
    else:
        start()
    (out / "pid").write_text(str(started[0].pid))
    time.sleep(600)
    """
)


def dead(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (it holds no port and runs no code)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("how", ["main-thread", "worker-thread"])
@pytest.mark.parametrize("kind", ["setpriv", "python"])
def test_sigkill_of_the_harness_ends_its_child(tmp_path: Path, how: str, kind: str) -> None:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if kind == "python":  # a PATH that holds `sleep` and no setpriv
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "sleep").symlink_to(shutil.which("sleep"))
        env["PATH"] = str(tmp_path / "bin")
    elif shutil.which("setpriv") is None:
        pytest.skip("no setpriv on this machine (util-linux)")
    harness = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), how], cwd=REPO, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        sleeper = int(wait_for(tmp_path / "pid", harness))
        assert (tmp_path / "lifeline").read_text() == kind
        assert not dead(sleeper), "the child died with the thread that started it, before the harness did"
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=30)
        deadline = time.monotonic() + 5
        while not dead(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dead(sleeper), f"sleep (pid {sleeper}) outlived its SIGKILLed harness"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
