"""Two pytest sessions sharing one `--hil-artifacts` folder and one `--hil-history`: each records its own runs,
and a run refused because the other session's run holds the folder is recorded nowhere, never as a failed row
carrying the other session's figures and folder.

Both sessions run the same test file, so one test id, whose run folder is `art/<test>/run` in both:
  first:  its model's export waits (a file barrier) while its run holds the folder's lock;
  second: starts meanwhile; its run is refused (the folder is busy), and its test waits until the first session
          has finished (its manifest and figures now in the folder) before it fails: the race the audit met,
          made certain.
Each session also runs a test into a folder of its own. The history must hold the first session's two rows and
the second session's own one, all passed, and no row of the refused run.
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
    import os, time
    from pathlib import Path

    def test_shared(hil_profile):
        try:
            hil_profile(os.environ["SHARED_MODEL"], iterations=2, subdir="run")
        finally:
            if os.environ.get("SHARED_REFUSED"):  # the second session: fail only once the first has finished
                Path(os.environ["SHARED_REFUSED"]).write_text("refused")
                deadline = time.monotonic() + 600
                while not os.path.exists(os.environ["SHARED_FIRST_DONE"]) and time.monotonic() < deadline:
                    time.sleep(0.1)

    def test_own(hil_profile):
        hil_profile(os.environ["SHARED_MODEL"], iterations=2, subdir="own-" + os.environ["SHARED_TAG"])
    """
)
# The first session's model: says it started, then waits for the test's word (the folder stays locked).
BARRIER = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    _plain_factory = factory

    def factory():
        if not os.path.exists(os.environ["SHARED_GO"]):
            Path(os.environ["SHARED_STARTED"]).write_text("started")
        deadline = time.monotonic() + 600
        while not os.path.exists(os.environ["SHARED_GO"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        return _plain_factory()
    """
)


def _session(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_shared.py", "--board", "qemu",
            "--hil-artifacts", "art", "--hil-history", str(tmp_path / "history.db"), "--rootdir", str(tmp_path)]


def _wait_for(path: Path, session: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 600
    while not path.exists():
        assert session.poll() is None and time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.2)


def test_a_run_refused_in_a_shared_folder_is_not_recorded_and_each_session_keeps_its_rows(tmp_path: Path) -> None:
    (tmp_path / "test_shared.py").write_text(SUITE)
    waiting, plain = tmp_path / "waiting.py", tmp_path / "plain.py"
    waiting.write_text(linear_relu_source(inputs=12, outputs=6, seed=5) + BARRIER)
    plain.write_text(linear_relu_source(inputs=12, outputs=6, seed=4))
    started, go, refused, first_done = (tmp_path / name for name in ("started", "go", "refused", "first_done"))
    env = {**os.environ, "SHARED_STARTED": str(started), "SHARED_GO": str(go), "SHARED_FIRST_DONE": str(first_done)}
    sessions: list[subprocess.Popen[str]] = []
    try:
        first = subprocess.Popen(_session(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, env={**env, "SHARED_MODEL": f"{waiting}:factory", "SHARED_TAG": "first"})
        sessions.append(first)
        _wait_for(started, first, "the first session's export")
        second = subprocess.Popen(_session(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env={**env, "SHARED_MODEL": f"{plain}:factory", "SHARED_TAG": "second",
                                                  "SHARED_REFUSED": str(refused)})
        sessions.append(second)
        _wait_for(refused, second, "the second session's refusal")
        go.write_text("go")
        first_said, _ = first.communicate(timeout=900)
        first_done.write_text("done")
        second_said, _ = second.communicate(timeout=900)
    finally:
        go.write_text("go")
        first_done.write_text("done")
        for session in sessions:
            if session.poll() is None:
                session.kill()
                session.wait(timeout=30)
    assert first.returncode == 0, first_said[-3000:]
    assert second.returncode == 1 and "1 failed, 1 passed" in second_said, second_said[-3000:]
    assert "is in use by" in second_said, second_said[-3000:]

    with sqlite3.connect(tmp_path / "history.db") as conn:
        rows = conn.execute("SELECT test_id, passed, artifacts FROM runs ORDER BY id").fetchall()
    assert sorted((test_id, passed, Path(artifacts).name) for test_id, passed, artifacts in rows) == [
        ("test_shared.py::test_own", 1, "own-first"), ("test_shared.py::test_own", 1, "own-second"),
        ("test_shared.py::test_shared", 1, "run")], rows
