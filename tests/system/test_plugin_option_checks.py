"""Every pytest option with a value is checked when the session starts (issue 42): a bad one is pytest's usage
error (exit status 4), one line naming the option (or the variable, or the ini file), and nothing is exported.

Each case is a real pytest session in a project outside the checkout whose one test would profile a model;
the truths are pytest's exit code, the lines on stderr, and the export cache's folder (empty: no export ran).
Which options exist comes from `pytest --help` itself, so an option added without a case here fails
`test_every_option_with_a_value_has_a_case`. A session whose only failure is a missing firmware source
workspace exits 6, one with a failing assertion beside it 1 (docs/pytest.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tiny_models import linear_relu_source

SUITE = 'def test_tiny(hil_profile):\n    hil_profile("tiny.py:factory", delegate="none"{own})\n'

# (arguments, what the one line must hold). Paths are the project's: `afile` a file, `adir` a folder,
# `notes.txt` a text file, nothing else exists.
CASES = [
    (["--board", "nosuch"], "unknown board 'nosuch'"),
    (["--board", " "], "--board is empty"),
    (["--hil-board-config", "missing.toml"], "--hil-board-config missing.toml: no such file"),
    (["--hil-artifacts", "afile/art"], "--hil-artifacts afile/art: afile is a file, not a folder"),
    (["--hil-iterations", "0"], "--hil-iterations must be a whole number >= 1, not 0"),
    (["--hil-iterations", "-3"], "--hil-iterations must be a whole number >= 1, not -3"),
    (["--hil-timeout", "0"], "--hil-timeout must be greater than 0"),
    (["--hil-timeout", "nan"], "--hil-timeout must be a finite number"),
    (["--hil-drift-snr-db", "inf"], "--hil-drift-snr-db must be a finite number"),
    (["--hil-inputs", "missing.pt"], "--hil-inputs missing.pt: no such file"),
    (["--hil-inputs", "adir"], "--hil-inputs adir: is a folder, not a file"),
    (["--hil-calibration", "missing.npz"], "--hil-calibration missing.npz: no such file"),
    (["--hil-firmware", "fast"], "argument --hil-firmware: invalid firmware_choice value: 'fast'"),
    (["--hil-clock-mhz", "0"], "--hil-clock-mhz must be greater than 0"),
    (["--hil-gdb", ""], "--hil-gdb is empty"),
    (["--hil-breakpoint", ""], "--hil-breakpoint is empty"),
    (["--hil-result-expr", ""], "--hil-result-expr is empty"),
    (["--hil-probe", ""], "--hil-probe is empty"),
    (["--hil-target", ""], "--hil-target is empty"),
    (["--hil-pack", "missing.pack"], "--hil-pack missing.pack: no such file"),
    (["--hil-swd-frequency", "0"], "--hil-swd-frequency must be a whole number >= 1"),
    (["--hil-port", ""], "--hil-port is empty"),
    (["--hil-baudrate", "0"], "--hil-baudrate must be a whole number >= 1"),
    (["--hil-elf", "missing.elf"], "--hil-elf"),
    (["--hil-place", ""], "--hil-place is empty"),
    (["--hil-place-timeout", "-1"], "--hil-place-timeout must be at least 0"),
    (["--hil-coordinator", ""], "--hil-coordinator is empty"),
    (["--hil-lab", "missing.toml"], "--hil-lab missing.toml: no such file"),
    (["--hil-lab-tags", ""], "--hil-lab-tags is empty"),
    (["--hil-warmup", "-1"], "--hil-warmup"),
    (["--hil-baseline", "missing"], "--hil-baseline missing: no such file or folder"),
    (["--hil-tolerance", "nan"], "--hil-tolerance"),
    (["--hil-noise-k", "-1"], "--hil-noise-k"),
    (["--hil-min-delta-us", "-1"], "--hil-min-delta-us"),
    (["--hil-history", "afile/history.db"], "--hil-history afile/history.db: afile is a file, so no folder can be made"),
    (["--hil-history", "adir"], "--hil-history adir: is a folder; name the database file"),
    (["--hil-history", "notes.txt"], "--hil-history: history database notes.txt: not an SQLite database"),
    (["--hil-budgets", "missing"], "--hil-budgets missing: no such file or folder"),
    (["--hil-openmetrics", "adir"], "--hil-openmetrics adir: is a folder; name a file"),
    (["--hil-openmetrics", "afile/m.txt"], "--hil-openmetrics afile/m.txt: afile is a file"),
    (["--hil-confirm", "-1"], "--hil-confirm"),
    (["--hil-baseline-runs", "0"], "--hil-baseline-runs"),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "tiny.py").write_text(linear_relu_source(inputs=6, outputs=3, seed=5))
    (folder / "test_tiny.py").write_text(SUITE.format(own=""))
    (folder / "afile").write_text("a file\n")
    (folder / "notes.txt").write_text("not a database\n")
    (folder / "adir").mkdir()
    return folder


def _pytest(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    cache = project.parent / "cache"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--board", "qemu", *args],
                          cwd=project, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HIL_CACHE_DIR": str(cache), **env})


def _refused(done: subprocess.CompletedProcess, project: Path, expected: str) -> None:
    """Exit 4 and one line naming the option: et-hil's `ERROR: ...`, or, for a value of the wrong type that
    pytest's own parser refuses, the one `error: argument ...` line of pytest's usage message."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    if lines and lines[0].startswith("ERROR: usage:"):
        lines = [line for line in lines if ": error: argument " in line]
    else:
        assert len(lines) == 1 and lines[0].startswith("ERROR: "), done.stderr
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "INTERNALERROR" not in done.stdout + done.stderr
    assert not (project / "hil-artifacts").exists() and not list((project.parent / "cache").rglob("*.pte"))


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a) or "empty" for a, _ in CASES])
def test_a_bad_option_value_is_one_line_before_any_export(project, args, expected):
    _refused(_pytest(project, *args), project, expected)


