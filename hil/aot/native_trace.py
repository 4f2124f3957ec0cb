"""The files a process opens at the system-call level while a model's code runs: the reads an audit hook never sees.

Why: hil.aot.follow hears Python's own `open` (an audit hook), but native code opens files without it:
safetensors' `load_file` (Rust), `torch.jit.load` of a path (C++), `ctypes` calls into libc's `fopen`, a C library
that maps its weights. Such a read was invisible, so a retrained `.safetensors` file served the old `.pte` and the
numerics compared it with references from the same stale entry. So every `open`, `openat` and `openat2` of the
recording's window is followed with strace (Debian's `strace`, installed by `make setup`):

* the export's child (hil.aot.child) is started under `strace -f --seccomp-bpf`, which stops the process only at
  these three calls (an export costs about the same); the child finds the trace in `HIL_NATIVE_TRACE`;
* an export in hil's own process (a delegate registered only there) attaches strace to itself for the window
  (`strace -p`): every system call then stops, so such an export is slower (measured in the module's tests).

The window is bracketed by two opens of paths that cannot exist (the markers); what lies between them is parsed
here. When strace is missing or cannot trace, `NativeTraceError` says why: the caller then does not cache.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hil.base.errors import HilError

TRACE_ENV = "HIL_NATIVE_TRACE"
CALLS = "open,openat,openat2"
# -f: threads and processes the model starts; -qq: no attach lines; -xx: every string in hex (paths with any
# byte parse back exactly); -y: the dirfd's and the opened fd's own paths (the kernel's, symlinks resolved).
_OPTIONS = ("-f", "-qq", "-xx", "-y", "-e", f"trace={CALLS}")
_MARK_ROOT = "/.hil-native-trace-mark"
# Seconds to wait for strace: to probe it, to attach to this process, for the end marker to reach the file.
PROBE_TIMEOUT_S = 10.0
ATTACH_TIMEOUT_S = 10.0
FLUSH_TIMEOUT_S = 10.0

_HEX = r'((?:\\x[0-9a-f]{2})*)'
_CALL = re.compile(r'^(\d+) +(open|openat|openat2)\((.*)$')
_RESUMED = re.compile(r'^(\d+) +<\.\.\. (?:open|openat|openat2) resumed>(.*)$')
_DIRFD = re.compile(rf'^(?:AT_FDCWD|-?\d+)<{_HEX}>, ')
_PATH = re.compile(rf'^"{_HEX}"')
_FLAGS = re.compile(r'\b(O_[A-Z_]+(?:\|O_[A-Z_0-9]+)*)')
_RESULT = re.compile(rf'\) += (-?\d+)(?:<{_HEX}>)?(?: ([A-Z]+))?')


class NativeTraceError(HilError):
    """Reads by native code cannot be followed here (no strace, tracing not permitted, ...)."""


@dataclass(frozen=True)
class NativeOpen:
    """One open seen at the system-call level: the absolute path, its flags (names), and errno's name or ''."""

    path: str
    flags: frozenset[str]
    error: str

    @property
    def writes(self) -> bool:
        """Opened to make or replace the file: no read of what it held."""
        return bool(self.flags & {"O_WRONLY", "O_CREAT", "O_TRUNC", "O_TMPFILE"})


_probed: dict[str, str | None] = {}


def unavailable() -> str | None:
    """Why strace cannot follow a child's opens here (not installed, not permitted), or None when it can."""
    if "seccomp" not in _probed:
        _probed["seccomp"] = _probe()
    return _probed["seccomp"]


