"""Hundreds of spawns from several threads, beside threads that hold locks, import and allocate: all start.

The run is tests/unit/spawn_stress.py in a fresh interpreter (its at-fork hook must not reach this
pytest process), bounded twice: each spawn by its start deadline, the whole run by `timeout` here.
It is the mutation this test exists for: with a preexec_fn back in hil.target.spawner, the hook
it registers runs in the children, they wait forever for a lock, and every spawning thread reports
"could not start 'true' within 10 s" (issue 33).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("spawn_stress.py")


def test_hundreds_of_spawns_from_busy_threads_all_start_and_exit() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    report = json.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else {}
    assert done.returncode == 0, (report, done.stderr[-2000:])
    # 4 spawning threads x 75 spawns each, every one a `true` that exited 0
    assert report == {"started": 300, "exit_statuses": [0], "errors": []}
