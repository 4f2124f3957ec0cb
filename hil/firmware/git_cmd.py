"""Running git for the workspace assembler: one command, bounded in time, never leaving a process behind.

Kept apart from hil/firmware/workspace.py (which decides *what* to check out) because every git call
needs the same care: its own process group killed whole on timeout or Ctrl-C, no terminal prompts,
and an error line picked out of git's stderr.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from hil.base.errors import BuildError

GIT_TIMEOUT_S = 300.0  # local git work: init, config, the checkout of a large tree


class WorkspaceError(BuildError):
    """A repository could not be found, fetched or checked out; says which, at which commit, from where."""


class GitTimeout(WorkspaceError):
    """A command did not finish in time; it and every process it started were killed."""


def run(cmd: Sequence[str | Path], *, cwd: Path | None = None, timeout: float, input_text: str | None = None,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one command, output captured, in its own process group that is killed whole on timeout.

    Why the group: `git fetch` starts `git-remote-https`, `ssh` or `upload-pack`; killing git alone
    would leave them running and holding our pipes. Git never prompts (GIT_TERMINAL_PROMPT=0): a
    prompt nobody answers is a hang. Raises GitTimeout, or WorkspaceError if it cannot start.
    """
    argv = [str(part) for part in cmd]
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, text=True, start_new_session=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})},
            stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise WorkspaceError(f"cannot run {argv[0]}: {exc}") from exc
    try:
        out, err = proc.communicate(input_text, timeout=timeout)
    except BaseException as exc:  # the timeout, and Ctrl-C too: never leave the group behind
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left the group and still holds a pipe
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe:
                    pipe.close()
            proc.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise GitTimeout(f"`{shlex.join(argv)}` did not finish in {timeout:g} s; killed it") from None
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def git(work: Path | None, *args: str, timeout: float = GIT_TIMEOUT_S, input_text: str | None = None,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(["git", *args], cwd=work, timeout=timeout, input_text=input_text, env=env)


def why(stderr: str) -> str:
    """The line of git's stderr that says what went wrong: its first fatal, else error, else last line.

    The first, because git follows the cause with consequences ("fatal: early EOF").
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()] or ["no message"]
    picked = [line for line in lines if line.startswith("fatal:")] or [l for l in lines if l.startswith("error:")]
    return picked[0][:300] if picked else lines[-1][:300]
