"""Find the Arm cross compiler and run build commands with a timeout and a kept log.

Shared by every firmware build so that "compiler missing", "compiler hung" and "compile
failed" read the same everywhere and always point at the log that holds the evidence.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from hil.base.no_follow import no_follow
from hil.base.errors import BuildError, TimeoutExpired
from hil.target.session_guard import end_session
from hil.target.spawner import START_TIMEOUT_S, spawn

ARM_GCC = "arm-none-eabi-gcc"
INSTALL_HINT = "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"


class BuildCommandError(BuildError):
    """A build command failed, hung or could not start; keeps the pieces so a caller can re-point the log."""

    def __init__(self, command: str, reason: str, log: Path) -> None:
        super().__init__(f"build command {reason}: {command} (log: {log})")
        self.command = command
        self.reason = reason
        self.log = log

    def moved(self, log: Path) -> "BuildCommandError":
        """The same failure, naming the log where it was kept after its folder moved."""
        return BuildCommandError(self.command, self.reason, log)


def find_arm_gcc() -> Path:
    """The cross compiler: `$HIL_ARM_GCC` (e.g. an Arm GNU toolchain) or `arm-none-eabi-gcc` on PATH."""
    wanted = os.environ.get("HIL_ARM_GCC") or ARM_GCC
    found = shutil.which(wanted)
    if found is None:
        raise BuildError(f"cross compiler '{wanted}' not found on PATH; install it: {INSTALL_HINT}")
    return Path(found)


def compiler_version(gcc: Path) -> str:
    """`gcc --version`'s first line: part of every cache key, so a new compiler rebuilds."""
    stat = gcc.stat()
    return _version(str(gcc), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _version(gcc: str, _mtime_ns: int, _size: int) -> str:
    try:
        out = subprocess.run([gcc, "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run '{gcc} --version': {exc}; reinstall it: {INSTALL_HINT}") from exc
    return out.stdout.splitlines()[0].strip() if out.stdout else "unknown"


def run_logged(cmd: Sequence[str], *, cwd: Path, log: Path, timeout: float) -> None:
    """Run one build command, appending its command line and output to `log`.

    Raises BuildCommandError naming the command and the log when it fails, hangs past `timeout`
    seconds (it is killed then) or cannot start (within START_TIMEOUT_S). Started through `spawn` as
    the leader of a session (hil.target.session_guard), so what it starts, ninja and the compilers,
    ends with it: on a timeout, on Ctrl-C or SIGTERM (KeyboardInterrupt), and when the harness is
    SIGKILLed mid-build.
    """
    shown = " ".join(str(part) for part in cmd)
    start_within = START_TIMEOUT_S
    with open(log, "a", encoding="utf-8", opener=no_follow) as handle:
        handle.write(f"$ {shown}\n")
        handle.flush()
        try:
            proc = spawn(
                [str(part) for part in cmd], cwd=cwd, stdin=subprocess.DEVNULL,
                stdout=handle, stderr=subprocess.STDOUT, timeout=start_within, session=True,
            )
        except TimeoutExpired:
            handle.write(f"[could not start within {start_within:g} s]\n")
            raise BuildCommandError(shown, f"could not start within {start_within:g} s", log) from None
        except OSError as exc:
            handle.write(f"[cannot start: {exc}]\n")
            raise BuildCommandError(shown, f"could not start ({exc})", log) from exc
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _end(proc)
            handle.write(f"[timed out after {timeout:g} s]\n")
            raise BuildCommandError(shown, f"timed out after {timeout:g} s", log) from exc
        except BaseException:  # Ctrl-C, SIGTERM: the build must not outlive the harness's unwinding
            _end(proc)
            raise
        end_session(proc.pid)  # anything the command left running in its session
        handle.write(f"[exit status {returncode}]\n")
    if returncode != 0:
        raise BuildCommandError(shown, f"failed with exit status {returncode}", log)


def _end(proc: "subprocess.Popen[bytes]") -> None:
    """Kill the command and every process of its session, and reap the command."""
    end_session(proc.pid)
    proc.wait()
