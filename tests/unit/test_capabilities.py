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
    done = _session(project, HIL_FIRMWARE="replay")  # the QEMU board's features then are its file's alone
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


RUNTIME_TESTS = textwrap.dedent(
    """
    import pytest


    @pytest.mark.hil_requires("runtime")
    def test_needs_runtime(hil_board_config):
        assert hil_board_config.name == "qemu"
    """
)
# The line pytest names for a test skipped by a mark (`def` + its decorator: the function's first line, 1-based).
TEST_LINE = RUNTIME_TESTS.splitlines().index('@pytest.mark.hil_requires("runtime")') + 1


def _runtime_session(project: Path, **env: str) -> subprocess.CompletedProcess:
    (project / "test_caps.py").write_text(RUNTIME_TESTS)
    unset = {k: "" for k in os.environ if k.startswith("HIL_")}  # HIL_GIT_BASE, HIL_FIRMWARE: an empty one is unset
    return _session(project, **{**unset, **env})


def test_the_qemu_board_running_the_runtime_image_has_runtime(project, tmp_path):
    workspace = tmp_path / "workspace"  # what find_workspace looks for: an assembled workspace's env file
    workspace.mkdir()
    (workspace / "workspace.env").write_text("")
    done = _runtime_session(project, RT700_SDK_DIR=str(workspace))
    assert _outcomes(done.stdout) == {"test_needs_runtime": "PASSED"}, done.stdout[-3000:]


def test_a_replaying_qemu_board_skips_at_the_tests_own_line_saying_why(project, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "workspace.env").write_text("")
    replay = _runtime_session(project, RT700_SDK_DIR=str(workspace), HIL_FIRMWARE="replay")
    assert _outcomes(replay.stdout) == {"test_needs_runtime": "SKIPPED"}, replay.stdout[-3000:]
    qemu_file = REPO / "boards" / "qemu.toml"
    assert (f"SKIPPED [1] test_caps.py:{TEST_LINE}: board 'qemu' ({qemu_file}) lacks runtime (its features: console);"
            ' runtime: its runs replay a host-made ETDump: qemu.firmware = "replay" (environment HIL_FIRMWARE)'
            in replay.stdout), replay.stdout[-3000:]
    assert "hil/plugin" not in replay.stdout
    absent = _runtime_session(project, RT700_SDK_DIR=str(tmp_path / "no-workspace"))
    assert _outcomes(absent.stdout) == {"test_needs_runtime": "SKIPPED"}, absent.stdout[-3000:]
    assert f"no firmware source workspace at {tmp_path / 'no-workspace'} (RT700_SDK_DIR)" in absent.stdout