def _probe() -> str | None:
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed (make setup installs it)"
    try:
        done = subprocess.run([strace, *_OPTIONS, "--seccomp-bpf", "-o", os.devnull, "--", "true"],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace cannot run ({type(exc).__name__})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"strace cannot trace here ({said})"
    return None


def traced_argv(argv: Sequence[str], trace: Path) -> tuple[list[str], dict[str, str]]:
    """(argv, extra environment) that run `argv` under strace writing to `trace`; argv unchanged (and no
    environment) when strace cannot trace: the child then says so in its reads."""
    if unavailable() is not None:
        return list(argv), {}
    strace = shutil.which("strace") or "strace"
    # -D: strace runs as a grandchild and the command keeps the pid it is started with, so the spawner's session
    # guard (hil.target.session_guard) and exit status see the command; strace as the session's leader waited for
    # the guard's watcher, its unexpected child, for ever.
    return [strace, "-D", *_OPTIONS, "--seccomp-bpf", "-o", str(trace), "--", *argv], {TRACE_ENV: str(trace)}


class Window:
    """The opens made between `start()` and `stop()` by this process and what it starts, at the system-call level."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self.trace: Path | None = None
        self._strace: subprocess.Popen[bytes] | None = None
        self._scratch: Path | None = None

    def start(self) -> None:
        given = os.environ.get(TRACE_ENV)
        if given:
            self.trace = Path(given)  # the child runs under strace already (traced_argv)
        else:
            self._attach()
        _mark(self.token, "begin")

    def stop(self) -> list[NativeOpen]:
        """The window's opens; NativeTraceError when the trace cannot be read to the end marker."""
        _mark(self.token, "end")
        try:
            if self._strace is not None:
                self._detach()
            return list(_window(self._read_to_end(), self.token))
        finally:
            self.close()

    def close(self) -> None:
        if self._strace is not None and self._strace.poll() is None:
            self._strace.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # a strace that ignores SIGKILL is the kernel's
                self._strace.wait(timeout=ATTACH_TIMEOUT_S)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _attach(self) -> None:
        strace = shutil.which("strace")
        if strace is None:
            raise NativeTraceError("strace is not installed (make setup installs it)")
        import tempfile

        self._scratch = Path(tempfile.mkdtemp(prefix="hil-native-trace-"))
        self.trace = self._scratch / "trace"
        _allow_tracer()
        self._strace = subprocess.Popen([strace, *_OPTIONS, "-o", str(self.trace), "-p", str(os.getpid())],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        status = Path(f"/proc/self/task/{threading.get_native_id()}/status")
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._strace.poll() is not None:
                said = (self._strace.stderr.read().decode(errors="replace").strip().splitlines()  # type: ignore[union-attr]
                        or ["no message"])[-1]
                self.close()
                raise NativeTraceError(f"strace cannot attach to this process ({said})")
            if _traced(status):
                return
            time.sleep(0.005)
        self.close()
        raise NativeTraceError(f"strace did not attach within {ATTACH_TIMEOUT_S:g} s")

    def _detach(self) -> None:
        assert self._strace is not None
        self._strace.terminate()  # strace detaches and writes out what it holds
        try:
            self._strace.wait(timeout=ATTACH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise NativeTraceError(f"strace did not detach within {ATTACH_TIMEOUT_S:g} s") from None

    def _read_to_end(self) -> list[str]:
        """The trace's lines, once the end marker is in it (strace writes each line as the call returns)."""
        end = _hex(_mark_path(self.token, "end"))
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while True:
            try:
                text = Path(str(self.trace)).read_text("latin-1")
            except OSError as exc:
                raise NativeTraceError(f"the system-call trace {self.trace} cannot be read ({exc.strerror})") from None
            if end in text:
                return text.splitlines()
            if time.monotonic() > deadline:
                raise NativeTraceError(f"the system-call trace {self.trace} never showed the window's end")
            time.sleep(0.01)


def _traced(status: Path) -> bool:
    try:
        for line in status.read_text().splitlines():
            if line.startswith("TracerPid:"):
                return line.split()[1] != "0"
    except OSError:
        pass
    return False


def _allow_tracer() -> None:
    """Under Yama's ptrace_scope 1 only an ancestor may trace a process: let our own strace child do it."""
    if not os.path.exists("/proc/sys/kernel/yama/ptrace_scope"):
        return
    import ctypes

    pr_set_ptracer, any_tracer = 0x59616D61, ctypes.c_ulong(-1)
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_ptracer, any_tracer, 0, 0, 0)


def _mark_path(token: str, which: str) -> str:
    return f"{_MARK_ROOT}-{token}-{which}"


def _mark(token: str, which: str) -> None:
    try:
        os.close(os.open(_mark_path(token, which), os.O_RDONLY))
    except OSError:
        pass  # it never exists: the failed open is the mark


def _hex(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in os.fsencode(text))


def _unhex(text: str) -> str:
    return os.fsdecode(bytes.fromhex(text.replace("\\x", "")))


def _window(lines: Sequence[str], token: str) -> Iterator[NativeOpen]:
    """The opens between the begin and end markers of `token`, unfinished calls joined to their results."""
    begin, end = _mark_path(token, "begin"), _mark_path(token, "end")
    inside = False
    pending: dict[str, str] = {}
    for line in lines:
        resumed = _RESUMED.match(line)
        if resumed:
            pid, rest = resumed.groups()
            line = pending.pop(pid, "") + rest
            if not line:
                continue
        elif line.endswith("<unfinished ...>"):
            call = _CALL.match(line)
            if call:
                pending[call.group(1)] = line[: -len("<unfinished ...>")].rstrip()
            continue
        found = _parse(line)
        if found is None:
            continue
        if found.path == begin:
            inside = True
        elif found.path == end:
            return
        elif inside:
            yield found


def _parse(line: str) -> NativeOpen | None:
    call = _CALL.match(line)
    result = _RESULT.search(line)
    if call is None or result is None:
        return None
    args = call.group(3)
    dirfd = _DIRFD.match(args)
    if dirfd:
        args = args[dirfd.end():]
    path = _PATH.match(args)
    if path is None:
        return None
    name = _unhex(path.group(1))
    flags = _FLAGS.search(args)
    fd, fd_path, error = result.groups()
    if int(fd) >= 0 and fd_path:
        full = _unhex(fd_path)  # the kernel's path of what was opened
    elif os.path.isabs(name):
        full = os.path.normpath(name)
    elif dirfd:
        full = os.path.normpath(os.path.join(_unhex(dirfd.group(1)), name))
    else:
        full = name  # a failed relative open() without a folder: kept relative, so it is never matched
    return NativeOpen(full, frozenset(flags.group(1).split("|")) if flags else frozenset(), error or "")
