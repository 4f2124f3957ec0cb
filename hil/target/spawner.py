"""Starting a child that dies with the harness, with no Python code between fork and exec, and a deadline.

Why no Popen preexec function: Python's documentation says it is not safe in the presence of
threads, and the harness always has some (this spawner, the console readers, torch's pools). CPython's
`_posixsubprocess` (Modules/_posixsubprocess.c, do_fork_exec and subprocess_fork_exec_impl, 3.11)
runs `PyOS_AfterFork_Child()`, and with it every `os.register_at_fork(after_in_child=...)` hook a
library registered, in the child only when a preexec function is given (checked on 3.11.7: without one
neither the `before` nor the `after_in_child` hook runs). Any lock another thread held at the
fork stays held forever in the child, so such a child can block before it ever execs while the
parent's Popen waits on it for good (tests/unit/spawn_stress.py makes the old spawn do so in seconds).

How a child still dies with the harness, even one killed by SIGKILL: the command is exec'd
through a tiny lifeline, `setpriv --pdeathsig KILL -- /bin/sh -c LIFELINE_SH sh <harness pid> CMD...`.
setpriv (util-linux) asks the kernel for SIGKILL when the parent dies (`PR_SET_PDEATHSIG`, kept
across execve) and execs sh; sh checks its parent is still the harness, since one that died
between the fork and setpriv's prctl sends no signal, and execs the command. Same pid all the
way, so `Popen.pid`, killpg and the registry in hil.target.process see the command itself.
Measured: 3.4 ms per start-and-exit of /bin/true, against 0.6 ms for a bare Popen and 1.9 ms for
the old preexec function. Without a working setpriv, the same two steps run in a fresh `python -I -S`
(12 ms): a process that has exec'd, one thread, no inherited lock. `hil doctor` names which.

The kernel ties the parent-death signal to the *thread* that forked, so every fork happens on one
spawner thread that lives as long as the process. The caller waits for it with a deadline: past
it, it gets TimeoutExpired ("could not start X within N s", exit status 3), a child of the spawner
that has not exec'd is killed, and whatever Popen returns later is killed and reaped by the
spawner, never leaked.

The signal kills the command only, not what it started (ninja under cmake, the compilers under
ninja, a model's forked workers): with `session=True` the command leads a session of its own and is
exec'd through hil.target.session_guard's watcher, which kills the whole session when the command
dies, and `end_session` does the same for the harness's own exits (a timeout, Ctrl-C, close()).
"""

from __future__ import annotations

import errno
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hil.base.errors import TimeoutExpired
from hil.target.session_guard import WATCH_SIGNAL, end_session, find_sleep, guard_script

# Seconds a child may take from the call to its exec; one that takes longer is broken, not slow.
START_TIMEOUT_S = 30.0
# Seconds the spawner waits for an abandoned child it killed to be reaped.
REAP_TIMEOUT_S = 5.0
# Exit status of a lifeline that found its parent gone (nobody is left to read it).
ORPHANED_STATUS = 125
# linux/prctl.h
PR_SET_PDEATHSIG = 1

