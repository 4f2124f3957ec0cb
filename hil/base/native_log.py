"""ExecuTorch's own C++ log lines, kept off the terminal and in the run folder's `host_runtime.log`.

The host runtime (ExecuTorch's pybindings, loaded into this process for the numerics check, the input
check and the replay image's ETDump) logs with `ET_LOG`: its first `execute` prints five
`[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version` ... lines (extension/threadpool/
cpuinfo_utils.cpp, sizing its thread pool). The pybindings' log hook writes them to `std::cerr`
(extension/pybindings/pybindings.cpp:1896-1906), which a bound call hands to Python's `sys.stderr`
(pybind11's `scoped_estream_redirect`, pybindings.cpp:1620-1621) and an unbound one leaves on file
descriptor 2. `hil run` showed them between its step lines, pytest in every such test's captured stderr.
So each call into the runtime runs inside `native_lines()`: fd 2 points at a scratch file for the call,
and `sys.stderr` is a stream onto that fd 2, both put back however the call ends; what the runtime said
is appended to the log the run named with `logged_to` (nothing is written when it said nothing). Outside
a run (no `logged_to`), both are left alone.

fd 2 and `sys.stderr` belong to the whole process, so the redirections are serialised by one lock (a
nested one in the same thread works like a stack); another thread writing to fd 2 or looking up
`sys.stderr` during a call lands in the log too, which is why a redirection covers the runtime call only
(a progress bar or a logging handler holds its own stream object and is not affected).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from hil.base.no_follow import no_follow

LOG_NAME = "host_runtime.log"
STDERR_FD = 2

_TARGET: ContextVar[Path | None] = ContextVar("hil_native_log", default=None)
_LOCK = threading.RLock()


@contextlib.contextmanager
def logged_to(path: Path) -> Iterator[Path]:
    """Within the block (this thread and context), the runtime's lines are appended to `path`."""
    token = _TARGET.set(Path(path))
    try:
        yield Path(path)
    finally:
        _TARGET.reset(token)


def current_log() -> Path | None:
    """The log the runtime's lines go to now, or None outside a run."""
    return _TARGET.get()


def _flush_c_streams() -> None:
    """What C stdio still buffers goes out before fd 2 changes hands (stderr is unbuffered; stdout may not be)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to ask: nothing buffered by it either
        pass


@contextlib.contextmanager
def native_lines(label: str) -> Iterator[None]:
    """Run a call into the C++ runtime with fd 2 kept off the terminal (see the module docstring).

    `label` heads the call's lines in the log ("load and run model.pte"), so a reader knows which call said them."""
    target = _TARGET.get()
    if target is None:
        yield
        return
    with _LOCK, tempfile.TemporaryFile(prefix="hil-native-") as scratch:
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        _flush_c_streams()
        try:
            saved = os.dup(STDERR_FD)
        except OSError:  # no fd 2 at all (a daemon): nothing reaches a terminal anyway
            yield
            return
        python_stderr = sys.stderr
        onto_fd2 = open(STDERR_FD, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        try:
            os.dup2(scratch.fileno(), STDERR_FD)
            sys.stderr = onto_fd2
            yield
        finally:
            sys.stderr = python_stderr
            onto_fd2.close()  # flushes what the bound calls wrote, onto the scratch file
            _flush_c_streams()
            os.dup2(saved, STDERR_FD)
            os.close(saved)
            scratch.seek(0)
            said = scratch.read()
            if said:
                _append(target, label, said)


def _append(target: Path, label: str, said: bytes) -> None:
    """The call's lines under a `# label` line; a log that cannot be written costs the lines, never the run."""
    try:
        with open(target, "ab", opener=no_follow) as log:
            log.write(f"# {label}\n".encode())
            log.write(said if said.endswith(b"\n") else said + b"\n")
    except OSError:
        pass


@dataclass
class HeldBack:
    """What a child process said on the inherited fds 1 and 2 during `held_back()`."""

    text: str = ""

    def first_error(self) -> str | None:
        """What follows the first line that is `error:` alone (flatc prints its usage, then `error:` and the
        reason on the next line), without the usage text; None when no such line was said."""
        lines = [line.strip() for line in self.text.splitlines()]
        for index, line in enumerate(lines):
            if line == "error:" and index + 1 < len(lines) and lines[index + 1]:
                return lines[index + 1]
        return None


@contextlib.contextmanager
def held_back() -> Iterator[HeldBack]:
    """fd 1 and fd 2 onto a scratch file for the block, whatever the run: a child that inherits them (ExecuTorch
    runs flatc with neither captured, which prints its 26-line usage text for a corrupt ETDump) says nothing on
    the terminal, and the caller's one line can quote the child's error from `text`."""
    held = HeldBack()
    with _LOCK, tempfile.TemporaryFile(prefix="hil-held-") as scratch:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        _flush_c_streams()
        saved: list[tuple[int, int]] = []
        try:
            for fd in (1, STDERR_FD):
                try:
                    saved.append((fd, os.dup(fd)))
                except OSError:  # no such fd (a daemon): nothing reaches a terminal from it anyway
                    continue
                os.dup2(scratch.fileno(), fd)
            yield held
        finally:
            _flush_c_streams()
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            scratch.seek(0)
            held.text = scratch.read().decode("utf-8", errors="replace")
