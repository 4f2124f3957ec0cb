"""Two pytest sessions sharing one `--hil-artifacts` folder and one `--hil-history`: each records its own runs,
and a run refused because the other session's run holds the folder is recorded nowhere, never as a failed row
carrying the other session's figures and folder.

Three real sessions run one test id, whose run folder is `art/<test>/run` in all of them:
  first:  runs to the end (a manifest and figures in the folder, a passed row);
  second: its model's export waits (a file barrier) while its run holds the folder's lock;
  third:  starts meanwhile, its run is refused (the folder is busy), its test fails; then the second goes on.
The history must hold the first's and the second's rows, both passed, and nothing of the third.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tiny_models import linear_relu_source

SUITE = textwrap.dedent(
    """
    import os

    def test_shared(hil_profile):
        run = hil_profile(os.environ["SHARED_MODEL"], iterations=2, subdir="run")
        assert run.profile["totals_us"]["method_execute"] > 0
    """
)
# The second session's model: says it started, then waits for the test's word (the folder stays locked).
BARRIER = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    _plain_factory = factory

    def factory():
        Path(os.environ["SHARED_STARTED"]).write_text("started")
        deadline = time.monotonic() + 300
        while not os.path.exists(os.environ["SHARED_GO"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        return _plain_factory()
    """
)


def _session(tmp_path: Path, model: Path, **extra_env: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_shared.py", "--board", "qemu",
            "--hil-artifacts", "art", "--hil-history", str(tmp_path / "history.db"), "--rootdir", str(tmp_path)]


def test_a_run_refused_in_a_shared_folder_is_not_recorded_and_each_session_keeps_its_rows(tmp_path: Path) -> None:
    (tmp_path / "test_shared.py").write_text(SUITE)
    plain, waiting = tmp_path / "plain.py", tmp_path / "waiting.py"
    plain.write_text(linear_relu_source(inputs=12, outputs=6, seed=4))
    waiting.write_text(linear_relu_source(inputs=12, outputs=6, seed=5) + BARRIER)
    started, go = tmp_path / "started", tmp_path / "go"
    env = {**os.environ, "SHARED_STARTED": str(started), "SHARED_GO": str(go)}

    first = subprocess.run(_session(tmp_path, plain), cwd=tmp_path, capture_output=True, text=True, timeout=900,
                           env={**env, "SHARED_MODEL": f"{plain}:factory"})
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]

    second = subprocess.Popen(_session(tmp_path, waiting), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env={**env, "SHARED_MODEL": f"{waiting}:factory"})
    try:
        deadline = time.monotonic() + 600
        while not started.exists():
            assert second.poll() is None and time.monotonic() < deadline, "the second session never began its export"
            time.sleep(0.2)
        third = subprocess.run(_session(tmp_path, plain), cwd=tmp_path, capture_output=True, text=True, timeout=900,
                               env={**env, "SHARED_MODEL": f"{plain}:factory"})
        assert third.returncode == 1 and "is in use by" in third.stdout, third.stdout[-3000:] + third.stderr[-2000:]
        go.write_text("go")
        said, _ = second.communicate(timeout=900)
    finally:
        go.write_text("go")
        if second.poll() is None:
            second.kill()
            second.wait(timeout=30)
    assert second.returncode == 0, said[-3000:]

    with sqlite3.connect(tmp_path / "history.db") as conn:
        rows = conn.execute("SELECT test_id, passed, artifacts FROM runs ORDER BY id").fetchall()
    assert [(test_id, passed) for test_id, passed, _ in rows] == [("test_shared.py::test_shared", 1)] * 2, rows
