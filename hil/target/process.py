"""Child processes the harness owns (QEMU, gdb, pyocd gdbserver), and the guarantee that none outlives it.

Every child runs in its own session (process group), so closing it also ends anything it
spawned, and every live child sits in a module-level registry that an `atexit` hook empties:
a test that crashes, times out or is interrupted still leaves no orphan simulator or debug
server holding a port or a probe.

Neither helps when the harness is killed outright (SIGKILL, the OOM killer, a CI runner that
gives up): no Python code runs then. So every child is started through hil.target.spawner's
`spawn`, which has the kernel SIGKILL it when the harness dies, without running any Python code
between fork and exec (no Popen preexec function: why, and how, is in that module's docstring),
and within a start deadline. The child leads a session watched by hil.target.session_guard, so
what it started (a model factory's forked workers under the export child) dies with it too.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from hil.base.no_follow import no_follow
from hil.base.errors import TargetError, TimeoutExpired
from hil.target.session_guard import end_session, stat_fields
from hil.target.spawner import START_TIMEOUT_S, spawn

# Seconds a child gets to exit after SIGTERM before it is killed.
TERMINATE_GRACE_S = 2.0

# The longest sleep between two looks at a child that is being waited for (Popen.wait's own step too).
WAIT_STEP_S = 0.05

_registry_lock = threading.Lock()
_registry: list["ManagedProcess"] = []


class ManagedProcess:
    """One child process: started on demand, output kept in a log, always ended by `close()`.

    With `pipes=False` (the default) stdout and stderr go to `log_path`; with `pipes=True`
    stdin and stdout are pipes for a caller that talks to the child (gdb over MI), and only
    stderr goes to the log.
    """

    def __init__(
        self,
        argv: Sequence[str],
        name: str,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        *,
        pipes: bool = False,
    ) -> None:
        self.argv = [str(part) for part in argv]
        self.name = name
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else None
        self.pipes = pipes
        self.popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT_S) -> "ManagedProcess":
        """Start the child within `timeout` s; TargetError naming the command and the log when it cannot be
        started, TimeoutExpired when it has not started (exec'd) in time (it is killed then)."""
        if self.popen is not None:
            raise TargetError(f"{self.name}: already started (pid {self.popen.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0, opener=no_follow)
        self._log.write(f"$ {' '.join(self.argv)}\n".encode())
        env = None if self.env is None else {**os.environ, **self.env}
        try:
            self.popen = spawn(
                self.argv,
                stdin=subprocess.PIPE if self.pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if self.pipes else self._log,
                stderr=self._log,
                env=env,
                session=True,
                bufsize=0,
                timeout=timeout,
            )
        except TimeoutExpired as exc:
            self._close_log(str(exc))
            raise TimeoutExpired(f"{self.name}: {exc} (log: {self.log_path})") from None
        except OSError as exc:
            self._close_log(f"cannot start: {exc}")
            raise TargetError(f"{self.name}: cannot start '{self.argv[0]}': {exc} (log: {self.log_path})") from exc
        with _registry_lock:
            _registry.append(self)
        return self

    def _close_log(self, note: str) -> None:
        assert self._log is not None
        self._log.write(f"[{note}]\n".encode())
        self._log.close()
        self._log = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def wait(self, timeout: float) -> int:
        """Wait for the child to exit on its own; TimeoutExpired (naming it and its log) if it does not."""
        if self.popen is None:
            raise TargetError(f"{self.name}: was never started")
        try:
            return wait_exit(self.popen, timeout)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutExpired(
                f"{self.name} (pid {self.popen.pid}) still running after {timeout:g} s (log: {self.log_path})"
            ) from exc

    def close(self, grace: float = TERMINATE_GRACE_S) -> int | None:
        """End the child and its process group: SIGTERM, wait up to `grace` s, then SIGKILL.

        Safe to call twice and from the atexit hook; returns the exit status when known.
        """
        popen = self.popen
        if popen is None:
            return None
        if popen.poll() is None:
            _signal_group(popen.pid, signal.SIGTERM)
            try:
                wait_exit(popen, grace)
            except subprocess.TimeoutExpired:
                _signal_group(popen.pid, signal.SIGKILL)
                try:
                    wait_exit(popen, grace)
                except subprocess.TimeoutExpired:
                    pass  # unkillable (D state); the registry keeps it visible
        # The leader may be gone while something it spawned still runs in its group, or in another group of
        # its session (hil.target.session_guard).
        _signal_group(popen.pid, signal.SIGKILL)
        end_session(popen.pid)
        for stream in (popen.stdin, popen.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if self._log is not None:
            status = popen.poll()
            try:
                self._log.write(f"[{self.name} ended, exit status {status}]\n".encode())
                self._log.close()
            except (OSError, ValueError):
                pass
            self._log = None
        if popen.poll() is not None:
            with _registry_lock:
                if self in _registry:
                    _registry.remove(self)
        return popen.poll()

    def __enter__(self) -> "ManagedProcess":
        return self.start() if self.popen is None else self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "not started" if self.popen is None else ("alive" if self.alive else f"exited {self.returncode}")
        return f"ManagedProcess({self.name!r}, pid={self.pid}, {state})"


def wait_exit(popen: "subprocess.Popen[bytes]", timeout: float) -> int:
    """`popen.wait(timeout)`, less the quarter second CPython adds when a KeyboardInterrupt (Ctrl-C, or SIGTERM
    and SIGHUP: stop_children_on_sigterm) reaches it: Popen.wait then waits 0.25 s more for the child "under the
    common assumption that it also received the ^C" (Lib/subprocess.py, Popen.wait and `_sigint_wait_secs =
    0.25`, 3.11.7 lines 882 and 1259-1279). A managed child runs in a session of its own and never gets the
    terminal's signal, so that wait only delayed every interrupted export by 0.25 s. Raises
    subprocess.TimeoutExpired as Popen.wait does."""
    deadline = time.monotonic() + timeout
    step = 0.0005
    while (status := popen.poll()) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(popen.args, timeout)
        step = min(step * 2, remaining, WAIT_STEP_S)
        time.sleep(step)
    return status


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the child's whole process group (it is the leader: start_new_session=True)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def live_children() -> list[ManagedProcess]:
    """Children started through ManagedProcess that are still running (tests assert this is empty)."""
    with _registry_lock:
        tracked = list(_registry)
    return [child for child in tracked if child.alive]


def close_all(grace: float = 0.5) -> None:
    """End every tracked child; runs at interpreter exit so no simulator or debug server is orphaned."""
    with _registry_lock:
        tracked = list(_registry)
    for child in tracked:
        child.close(grace=grace)


def os_children(pid: int | None = None) -> list[tuple[int, str]]:
    """(pid, command name) of every process whose parent is `pid` (default: this one), from /proc.

    An independent check of the registry: it also sees children started some other way and
    ones the registry lost track of. Zombies count (they are not reaped yet).
    """
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := stat_fields(entry)) is not None:  # None: gone meanwhile
            comm, fields = stat
            if len(fields) > 1 and int(fields[1]) == parent:
                found.append((int(entry), comm))
    return found


atexit.register(close_all)


# The signals that end a run by unwinding it (KeyboardInterrupt), each with the handler Python starts
# with: only those are replaced. SIGINT's default raises a KeyboardInterrupt without a word, which left
# the manifest saying "interrupted by " (issue 32); SIGHUP (a closed terminal, an ssh session gone)
# killed the process outright, as SIGTERM did.
INTERRUPTING = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                signal.SIGHUP: signal.SIG_DFL}


def interrupted_by(signum: int) -> str:
    """How a manifest names an interrupting signal: "signal 2 (SIGINT)"."""
    return f"signal {signum} ({signal.Signals(signum).name})"


def _interrupt_on_sigterm(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(interrupted_by(signum))


def stop_children_on_sigterm() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP (Ctrl-C, a cancelled CI job, `kill`, a closed terminal) into a
    KeyboardInterrupt naming the signal, in the main thread.

    Children run in their own process groups, so a SIGTERM to the harness does not reach them,
    and the default handler exits without running `finally` blocks or atexit hooks: QEMU and the
    debug servers would be orphaned and the board lock left behind. Raising KeyboardInterrupt
    unwinds normally instead (boards close, artifacts are kept, the manifest names the signal) and
    pytest reports the interruption. A handler someone else installed is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, default in INTERRUPTING.items():
        if signal.getsignal(signum) in (default, None):
            signal.signal(signum, _interrupt_on_sigterm)
