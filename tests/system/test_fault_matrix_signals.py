"""The fault matrix, signals: Ctrl-C (SIGINT), SIGTERM and SIGHUP in each phase of `hil run`, as a user sends them.

A terminal's Ctrl-C (and its hang-up) signals the whole foreground process group, so each command runs as the
leader of a group of its own and the signal goes to the group (os.killpg): whatever of the harness shares it
gets it too. Every row asserts the exit status (130), the line the user reads, how long the command took
after the signal, the manifest naming the signal ("interrupted by signal 2 (SIGINT)": it said
"interrupted by " with nothing after, issue 32) and the phase's step, and that nothing tagged with the
command's HIL_SESSION_TAG outlives it (QEMU, gdb, the export child, the gdb stand-in below). The run
phase's row, on a hanging image, is tests/system/test_fault_matrix_run_path.py (row 13).

The bound on the time after the signal is the matrix's generous one (SIGNAL_BOUND_S); the figures measured
with the machine loaded are in docs/command-line.md ("Interrupting a run").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from orphans import processes_tagged
from test_fault_matrix import REPO, RUN, Hil, manifest, variant  # noqa: F401  (variant: the fixture)

SIGNALS = [(signal.SIGINT, "signal 2 (SIGINT)"), (signal.SIGTERM, "signal 15 (SIGTERM)"),
           (signal.SIGHUP, "signal 1 (SIGHUP)")]
SIGNAL_BOUND_S = 2.0
# A factory that takes a minute: the export child is still running it when the signal comes.
SLOW_MODEL = textwrap.dedent(
    """
    import time
    import torch

    def factory():
        time.sleep(120)
        return torch.nn.Linear(4, 2), (torch.ones(1, 4),)
    """
)
# A stand-in for gdb that passes every command on to the real one, holding back `dump binary memory` (the
# ETDump's read-out) for a minute after writing a marker file: the harness is then inside its read-out.
SLOW_DUMP_GDB = textwrap.dedent(
    """
    import subprocess, sys, time
    gdb = subprocess.Popen(["gdb-multiarch", *sys.argv[1:]], stdin=subprocess.PIPE)
    for line in iter(sys.stdin.buffer.readline, b""):
        if b"dump binary memory" in line:
            open(MARKER, "w").close()
            time.sleep(60)
        gdb.stdin.write(line)
        gdb.stdin.flush()
    gdb.stdin.close()
    sys.exit(gdb.wait())
    """
)


class Command:
    """`hil ...` as a process group's leader, its stderr collected line by line as it comes."""

    def __init__(self, runner: Hil, *args: str) -> None:
        self.tag = runner.tag
        self.popen = subprocess.Popen([sys.executable, "-m", "hil.cli.main", *args], cwd=REPO, env=runner.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.popen.poll() is None, f"hil ended before {what}: {self.lines}"
            assert time.monotonic() < deadline, f"no {what} within {timeout:g} s: {self.lines}"
            time.sleep(0.02)

    def interrupt(self, signum: int) -> tuple[int, float]:
        """Signal the group, as a terminal does; (exit status, seconds from the signal to the exit)."""
        start = time.monotonic()
        os.killpg(self.popen.pid, signum)
        status = self.popen.wait(timeout=60)
        elapsed = time.monotonic() - start
        self._reader.join(timeout=10)
        return status, elapsed

    def end(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=30)

    def left_behind(self, seconds: float = 5.0) -> list[str]:
        deadline = time.monotonic() + seconds
        while (left := processes_tagged(self.tag)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left


@pytest.fixture
def started() -> Iterator[Callable[..., Command]]:
    made: list[Command] = []

    def start(*args: str) -> Command:
        made.append(Command(Hil(), *args))
        return made[-1]

    yield start
    for command in made:
        command.end()


def check_interrupted(command: Command, signum: int, named: str, out: Path, step: str | None) -> None:
    """Exit 130 within the bound, the user's line, the manifest naming the signal (and the step it came in)."""
    status, elapsed = command.interrupt(signum)
    assert status == 130 and elapsed < SIGNAL_BOUND_S, (status, elapsed, command.lines)
    assert "Traceback" not in "\n".join(command.lines), command.lines
    assert [line for line in command.lines if not line.startswith("[hil]")] == ["hil run: interrupted"]
    kept = manifest(out)
    assert (kept["status"], kept["error"], kept["error_kind"]) == ("failed", f"interrupted by {named}", "interrupted")
    if step is not None:
        assert list(kept["steps_s"])[-1] == step  # the step the signal came in, timed until then
    assert command.left_behind() == []


@pytest.mark.parametrize(("signum", "named"), SIGNALS)
def test_a_signal_during_the_frameworks_import_is_named(started, tmp_path, signum, named):
    out = tmp_path / "run"
    command = started(*RUN, "--iterations", "1", "--out", str(out))
    command.wait_for(lambda: any("import torch, executorch" in line for line in command.lines), "import step")
    check_interrupted(command, signum, named, out, "import")


@pytest.mark.parametrize(("signum", "named"), SIGNALS)
def test_a_signal_during_the_export_is_named_and_ends_the_export_child(started, tmp_path, signum, named):
    model, out = tmp_path / "slow.py", tmp_path / "run"
    model.write_text(SLOW_MODEL)
    command = started(*RUN[:3], "--model", f"{model}:factory", "--no-delegate", "--iterations", "1",
                      "--out", str(out))
    exporting = lambda: [cmd for cmd in processes_tagged(command.tag) if "hil.aot.isolated" in cmd]  # noqa: E731
    command.wait_for(lambda: bool(exporting()), "export child")
    time.sleep(0.5)  # the child is inside the factory's sleep, past its imports
    check_interrupted(command, signum, named, out, "aot")
    assert "raised KeyboardInterrupt" not in json.dumps(manifest(out))  # the user's signal, not the model's fault


@pytest.mark.parametrize(("signum", "named"), SIGNALS)
def test_a_signal_during_the_read_out_is_named_and_leaves_no_partial_dump(started, variant, tmp_path, signum, named):  # noqa: F811
    marker, out = tmp_path / "dumping", tmp_path / "run"
    gdb = tmp_path / "slow-dump-gdb"
    gdb.write_text(f"#!{sys.executable}\nMARKER = {str(marker)!r}\n{SLOW_DUMP_GDB}")
    gdb.chmod(0o755)
    board = tmp_path / "qemu.toml"
    board.write_text((REPO / "boards" / "qemu.toml").read_text().replace('gdb = "gdb-multiarch"', f'gdb = "{gdb}"'))
    command = started("run", "--board-config", str(board), *RUN[3:], "--iterations", "1", "--elf", str(variant()),
                      "--out", str(out), "--timeout", "120")
    command.wait_for(marker.exists, "read-out (gdb's dump command)")
    check_interrupted(command, signum, named, out, None)  # the board's steps are its own (capture.steps_s)
    assert not list(out.glob(".hil-dump-*")) and not (out / "trace.etdump").exists()
    assert {"qemu.log", "mi.log", "serial.log"} <= set(manifest(out)["files"])