def test_every_option_with_a_value_has_a_case(project):
    helped = _pytest(project, "--help")
    assert helped.returncode == 0, helped.stderr
    with_value = set(re.findall(r"^\s+(--board|--hil-[a-z-]+)[ =][A-Z]", helped.stdout, re.MULTILINE))
    assert len(with_value) > 30, helped.stdout  # the groups were read
    assert with_value - {args[0] for args, _ in CASES} == set()


def test_a_value_from_the_environment_or_the_ini_file_is_named_where_it_came_from(project):
    _refused(_pytest(project, HIL_ITERATIONS="0"), project, "environment HIL_ITERATIONS must be a whole number >= 1")
    (project / "pytest.ini").write_text("[pytest]\nhil_history = adir\n")
    _refused(_pytest(project), project, f"{project / 'adir'}: is a folder")


def test_the_tests_own_iterations_win_and_each_is_checked(project):
    """A test's `iterations=` beats the option, as an argument beats a default; a bad option is refused even
    when every test passes its own, and a test's own bad value fails that test in one line, before its export."""
    (project / "test_tiny.py").write_text(SUITE.format(own=", iterations=2"))
    _refused(_pytest(project, "--hil-iterations", "0"), project, "--hil-iterations must be a whole number >= 1")
    (project / "test_tiny.py").write_text(SUITE.format(own=", iterations=0"))
    done = _pytest(project, "--hil-iterations", "3")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "ValueError" not in done.stdout and re.search(r"test_tiny.py:2: InputError: iterations must be a whole "
                                                         r"number >= 1, not 0", done.stdout), done.stdout[-3000:]
    assert not list((project.parent / "cache").rglob("*.pte"))  # refused before the export


def test_a_session_without_the_firmware_it_asked_for_exits_6_and_1_beside_a_real_failure(project, tmp_path):
    env = {"HIL_FIRMWARE": "runtime", "RT700_SDK_DIR": str(tmp_path / "no-sources"), "HIL_GIT_BASE": ""}
    done = _pytest(project, **env)
    assert done.returncode == 6, done.stdout[-3000:] + done.stderr[-2000:]
    assert "hil: tests that could not run on this machine" in done.stdout and "no firmware source workspace" in done.stdout
    (project / "test_other.py").write_text("def test_fails():\n    assert 1 == 2\n")
    done = _pytest(project, **env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 failed" not in done.stdout and "2 failed" in done.stdout
