"""An et-hil option naming a path outside the project never moves pytest's rootdir or loses its ini file (issue 42).

pytest finds both before it knows the plugin's options, so the value of `--hil-history /elsewhere/h.db` read
as a test path, and once that file existed the rootdir became the common ancestor. Checked with pytest's own
words (its header's `rootdir:` and `configfile:` lines, its node ids) in sessions that only collect, with the
checkout's pytest; tests/system/test_nightly_fills_itself.py runs whole nights so under the wheel user's pytest.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_a.py").write_text("def test_a(hil_board_config):\n    pass\n")
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nhil_iterations = "2"\n')
    (elsewhere / "art").mkdir(parents=True)
    conn = sqlite3.connect(elsewhere / "h.db")  # an existing database: what pytest took for a test path
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    return project, elsewhere


def _collect(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "--board", "qemu",
                           *args], cwd=project, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HIL_CACHE_DIR": str(project.parent / "cache")})


@pytest.mark.parametrize("option", ["--hil-history", "--hil-artifacts"])
def test_a_path_outside_the_project_leaves_rootdir_and_ini_file_alone(layout, option):
    project, elsewhere = layout
    value = str(elsewhere / ("h.db" if option == "--hil-history" else "art"))
    for args in ([option, value], [option, value, "tests"], [f"{option}={value}"]):
        done = _collect(project, *args)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert f"rootdir: {project}\n" in done.stdout or f"rootdir: {project}," in done.stdout, done.stdout[:800]
        assert "configfile: pyproject.toml" in done.stdout, done.stdout[:800]
        assert "<Module test_a.py>" in done.stdout and "<Dir tests>" in done.stdout, done.stdout[-2000:]
