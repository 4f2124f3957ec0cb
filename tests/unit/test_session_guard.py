"""hil.target.session_guard: what a guarded child started (grandchildren, in its group or in another one) dies
with it, when the harness is SIGKILLed, SIGTERMed, or gives up on a build (run_logged's timeout).

Real processes only. The child is a shell script that starts two sleeping grandchildren, as cmake starts
ninja and ninja the compilers: `sleep` in the script's own process group, and a Python sleeper that
moves to a process group of its own (ninja's POSIX_SPAWN_SETPGROUP). Each writes its pid to a file;
whether it still runs is read back from /proc. Both lifelines of hil.target.spawner are run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_child_lifeline import dead  # gone, or a zombie nobody reaped yet

from hil.firmware.toolchain import BuildCommandError, run_logged
from hil.target.spawner import spawn

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")

# A sleeper in a process group of its own, as ninja starts each compiler; argv[1]: where its pid goes.
OWN_GROUP_PY = ("import os, sys, time; os.setpgid(0, 0); open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()));"
                " os.rename(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(600)")
# $1: the folder the grandchildren's pids go to.
BUILD_SH = textwrap.dedent(
    f"""\
    sleep 600 &
    echo $! > "$1/in-group.tmp" && mv "$1/in-group.tmp" "$1/in-group"
    {shlex.quote(sys.executable)} -c {shlex.quote(OWN_GROUP_PY)} "$1/own-group" &
    wait
    """
)

HARNESS = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from hil.firmware.toolchain import run_logged
    from hil.target.process import ManagedProcess, stop_children_on_sigterm
    from hil.target.spawner import lifeline, spawn

    out, how = Path(sys.argv[1]), sys.argv[2]
    (out / "lifeline").write_text(lifeline().kind)
    command = ["/bin/sh", str(out / "build.sh"), str(out)]
    stop_children_on_sigterm()
    if how == "spawn":
        spawn(command, session=True, stdin=subprocess.DEVNULL)
    elif how == "managed":
        ManagedProcess(command, "build", out / "managed.log").start()
    else:
        run_logged(command, cwd=out, log=out / "build.log", timeout=600)
    time.sleep(600)
    """
)


def grandchildren(out: Path, alive: subprocess.Popen | None = None, timeout: float = 60) -> list[int]:
    """The two grandchildren's pids, once both wrote them (while `alive` still runs)."""
    deadline = time.monotonic() + timeout
    files = [out / "in-group", out / "own-group"]
    while not all(path.exists() for path in files):
        assert alive is None or alive.poll() is None, alive.communicate()[1]
        assert time.monotonic() < deadline, f"the grandchildren never started: {list(out.iterdir())}"
        time.sleep(0.02)
    pids = [int(path.read_text()) for path in files]
    assert not any(dead(pid) for pid in pids)
    assert os.getpgid(pids[1]) != os.getpgid(pids[0]), "the second sleeper is not in a group of its own"
    return pids


def left_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if not dead(pid)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def folder(tmp_path: Path) -> Path:
    (tmp_path / "build.sh").write_text(BUILD_SH)
    return tmp_path


# How the harness starts the child, and how the harness ends: SIGKILL leaves it to the watcher, SIGTERM
# unwinds through run_logged's own cleanup (stop_children_on_sigterm's KeyboardInterrupt).
ENDINGS = [("spawn", signal.SIGKILL), ("managed", signal.SIGKILL), ("run_logged", signal.SIGKILL),
           ("run_logged", signal.SIGTERM)]


@pytest.mark.parametrize(("how", "sig"), ENDINGS, ids=[f"{how}-{sig.name}" for how, sig in ENDINGS])
@pytest.mark.parametrize("kind", ["setpriv", "python"])
def test_the_harness_ending_ends_every_process_its_child_started(tmp_path, how, kind, sig) -> None:
    out = folder(tmp_path)
    (out / "harness.py").write_text(HARNESS)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if kind == "python":  # a PATH that holds the script's tools and no setpriv
        (tmp_path / "bin").mkdir()
        for tool in ("sleep", "mv"):
            (tmp_path / "bin" / tool).symlink_to(shutil.which(tool))
        env["PATH"] = str(tmp_path / "bin")
    elif shutil.which("setpriv") is None:
        pytest.skip("no setpriv on this machine (util-linux)")
    harness = subprocess.Popen([sys.executable, str(out / "harness.py"), str(out), how], cwd=REPO, env=env,
                               stderr=subprocess.PIPE, text=True)
    try:
        pids = grandchildren(out, harness)
        assert (out / "lifeline").read_text() == kind
        harness.send_signal(sig)
        harness.wait(timeout=30)
        left = left_within(pids, 2.0)
        assert left == [], f"grandchildren {left} outlived the harness ended by {sig.name} ({how}, {kind})"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        for pid in [int(p.read_text()) for p in (out / "in-group", out / "own-group") if p.exists()]:
            if not dead(pid):
                os.kill(pid, signal.SIGKILL)


def test_run_loggeds_timeout_ends_the_grandchildren_too(tmp_path) -> None:
    out = folder(tmp_path)
    log = out / "build.log"
    with pytest.raises(BuildCommandError) as caught:
        run_logged(["/bin/sh", str(out / "build.sh"), str(out)], cwd=out, log=log, timeout=5)
    assert caught.value.reason == "timed out after 5 s" and log.read_text().endswith("[timed out after 5 s]\n")
    pids = [int((out / name).read_text()) for name in ("in-group", "own-group")]
    assert [pid for pid in pids if not dead(pid)] == []  # ended before run_logged raised: no waiting


def test_a_guarded_command_keeps_its_pid_session_and_exit_status(tmp_path) -> None:
    """The watcher forks beside the command: Popen's pid is the command's, which leads its session."""
    show = spawn([sys.executable, "-c", "import os; print(os.getpid(), os.getsid(0), os.getpgid(0))"], session=True,
                 stdout=subprocess.PIPE, text=True)
    printed, _ = show.communicate(timeout=60)
    assert printed.split() == [str(show.pid)] * 3 and show.returncode == 0
    assert spawn(["/bin/sh", "-c", "exit 7"], session=True).wait(timeout=60) == 7
    killed = spawn(["/bin/sh", "-c", "kill -KILL $$"], session=True)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    fed = spawn(["/bin/cat"], session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert fed.communicate(b"stdin is the caller's", timeout=60)[0] == b"stdin is the caller's"
