"""What a user sees of a run: each step line once, no `INFO:hil:` copy, no C++ log lines of ExecuTorch's host
runtime; those are in the run folder's host_runtime.log. The real `hil run` and a real pytest session, each in a
fresh process (ExecuTorch prints its `cpuinfo_utils.cpp` lines once per process, on the first program run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from hil.base.paths import cache_dir

RUN = [sys.executable, "-m", "hil.cli.main", "run", "--board", "qemu", "--model", "cifar10", "--iterations", "1"]
CPP_LINE = "cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version"


def _assert_each_step_once(text: str, prefix: str) -> list[str]:
    steps = [line for line in text.splitlines() if line.startswith(prefix)]
    assert steps, text[-3000:]
    twice = [line for line, count in Counter(steps).items() if count > 1]
    assert not twice, twice
    assert "INFO:hil" not in text and "cpuinfo_utils" not in text, text[-3000:]
    return steps


def _assert_logged(run_dir: Path) -> None:
    """The host runtime's C++ lines are in a log, never on the terminal: the run folder's, when the run loaded a
    program on the host runtime itself, else the export cache entry's (the numerics references are computed
    when the model is exported and kept in its entry, so a warm run loads no program on the host)."""
    logs = [run_dir / "host_runtime.log", *sorted(cache_dir().glob("models/*/*/host_runtime.log"))]
    assert any(CPP_LINE in path.read_text() for path in logs if path.is_file()), logs
    if (run_dir / "host_runtime.log").is_file():
        files = json.loads((run_dir / "manifest.json").read_text())["files"]
        assert "host_runtime.log" in files  # a file of the run: hashed, and removed by the next run into the folder


def test_hil_run_says_each_step_once_and_keeps_the_runtimes_lines_in_the_run_folder(tmp_path):
    done = subprocess.run([*RUN, "--no-delegate", "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = _assert_each_step_once(done.stderr, "[hil] ")
    assert "[hil] compare the outputs with eager PyTorch and the host runtime…" in steps
    _assert_logged(tmp_path / "run")


def test_a_cache_miss_export_with_a_delegate_draws_no_second_copy(tmp_path):
    """The export of a delegated built-in runs executorch's partitioner in-process, whose module-level
    `logging.debug` call gives the root logger a console handler mid-run: a fresh model cache makes it happen
    (the firmware images are shared with the usual cache, so nothing is rebuilt)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "firmware").symlink_to(cache_dir() / "firmware", target_is_directory=True)
    done = subprocess.run([*RUN, "--delegate", "neutron-sim", "--out", str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=900, cwd=tmp_path, env={**os.environ, "HIL_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr[-3000:]
    steps = _assert_each_step_once(done.stderr, "[hil] ")
    assert any(line.startswith("[hil] export cifar10 (cache miss") for line in steps), steps
    assert any(line.startswith("[hil] analyse the ETDump") for line in steps), steps  # the lines after the export


def test_pytest_with_a_conftest_basicconfig_shows_each_step_once_and_no_runtime_lines(tmp_path):
    (tmp_path / "conftest.py").write_text("import logging\n\nlogging.basicConfig(level=logging.INFO)\n")
    (tmp_path / "test_one.py").write_text(textwrap.dedent(
        """
        def test_one(hil_profile):
            assert hil_profile("cifar10", delegate="none", iterations=1).profile["events"]
        """
    ))
    # -rA: the captured stderr and log sections of the passed test are shown too, as after a failure.
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider", "--board", "qemu",
                           "--rootdir", str(tmp_path), "--hil-artifacts", str(tmp_path / "artifacts"), "test_one.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    steps = _assert_each_step_once(done.stdout, "    [hil] ")
    assert "    [hil] compare the outputs with eager PyTorch and the host runtime…" in steps
    (run_dir,) = (tmp_path / "artifacts").glob("*/cifar10-none")
    _assert_logged(run_dir)
