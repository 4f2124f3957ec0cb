"""Paths written in a project's tests are the project's: `hil_profile`'s model file and inputs file, a board
file a test parametrizes, the project's budgets/ folder resolve against pytest's rootdir (the folder of its ini
file here), as pytest's own paths do, whatever folder pytest is started from. A real session (a child process)
started from the project's tests/ folder; the `hil` command keeps paths relative to the current folder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
TESTS = textwrap.dedent(
    """
    from pathlib import Path

    import pytest

    ROOT = Path(__file__).resolve().parents[1]


    def test_a_model_file_from_the_rootdir(hil_profile):
        # Refused on its delegate: the model file was found first (hil.run.request.check_request's order).
        with pytest.raises(Exception, match="unknown delegate 'bogus'"):
            hil_profile("tests/models.py:factory", delegate="bogus")


    def test_an_inputs_file_from_the_rootdir(hil_profile):
        with pytest.raises(Exception) as info:
            hil_profile("cifar10", delegate="none", inputs_file="data/inputs.pt", iterations=1)
        assert str(ROOT / "data" / "inputs.pt") in str(info.value) and "refused before flashing" in str(info.value)


    @pytest.mark.parametrize("hil_board_config", ["boards/bench.toml"], indirect=True)
    def test_a_board_file_from_the_rootdir(hil_board_config):
        assert hil_board_config.name == "bench"
        assert hil_board_config.source == ROOT / "boards" / "bench.toml"
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    import torch

    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_paths.py").write_text(TESTS)
    (tmp_path / "tests" / "models.py").write_text("import torch\n\n\ndef factory():\n    return torch.nn.ReLU(), (torch.zeros(2),)\n")
    (tmp_path / "boards").mkdir()
    bench = (REPO / "boards" / "qemu.toml").read_text().replace('name = "qemu"', 'name = "bench"')
    (tmp_path / "boards" / "bench.toml").write_text(bench)
    (tmp_path / "data").mkdir()
    torch.save(torch.zeros(2, 2), tmp_path / "data" / "inputs.pt")  # cifar10 takes (1, 3, 32, 32): refused
    return tmp_path


def _pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:pytest_embedded",
                           "--board", "qemu", *args], cwd=folder, capture_output=True, text=True, timeout=300, env=ENV)


def test_paths_in_tests_resolve_against_the_rootdir_from_a_subfolder(project):
    done = _pytest_in(project / "tests", "--hil-artifacts", str(project / "artifacts"), "test_paths.py")
    assert f"rootdir: {project}" in done.stdout
    assert done.returncode == 0, done.stdout[-4000:]
    assert done.stdout.count(" PASSED") == 3


def test_the_projects_budgets_folder_is_found_from_a_subfolder(project):
    (project / "budgets").mkdir()
    (project / "budgets" / "qemu.toml").write_text("[cifar10\n")
    done = _pytest_in(project / "tests", "test_paths.py")
    assert done.returncode != 0
    assert f"budget file {project / 'budgets' / 'qemu.toml'}:" in done.stdout + done.stderr