LIFELINE_SH = f'[ "$PPID" = "$1" ] || exit {ORPHANED_STATUS}; shift; exec "$@"'
# Sets the parent-death signal argv[1] and execs argv[2:]: the session watcher's, without setpriv.
PDEATHSIG_PY = (
    "import ctypes, os, sys\n"
    f"if ctypes.CDLL(None, use_errno=True).prctl({PR_SET_PDEATHSIG}, int(sys.argv[1]), 0, 0, 0) != 0:\n"
    "    sys.exit('hil watcher: prctl(PR_SET_PDEATHSIG) failed: ' + os.strerror(ctypes.get_errno()))\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)
LIFELINE_PY = (
    "import ctypes, os, sys\n"
    f"if ctypes.CDLL(None, use_errno=True).prctl({PR_SET_PDEATHSIG}, {int(signal.SIGKILL)}, 0, 0, 0) != 0:\n"
    "    sys.exit('hil lifeline: prctl(PR_SET_PDEATHSIG) failed: ' + os.strerror(ctypes.get_errno()))\n"
    f"if os.getppid() != int(sys.argv[1]):\n    os._exit({ORPHANED_STATUS})\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)
# Popen arguments that would bypass the lifeline; and any `preexec...` one, which runs Python in the child.
REFUSED_KWARGS = ("executable", "shell")
REFUSED_PREFIX = "preexec"


@dataclass(frozen=True)
class Lifeline:
    """What runs between the fork and the command: `kind` is "setpriv", "python" or "none" (not Linux)."""

    kind: str
    prefix: tuple[str, ...]
    detail: str
    # /bin/sh text that starts the session's watcher and execs "$@" (hil.target.session_guard); "" if none.
    guard: str = ""

    def argv(self, parent_pid: int, command: Sequence[str], *, session: bool = False) -> list[str]:
        """The command line that execs `command` (its first item a path) only while `parent_pid` is its parent;
        with `session`, under the watcher that kills the command's session when the command dies."""
        if self.kind == "none":
            return list(command)
        guard = ["/bin/sh", "-c", self.guard, "sh"] if session and self.guard else []
        return [*self.prefix, str(parent_pid), *guard, *command]


_lifeline_lock = threading.Lock()
_lifeline: Lifeline | None = None


def lifeline() -> Lifeline:
    """The lifeline this machine supports, found once: setpriv if it sets the signal, else Python."""
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None:
            _lifeline = find_lifeline()
        return _lifeline


def find_lifeline() -> Lifeline:
    """Look again (`hil doctor`): setpriv from PATH if it runs a command with --pdeathsig, else Python."""
    if not sys.platform.startswith("linux"):
        return Lifeline("none", (), "no parent-death signal off Linux: atexit and close() only")
    sleep, shell = find_sleep(), os.access("/bin/sh", os.X_OK)
    python_watch = (sys.executable, "-I", "-S", "-c", PDEATHSIG_PY, str(int(WATCH_SIGNAL)))
    python = Lifeline("python", (sys.executable, "-I", "-S", "-c", LIFELINE_PY),
                      f"{sys.executable} -I -S (no working setpriv on PATH; about 10 ms more per start)",
                      guard_script(python_watch, sleep) if sleep and shell else "")
    setpriv = shutil.which("setpriv")
    if setpriv is None or not shell:
        return python
    prefix = (setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", LIFELINE_SH, "sh")
    guard = guard_script((setpriv, "--pdeathsig", WATCH_SIGNAL.name[3:], "--"), sleep) if sleep else ""
    try:  # an old setpriv (before util-linux 2.33) has no --pdeathsig
        probe = subprocess.run([*prefix, str(os.getpid()), *(["/bin/sh", "-c", guard, "sh"] if guard else []),
                                "/bin/sh", "-c", "exit 0"], stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=10, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return python
    if probe.returncode != 0:
        return python
    return Lifeline("setpriv", prefix, f"{setpriv} --pdeathsig KILL", guard)


def resolve(command: str, cwd: str | os.PathLike[str] | None, env: Mapping[str, str] | None) -> str:
    """The path exec would run for `command`, as Popen finds it (the env's PATH, `cwd` for a relative path).

    Found in the parent so that a missing program is the OSError Popen raises, not a lifeline's exit 127.
    """
    if os.sep in command:
        path = os.path.abspath(os.path.join(os.fspath(cwd), command) if cwd is not None else command)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
        return path
    found = shutil.which(command, path=os.pathsep.join(os.get_exec_path(env)))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return os.path.abspath(found)


@dataclass
class _Job:
    """One Popen call handed to the spawner thread; `lock` orders its hand-back against the caller giving up."""

    argv: list[str]
    kwargs: dict[str, Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    popen: subprocess.Popen[Any] | None = None
    error: BaseException | None = None
    abandoned: bool = False
    forking: bool = False  # the spawner is inside this job's Popen
    session: bool = False  # the child leads a session that dies with it (spawn(session=True))


class _Spawner:
    """The one thread that forks (see the module docstring), started on first use and again in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._pid: int | None = None
        self._thread: threading.Thread | None = None

    def run(self, job: _Job, timeout: float, shown: str) -> subprocess.Popen[Any]:
        with self._lock:
            if self._pid != os.getpid():  # first use, or a fork of the harness: no spawner thread here yet
                self._pid, self._jobs = os.getpid(), queue.SimpleQueue()
                self._thread = threading.Thread(target=self._serve, args=(self._jobs,), name="hil-spawner",
                                                daemon=True)
                self._thread.start()
        self._jobs.put(job)
        try:
            finished = job.done.wait(max(0.0, timeout))
        except BaseException:  # Ctrl-C while waiting: the child must not outlive the call
            self._abandon(job)
            raise
        if not finished and not self._abandon(job):
            raise TimeoutExpired(f"could not start '{shown}' within {timeout:g} s; it was killed")
        if job.error is not None:
            raise job.error
        assert job.popen is not None
        return job.popen

    def _abandon(self, job: _Job) -> bool:
        """Give up on `job`; True if it finished meanwhile (its Popen is the caller's after all)."""
        with job.lock:
            if job.done.is_set():
                return True
            job.abandoned = True
            forking = job.forking
        if forking and self._thread is not None and self._thread.native_id is not None:
            _kill_unexeced(self._thread.native_id)  # this job's child only: another job's may be about to exec
        return False

    def _serve(self, jobs: queue.SimpleQueue[_Job]) -> None:
        while True:
            job = jobs.get()
            with job.lock:
                if job.abandoned:
                    continue
                job.forking = True
            popen: subprocess.Popen[Any] | None = None
            error: BaseException | None = None
            try:
                popen = subprocess.Popen(job.argv, **job.kwargs)
            except BaseException as exc:  # handed back to the caller's thread
                error = exc
            with job.lock:
                if not job.abandoned:
                    job.popen, job.error = popen, error
                    job.done.set()
                    continue
            if popen is not None:
                _reap(popen, group=bool(job.kwargs.get("start_new_session")) or job.kwargs.get("process_group") == 0,
                      session=job.session)


def _kill_unexeced(spawner_tid: int) -> None:
    """SIGKILL every child of the spawner thread still running the harness's own program, i.e. not exec'd.

    Its Popen then returns, and the spawner kills and reaps what it returned. Needs /proc's
    per-thread `children` list (CONFIG_PROC_CHILDREN); without it such a child stays until it
    execs or dies, and later starts time out behind it, each named.
    """
    try:
        children = open(f"/proc/self/task/{spawner_tid}/children", encoding="ascii").read().split()
        own = (os.readlink("/proc/self/exe"), open("/proc/self/cmdline", "rb").read())
    except OSError:
        return
    for pid in children:
        try:
            theirs = (os.readlink(f"/proc/{pid}/exe"), open(f"/proc/{pid}/cmdline", "rb").read())
            if theirs == own:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue  # gone, or a zombie: exe is unreadable then


def _reap(popen: subprocess.Popen[Any], *, group: bool, session: bool = False) -> None:
    """Kill a child whose caller gave up waiting for it (its group or session too, if it leads one) and reap it."""
    try:
        if session:
            end_session(popen.pid)
        elif group:
            os.killpg(popen.pid, signal.SIGKILL)
        else:
            popen.kill()
    except (ProcessLookupError, PermissionError):
        pass
    try:
        popen.wait(timeout=REAP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass  # unkillable (D state): nothing more a parent can do
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            stream.close()


_spawner = _Spawner()


def spawn(argv: Sequence[str], *, timeout: float = START_TIMEOUT_S, session: bool = False,
          **popen_kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen` for a child that must not outlive the harness, even one killed by SIGKILL.

    Started through the lifeline, from the spawner thread, within `timeout` s (see the module
    docstring): raises TimeoutExpired naming the command past it, OSError as Popen does when the
    program cannot be found or run. A preexec function, `executable` and `shell` are refused.
    With `session`, the child leads a new session (its pid is the session's id) and everything
    started in it dies with it; end it with `end_session(popen.pid)`.
    """
    refused = [name for name in popen_kwargs if name in REFUSED_KWARGS or name.startswith(REFUSED_PREFIX)]
    if refused:
        raise TypeError(f"spawn() does not take {', '.join(refused)}: nothing may run between fork and exec")
    if session:
        if "process_group" in popen_kwargs:
            raise TypeError("spawn(session=True) makes the child a session leader: process_group does not apply")
        popen_kwargs["start_new_session"] = True
    command = [os.fspath(part) for part in argv]
    path = resolve(command[0], popen_kwargs.get("cwd"), popen_kwargs.get("env"))
    wrapped = lifeline().argv(os.getpid(), [path, *command[1:]], session=session)
    return _spawner.run(_Job(wrapped, popen_kwargs, session=session), timeout, command[0])
