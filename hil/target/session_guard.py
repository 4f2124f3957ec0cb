"""A child's whole session dies with it: the build tools' own children (ninja, the compilers) included.

Why a session and not a process group: ninja starts every compiler in a process group of its own
(`POSIX_SPAWN_SETPGROUP`, so that Ctrl-C reaches ninja only), so killpg of cmake's group left cc1,
as and ld running; a model factory's `multiprocessing` children are in no group of ours either. All
of them stay in the session the guarded command leads (spawn(session=True) starts it with
start_new_session; none of the tools we run calls setsid). A session has no kill(2): its members
are found in /proc (field 6 of /proc/PID/stat) and killed one by one, again until none is left,
since a dying parent may have forked meanwhile.

Why a watcher: the kernel's parent-death signal reaches the harness's own child only, so a harness
killed by SIGKILL (no Python runs) took cmake with it and left ninja and the compilers running for
minutes (issue 32). So the guarded command forks, before it execs, a small /bin/sh watcher whose own
parent-death signal (SIGURG) comes when the command dies, by the harness's lifeline or any other
way; the watcher then kills every process of the session. SIGURG because its default action is to
ignore: one that arrives before the watcher's trap is set is lost harmlessly, and the watcher reads
its parent from /proc after setting the trap, so a command that died before is caught too.

The command itself keeps everything: it is exec'd (same pid for Popen, killpg and
hil.target.process's registry), its stdin, signal dispositions and exit status are its own. The
watcher holds no file of the command's (its stdin and output are /dev/null), ignores SIGTERM, SIGINT
and SIGHUP (ManagedProcess.close's killpg), and blocks in `wait` on a `sleep`. It is an unexpected
child of the command: a program that waits for all its children until ECHILD would wait for it (none
of ours does), and a command whose main thread exits while others run (none of ours) sets it off.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import time
from collections.abc import Sequence

# The watcher's parent-death signal: ignored by default (see the module docstring).
WATCH_SIGNAL = signal.SIGURG
# Rounds of killing a session gets before the rest is left (a process in D state cannot be killed).
KILL_ROUNDS = 200
# Seconds between two rounds in the harness (a killed process takes a moment to become a zombie).
ROUND_PAUSE_S = 0.005

# $1: the command's pid, which is the session's id (it leads the session). `reap` kills the session's
# live members but itself, round after round, until a round finds none.
WATCH_SH = f"""s=$1
reap() {{
  trap '' {WATCH_SIGNAL.name[3:]}
  r=0
  while [ $r -lt {KILL_ROUNDS} ]; do
    n=0
    for d in /proc/[0-9]*; do
      [ "$d" = "/proc/$$" ] && continue
      read -r l 2>/dev/null <"$d/stat" || continue
      set -- ${{l##*) }}
      if [ "$4" = "$s" ] && [ "$1" != Z ] && [ "$1" != X ]; then kill -KILL "${{d#/proc/}}" 2>/dev/null && n=1; fi
    done
    [ $n = 0 ] && exit 0
    r=$((r + 1))
  done
  exit 1
}}
trap '' TERM INT HUP
trap reap {WATCH_SIGNAL.name[3:]}
read -r l <"/proc/$$/stat"
set -- ${{l##*) }}
[ "$2" = "$s" ] || reap
while :; do SLEEP 3600 & wait $!; done
"""


def find_sleep() -> str | None:
    """The `sleep` the watcher waits on: from PATH, else coreutils' usual places."""
    return shutil.which("sleep") or next((p for p in ("/usr/bin/sleep", "/bin/sleep") if os.access(p, os.X_OK)), None)


def guard_script(watch_prefix: Sequence[str], sleep: str) -> str:
    """The /bin/sh text that starts the watcher (under `watch_prefix`, which sets its parent-death signal
    and execs the rest) in the background and execs the command, "$@", in the foreground."""
    watcher = [*watch_prefix, "/bin/sh", "-c", WATCH_SH.replace("SLEEP", shlex.quote(sleep)), "sh"]
    return f'{shlex.join(watcher)} "$$" </dev/null >/dev/null 2>&1 & exec "$@"'


def stat_fields(pid: int | str) -> tuple[str, list[str]] | None:
    """(command name, the fields after it) of /proc/PID/stat, None when it is gone. Fields: state, ppid,
    pgrp, session, ... The name may hold spaces and parentheses, so it is split at the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    return text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()


def session_members(sid: int) -> list[int]:
    """Pids of the live processes (zombies left out) of session `sid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := stat_fields(entry)) is not None:
            fields = stat[1]
            if len(fields) > 3 and fields[3] == str(sid) and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def end_session(sid: int) -> bool:
    """SIGKILL every process of session `sid`, again until none is alive; False if some could not be ended."""
    if not os.path.isdir("/proc"):
        return True
    for _ in range(KILL_ROUNDS):
        members = [pid for pid in session_members(sid) if pid != os.getpid()]
        if not members:
            return True
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(ROUND_PAUSE_S)
    return False
