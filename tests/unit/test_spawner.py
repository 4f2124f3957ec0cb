"""hil.target.spawner: the lifeline between fork and the command, Popen's errors kept, and the start deadline.

Real processes only. What the product did is read back from the kernel and the file system: the
parent-death signal the command runs with (prctl(PR_GET_PDEATHSIG) in the command itself), a
marker file the command writes, our children in /proc.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hil.cli.main import exit_code_for
from hil.base.errors import TargetError, TimeoutExpired
from hil.target.process import ManagedProcess, os_children
from hil.target.spawner import Lifeline, find_lifeline, spawn

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# Prints the parent-death signal it runs with: linux/prctl.h PR_GET_PDEATHSIG = 2.
SHOW_PDEATHSIG = ("import ctypes; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0);"
                  " print(v.value)")


def lifeline_of(kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Lifeline:
    if kind == "python":  # what a machine without setpriv on PATH gets
        monkeypatch.setenv("PATH", str(tmp_path))
    line = find_lifeline()
    if line.kind != kind:
        pytest.skip(f"this machine's lifeline is {line.kind}")
    return line


@linux_only
@pytest.mark.parametrize("kind", ["setpriv", "python"])
def test_the_command_runs_with_sigkill_as_its_parent_death_signal(kind, monkeypatch, tmp_path) -> None:
    line = lifeline_of(kind, monkeypatch, tmp_path)
    done = subprocess.run(line.argv(os.getpid(), [sys.executable, "-c", SHOW_PDEATHSIG]),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "9\n"), done.stderr  # 9: SIGKILL on Linux


@linux_only
@pytest.mark.parametrize("kind", ["setpriv", "python"])
def test_the_command_does_not_run_once_its_parent_is_gone(kind, monkeypatch, tmp_path) -> None:
    """A harness that died between fork and prctl sends no signal: the lifeline sees another parent and stops."""
    line = lifeline_of(kind, monkeypatch, tmp_path)
    marker = tmp_path / "ran"
    command = ["/bin/sh", "-c", f"echo ran > {marker}"]
    not_my_parent = 1  # init: the parent of an orphan, never this test's child's
    orphaned = subprocess.run(line.argv(not_my_parent, command), capture_output=True, timeout=60)
    assert orphaned.returncode == 125 and not marker.exists()  # 125: spawner.ORPHANED_STATUS
    kept = subprocess.run(line.argv(os.getpid(), command), capture_output=True, timeout=60)
    assert kept.returncode == 0 and marker.read_text() == "ran\n"


def test_a_missing_program_is_the_oserror_popen_raises(tmp_path) -> None:
    for name in ("no-such-program-xyz", "./no-such-file", str(tmp_path)):  # the last: a folder, not a program
        with pytest.raises(OSError) as popen_error:
            subprocess.Popen([name], cwd=tmp_path)
        with pytest.raises(OSError) as spawn_error:
            spawn([name], cwd=tmp_path)
        assert (type(spawn_error.value), spawn_error.value.errno, str(spawn_error.value)) == (
            type(popen_error.value), popen_error.value.errno, str(popen_error.value))


def test_a_relative_program_is_found_from_cwd_and_keeps_its_arguments(tmp_path) -> None:
    script = tmp_path / "show.sh"
    script.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    script.chmod(0o755)
    child = spawn(["./show.sh", "a b", "", "-c"], cwd=tmp_path, stdout=subprocess.PIPE)
    out, _ = child.communicate(timeout=60)
    assert (child.returncode, out) == (0, b"a b||-c|")


def test_python_between_fork_and_exec_is_refused() -> None:
    for kwargs in ({"preexec_fn": lambda: None}, {"shell": True}, {"executable": "/bin/true"}):
        with pytest.raises(TypeError, match="nothing may run between fork and exec"):
            spawn(["true"], **kwargs)


SLEEP = ["sleep", "607"]  # a duration no other test uses: its command line marks our sleeper


def sleepers() -> list[int]:
    """Our sleepers, at any step of the lifeline or as zombies, once the spawner has served one more start
    (it serves in order, so it is done with, and has reaped, any child whose caller gave up before)."""
    assert spawn(["true"]).wait(timeout=60) == 0
    found = []
    for pid, name in os_children():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            cmdline = b""
        if name == "sleep" or cmdline.endswith(b"sleep\x00607\x00"):
            found.append(pid)
    return found


def test_a_start_past_its_deadline_is_named_and_leaves_no_child() -> None:
    for _ in range(20):  # abandoned while queued or while the spawner is inside Popen: no child either way
        with pytest.raises(TimeoutExpired) as error:
            spawn(SLEEP, timeout=0)
        assert str(error.value) == "could not start 'sleep' within 0 s; it was killed"
    assert exit_code_for(error.value) == 3
    assert sleepers() == []  # and the spawner serves on


def test_a_managed_process_past_its_start_deadline_names_itself_and_its_log(tmp_path) -> None:
    log = tmp_path / "sleeper.log"
    with pytest.raises(TimeoutExpired) as error:
        ManagedProcess(SLEEP, "sleeper", log).start(timeout=0)
    assert str(error.value) == f"sleeper: could not start 'sleep' within 0 s; it was killed (log: {log})"
    assert isinstance(error.value, TargetError)
    assert log.read_text() == "$ sleep 607\n[could not start 'sleep' within 0 s; it was killed]\n"
    assert sleepers() == []


def test_a_build_command_that_does_not_start_in_time_is_a_build_error(tmp_path, monkeypatch) -> None:
    from hil.firmware import toolchain
    from hil.firmware.toolchain import BuildCommandError, run_logged

    monkeypatch.setattr(toolchain, "START_TIMEOUT_S", 0)
    log = tmp_path / "build.log"
    with pytest.raises(BuildCommandError) as error:
        run_logged(SLEEP, cwd=tmp_path, log=log, timeout=600)
    assert str(error.value) == f"build command could not start within 0 s: sleep 607 (log: {log})"
    assert log.read_text() == "$ sleep 607\n[could not start within 0 s]\n"
    assert sleepers() == []


def test_an_exports_timeout_covers_its_start(tmp_path) -> None:
    """With no time left the child is not started at all, instead of started and then timed out as the model's fault."""
    from hil.aot.isolated import export_isolated

    model = tmp_path / "net.py"
    model.write_text("def factory():\n    raise AssertionError('never runs')\n")
    log = tmp_path / "export.log"
    with pytest.raises(TimeoutExpired) as error:
        export_isolated(f"{model}:factory", cache=tmp_path / "cache", timeout_s=0, log_path=log)
    # The export child starts under strace when the machine has it (its reads by native code are followed).
    started = shutil.which("strace") or sys.executable
    assert str(error.value) == (f"export of net: could not start '{started}' within 0 s; it was killed"
                                f" (log: {log})")
    assert exit_code_for(error.value) == 3  # the machine's fault: the model's code never ran


class EnvThatWaits(dict):
    """An environment whose items() (read by Popen in the spawner thread, before it forks) waits for `go`:
    it holds the spawner inside Popen past the caller's deadline, the case where the caller gives up first."""

    def __init__(self, base: dict[str, str]) -> None:
        super().__init__(base)
        self.inside, self.go = threading.Event(), threading.Event()

    def items(self):  # type: ignore[override]
        self.inside.set()
        self.go.wait(60)
        return super().items()


def test_a_child_started_after_its_caller_gave_up_is_killed_and_reaped() -> None:
    env = EnvThatWaits(dict(os.environ))
    with pytest.raises(TimeoutExpired, match=r"^could not start 'sleep' within 2 s; it was killed$"):
        spawn(SLEEP, env=env, timeout=2)
    assert env.inside.is_set(), "the spawner never reached Popen: the case this test is for did not happen"
    env.go.set()  # Popen now forks the sleeper, for a caller that is gone
    assert sleepers() == []
