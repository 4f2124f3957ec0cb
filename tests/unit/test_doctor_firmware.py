"""`hil doctor --board B` checks what B's firmware choice needs: the source workspace at its pins, cmake, ninja,
the compilers; each missing part is named with the command that brings it, and the doctor exits 3.

The workspaces here are written by hand from firmware/rt700/pins.toml read with tomllib (a stamp per pin,
as a checkout holds it), never by the code under test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from stamped_workspace import PINS, write_workspace

from hil.base.paths import REPO_ROOT
from hil.cli.main import main

HINT = "`hil sources`"


def _doctor(capsys, *args: str) -> tuple[int, str]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def _line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if f" {name}:" in line)


def _fix(text: str, name: str) -> str:
    lines = text.splitlines()
    return lines[lines.index(_line(text, name)) + 1]


def _board(tmp_path: Path, firmware: str) -> Path:
    text = (REPO_ROOT / "boards" / "qemu.toml").read_text()
    assert 'firmware = "auto"' in text
    board = tmp_path / "board.toml"
    board.write_text(text.replace('firmware = "auto"', f'firmware = "{firmware}"'))
    return board


@pytest.fixture
def no_base(monkeypatch):
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)


def test_a_runtime_board_without_sources_is_missing_them_with_the_command(tmp_path, monkeypatch, capsys, no_base):
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    code, text = _doctor(capsys, "--board-config", str(_board(tmp_path, "runtime")))
    assert code == 3
    assert "MISSING" in _line(text, "firmware sources") and str(tmp_path / "no-sdk") in _line(text, "firmware sources")
    assert HINT in _fix(text, "firmware sources") and "`make " not in text
    assert text.strip().splitlines()[-1].startswith("hil doctor: MISSING firmware sources")
    for tool in ("cmake", "ninja", "arm-none-eabi-g++", "host C compiler"):
        assert _line(text, tool).lstrip().startswith("ok"), tool  # this machine has them, with their versions
    assert "cmake version 3." in _line(text, "cmake")


def test_auto_without_sources_is_a_note_but_hil_git_base_makes_them_required(tmp_path, monkeypatch, capsys, no_base):
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    code, text = _doctor(capsys, "--board", "qemu")
    assert code == 0 and _line(text, "firmware sources").lstrip().startswith("note")
    assert "replay image" in _line(text, "firmware sources")
    monkeypatch.setenv("HIL_GIT_BASE", str(tmp_path / "mirror"))  # the run would assemble and build: it must be able to
    code, text = _doctor(capsys, "--board", "qemu")
    assert code == 3 and "MISSING" in _line(text, "firmware sources") and HINT in _fix(text, "firmware sources")


def test_a_replay_board_needs_no_build_tools(tmp_path, monkeypatch, capsys, no_base):
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    code, text = _doctor(capsys, "--board-config", str(_board(tmp_path, "replay")))
    assert code == 0 and " firmware sources:" not in text and " ninja:" not in text


def test_a_workspace_at_other_pins_is_missing_naming_the_repository_and_both_commits(
        tmp_path, monkeypatch, capsys, no_base):
    et = next(pin for pin in PINS if pin["repo"] == "pytorch/executorch")
    monkeypatch.setenv("RT700_SDK_DIR", str(write_workspace(tmp_path / "ws")))
    code, text = _doctor(capsys, "--board-config", str(_board(tmp_path, "runtime")))
    assert code == 0 and _line(text, "firmware sources").lstrip().startswith("ok"), text
    write_workspace(tmp_path / "ws", moved="pytorch/executorch")
    code, text = _doctor(capsys, "--board-config", str(_board(tmp_path, "runtime")))
    line = _line(text, "firmware sources")
    assert code == 3 and "MISSING" in line and f"pytorch/executorch at 000000000000, pinned {et['commit'][:12]}" in line
    assert HINT in _fix(text, "firmware sources")


def test_each_missing_build_tool_is_named_with_its_package(tmp_path, monkeypatch, capsys, no_base):
    """A PATH holding every tool of this machine but cmake and ninja."""
    monkeypatch.setenv("RT700_SDK_DIR", str(write_workspace(tmp_path / "ws")))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("gdb-multiarch", "arm-none-eabi-gcc", "arm-none-eabi-g++", "qemu-system-arm", "cc", "setpriv", "git"):
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    code, text = _doctor(capsys, "--board-config", str(_board(tmp_path, "runtime")))
    assert code == 3
    assert "MISSING" in _line(text, "cmake") and "apt-get install cmake (3.24 or later)" in _fix(text, "cmake")
    assert "MISSING" in _line(text, "ninja") and "apt-get install ninja-build" in _fix(text, "ninja")
    assert text.strip().splitlines()[-1].startswith("hil doctor: MISSING cmake, ninja")


def test_the_rt700_board_checks_cmake_and_the_cross_gxx(tmp_path, monkeypatch, capsys, no_base):
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    _, text = _doctor(capsys, "--board", "rt700")
    assert _line(text, "cmake").lstrip().startswith("ok") and "arm-none-eabi-g++ (" in _line(text, "arm-none-eabi-g++")
    assert " ninja:" not in text  # rt700.mk builds with CMake's default generator
