"""`hil ... | head`: a reader that goes away ends the command quietly, as it ends `yes | head`.

Each case runs the real command with its stdout (or stderr) on a real pipe whose reading end is closed:
before the command writes, so every write meets a closed pipe (EPIPE) whatever the timing, and through a
real `head -n 1`. Exit status 141 (128 + SIGPIPE, what a shell shows for `yes` in `yes | head`), no
traceback, no "Exception ignored" at the interpreter's exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base import atomic
from test_inspect_cmd import run_folder  # noqa: F401  (the fixture: a run folder of a real host-runtime program)
from test_regress_synth import synth_profile

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]


def _closed_pipe_run(args: list[str], stream: str = "stdout", *, buffered: bool = True) -> tuple[int, str]:
    """Run `hil ARGS` with `stream` on a pipe nobody reads any more; its status and what it said on the other.
    `buffered`: stdout as a user's shell gives it (block-buffered on a pipe), else as under PYTHONUNBUFFERED."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | ({} if buffered else {"PYTHONUNBUFFERED": "1"})
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes its first byte
    try:
        kept = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: write_end}
        done = subprocess.run([*HIL, *args], cwd=REPO, timeout=300, env=env, **kept)
    finally:
        os.close(write_end)
    other = done.stderr if stream == "stdout" else done.stdout
    return done.returncode, other.decode(errors="replace")


def _two_runs(tmp_path: Path) -> list[str]:
    atomic.write_json(tmp_path / "a.json", synth_profile(seed=1))
    atomic.write_json(tmp_path / "b.json", synth_profile(seed=2))
    return [str(tmp_path / "a.json"), str(tmp_path / "b.json")]


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", ["help", "version", "compare", "doctor", "inspect"])
def test_a_closed_stdout_ends_every_command_quietly_with_141(command, buffered, tmp_path, run_folder):  # noqa: F811
    args = {"help": ["--help"], "version": ["--version"], "compare": ["compare", *_two_runs(tmp_path)],
            "doctor": ["doctor", "--board", "qemu"], "inspect": ["inspect", str(run_folder)]}[command]
    code, said = _closed_pipe_run(args, buffered=buffered)
    assert code == 141, said
    assert "Traceback" not in said and "Exception ignored" not in said and "BrokenPipe" not in said, said


def test_a_closed_stderr_ends_a_refused_command_quietly_too():
    code, said = _closed_pipe_run(["inspect", "no-such.etdump", "--etrecord", "no-such.bin"], stream="stderr")
    assert code == 141 and said == ""


def test_hil_inspect_into_head_prints_the_first_line_and_nothing_else(run_folder):  # noqa: F811
    # The issue's own command line, through a real `head`; its first line is the table's title.
    script = f'{" ".join(HIL)} inspect "$1" | head -n 1; echo "status ${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script, "bash", str(run_folder)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    first, status = done.stdout.splitlines()
    assert first.startswith("tiny on qemu") and status in ("status 0", "status 141"), done.stdout
    assert done.stderr == "", done.stderr
