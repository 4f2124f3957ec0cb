"""Capabilities: `[board].features`, `@pytest.mark.hil_requires(...)` and board fixtures parametrized per test,
in a real pytest session (a child process) of a project with its own board file `bench` (the QEMU board
declaring an NPU). The expected outcomes are written out by hand."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError

REPO = Path(__file__).resolve().parents[2]
TESTS = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("hil_board_config", ["qemu", "bench"], indirect=True)
    def test_each_board(hil_board_config, request):
        assert hil_board_config.name == request.node.callspec.params["hil_board_config"]

    @pytest.mark.hil_requires("npu")
    @pytest.mark.parametrize("hil_board", ["qemu", "bench"], indirect=True)
    def test_needs_npu(hil_board):
        assert hil_board.cfg.name == "bench" and "npu" in hil_board.cfg.features

    @pytest.mark.hil_requires("npu", "console")
    def test_session_board_needs_npu(hil_board_config):
        assert hil_board_config.name == "bench"

    @pytest.mark.hil_requires("nup")
    def test_misspelt():
        pass
    """
)


def _session(project: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HIL_BOARD")}
    return subprocess.run([sys.executable, "-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider", "-p",
                           "no:pytest_embedded", "--rootdir", str(project), "test_caps.py"], cwd=project,
                          capture_output=True, text=True, timeout=300, env={**clean, **env})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    bench = (REPO / "boards" / "qemu.toml").read_text().replace('name = "qemu"', 'name = "bench"')
    assert 'features = ["console"]' in bench
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "bench.toml").write_text(bench.replace('features = ["console"]', 'features = ["console", "npu"]'))
    (tmp_path / "test_caps.py").write_text(TESTS)
    return tmp_path


def _outcomes(stdout: str) -> dict[str, str]:
    return dict(re.findall(r"^test_caps\.py::(\S+) (PASSED|SKIPPED|FAILED|ERROR)", stdout, re.M))


def test_the_marker_skips_with_the_reason_and_boards_are_parametrized_per_test(project):
    done = _session(project)
    assert _outcomes(done.stdout) == {
        "test_each_board[qemu]": "PASSED", "test_each_board[bench]": "PASSED",
        "test_needs_npu[qemu]": "SKIPPED", "test_needs_npu[bench]": "PASSED",
        "test_session_board_needs_npu": "SKIPPED", "test_misspelt": "ERROR",
    }, done.stdout[-4000:]
    qemu_file = REPO / "boards" / "qemu.toml"
    assert f"board 'qemu' ({qemu_file}) lacks npu (its features: console)" in done.stdout
    assert "@pytest.mark.hil_requires('nup'): unknown feature (known: console, npu, probe, runtime)" in done.stdout


def test_on_a_board_with_the_feature_the_test_runs(project):
    done = _session(project, HIL_BOARD="bench")
    outcomes = _outcomes(done.stdout)
    assert outcomes["test_session_board_needs_npu"] == "PASSED", done.stdout[-4000:]


def test_the_shipped_boards_declare_what_they_have():
    assert load_board_config("rt700", None).features == {"npu", "probe", "console", "runtime"}
    assert load_board_config("qemu", None).features == {"console"}


def test_a_misspelt_feature_in_a_board_file_is_refused(tmp_path):
    text = (REPO / "boards" / "qemu.toml").read_text().replace('features = ["console"]', 'features = ["nup"]')
    (tmp_path / "typo.toml").write_text(text)
    with pytest.raises(BoardConfigError, match=r"typo\.toml.*\[board\]\.features must be a list of feature names"):
        load_board_config(None, tmp_path / "typo.toml")
