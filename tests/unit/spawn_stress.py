"""Run by tests/unit/test_spawn_stress.py in a fresh interpreter: hundreds of spawns from several threads
while other threads hold locks, import modules and allocate.

The trap it sets is the hang issue 33 suspected of `preexec_fn`: a library's
`os.register_at_fork(after_in_child=...)` hook that needs a lock another thread holds most of the
time. CPython runs such hooks in a Popen child only when a preexec_fn is given; the child then
waits forever for a lock whose holder does not exist in it, and never execs. With no Python code
between fork and exec, the hook never runs in a child and every spawn starts.

Prints one JSON line {"started": N, "exit_statuses": [...], "errors": [...]} and exits 0 only when
every spawn started and its `true` exited 0. Everything here has a deadline: a spawn START_S, the
whole run RUN_S (past it: exit status 3).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from hil.target.spawner import spawn

SPAWN_THREADS, SPAWNS_PER_THREAD = 4, 75  # 300 spawns
START_S = 10.0
RUN_S = 90.0

held = threading.Lock()  # a library's lock, held by `holder` most of the time
stop = threading.Event()


def needs_the_lock_after_fork() -> None:
    """What a library's at-fork hook may do: take its own lock to reset its state."""
    with held:
        pass


def holder() -> None:
    while not stop.is_set():
        with held:
            time.sleep(0.02)
        time.sleep(0.0005)


def logging_lock_holder() -> None:
    log = logging.getLogger("stress")
    while not stop.is_set():
        with logging._lock:  # the logging module's own lock (3.11: logging._acquireLock takes it)
            time.sleep(0.005)
        log.info("record %d", 1)  # through a handler: its lock too


def importer(folder: Path) -> None:
    names = []
    for i in range(200):
        (folder / f"stress_mod_{i}.py").write_text(f"VALUE = {i}\n" + "def f(x):\n    return x + 1\n" * 20)
        names.append(f"stress_mod_{i}")
    sys.path.insert(0, str(folder))
    while not stop.is_set():
        for name in names:
            sys.modules.pop(name, None)
            importlib.import_module(name)
            if stop.is_set():
                return


def allocator() -> None:
    while not stop.is_set():
        blocks = [bytes(1024) for _ in range(2000)]
        table = {i: str(i) * 8 for i in range(2000)}
        del blocks, table
        time.sleep(0.001)


def spawner(statuses: list[int], errors: list[str]) -> None:
    for _ in range(SPAWNS_PER_THREAD):
        try:
            child = spawn(["true"], timeout=START_S)
        except Exception as exc:  # the finding: report it and stop this thread
            errors.append(f"{type(exc).__name__}: {exc}")
            return
        statuses.append(child.wait(timeout=START_S))


def main() -> int:
    logging.basicConfig(stream=open(os.devnull, "w"), level=logging.INFO)
    os.register_at_fork(after_in_child=needs_the_lock_after_fork)
    statuses: list[int] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="spawn-stress-") as scratch:
        busy = [threading.Thread(target=holder, daemon=True), threading.Thread(target=logging_lock_holder, daemon=True),
                threading.Thread(target=importer, args=(Path(scratch),), daemon=True),
                threading.Thread(target=allocator, daemon=True)]
        workers = [threading.Thread(target=spawner, args=(statuses, errors), daemon=True)
                   for _ in range(SPAWN_THREADS)]
        for thread in busy + workers:
            thread.start()
        deadline = time.monotonic() + RUN_S
        for thread in workers:
            thread.join(max(0.0, deadline - time.monotonic()))
        stop.set()
        for thread in busy:  # before their scratch folder goes
            thread.join(5)
        hung = sum(thread.is_alive() for thread in workers)
        if hung:
            errors.append(f"{hung} spawning threads still busy after {RUN_S:g} s")
    print(json.dumps({"started": len(statuses), "exit_statuses": sorted(set(statuses)), "errors": errors}))
    sys.stdout.flush()
    ok = not errors and statuses == [0] * (SPAWN_THREADS * SPAWNS_PER_THREAD)
    os._exit(0 if ok else 3 if hung else 1)  # no teardown: a thread stuck in a spawn must not hold the exit up


if __name__ == "__main__":
    sys.exit(main())
