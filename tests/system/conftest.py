"""System tests drive the `hil` command and whole pytest sessions as a user would, always on the QEMU board."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]


@pytest.fixture
def run_cli():
    """Run `hil ARGS...` in a child process with a hard timeout; returns the CompletedProcess."""

    def run(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*HIL, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )

    return run


@pytest.fixture
def qemu_board_file(tmp_path):
    """A copy of boards/qemu.toml the test may edit."""

    def make(**replacements: str) -> Path:
        text = (REPO / "boards" / "qemu.toml").read_text()
        for old, new in replacements.items():
            assert old in text, old
            text = text.replace(old, new)
        path = tmp_path / "board.toml"
        path.write_text(text)
        return path

    return make
