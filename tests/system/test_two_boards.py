"""One suite, two boards, one pytest run: `hil_board_config` parametrized indirectly, and `hil_profile`
follows it. Both boards are QEMU (the shipped one and a project's copy named `bench`); each run's
manifest.json, written by the pipeline, says which board it ran on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("hil_board_config", ["qemu", "bench"], indirect=True)
    def test_cifar10(hil_profile):
        assert hil_profile("cifar10", delegate="none", iterations=1).profile["events"]
    """
)


def test_a_suite_covers_two_boards_in_one_run(tmp_path):
    (tmp_path / "boards").mkdir()
    bench = (REPO / "boards" / "qemu.toml").read_text().replace('name = "qemu"', 'name = "bench"')
    (tmp_path / "boards" / "bench.toml").write_text(bench)
    (tmp_path / "test_suite.py").write_text(SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           "test_suite.py"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-4000:]
    boards = {}
    for manifest in (tmp_path / "hil-artifacts").glob("*/cifar10-none/manifest.json"):
        boards[manifest.parent.parent.name] = json.loads(manifest.read_text())["board"]
    assert sorted(boards.values()) == ["bench", "qemu"], boards
    assert all(board in name for name, board in boards.items()), boards  # each test id names its board
