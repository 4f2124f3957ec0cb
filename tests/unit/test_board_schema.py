"""Board files are checked when read: unknown sections and keys, wrong types, impossible values.

The expected messages are written out here by hand from the shipped board files' keys; the CLI
cases run the real `hil` in a child process, as a user would meet the error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError
from hil.base.paths import BOARDS_DIR

QEMU_TOML = (BOARDS_DIR / "qemu.toml").read_text()


def _board(tmp_path: Path, old: str, new: str, name: str = "board.toml") -> Path:
    assert old in QEMU_TOML, old
    path = tmp_path / name
    path.write_text(QEMU_TOML.replace(old, new))
    return path


@pytest.mark.parametrize(("old", "new", "message"), [
    ("clock_mhz = 324", "clock_mz = 324",
     r"unknown key 'clock_mz' in \[board\] \(did you mean 'clock_mhz'\?"),
    ("[qemu]\n", "[qemuu]\n", r"unknown section \[qemuu\] \(did you mean 'qemu'\?"),
    ("timeout_s = 120", 'timeout_s = "120"', r"\[debug\]\.timeout_s must be a number > 0, not '120'"),
    ("timeout_s = 120", "timeout_s = 0", r"\[debug\]\.timeout_s must be a number > 0, not 0"),
    ("clock_mhz = 324", "clock_mhz = -1", r"\[board\]\.clock_mhz must be a number > 0, not -1"),
    ("clock_mhz = 324", "clock_mhz = true", r"\[board\]\.clock_mhz must be a number > 0, not True"),
    ('kind = "qemu"', 'kind = "qemo"', r"\[board\]\.kind must be one of 'qemu', 'rt700', 'rt700-emu', not 'qemo'"),
    ("ram = [[0x10000000, 0x400000], [0x38000000, 0x400000]]", "ram = [[0x10000000]]",
     r"\[memory\]\.ram must be a list of \[start, size\] pairs"),
    ("jitter = 0.01", "jitter = 2", r"\[simulation\]\.jitter must be a number >= 0 and < 1, not 2"),
])
def test_a_bad_board_file_is_refused_naming_file_key_and_expectation(tmp_path, old, new, message):
    path = _board(tmp_path, old, new)
    with pytest.raises(BoardConfigError, match=message) as failure:
        load_board_config(path=path)
    assert str(path) in str(failure.value)


def test_the_shipped_board_files_pass():
    for name in ("qemu", "rt700"):
        assert load_board_config(name).kind == name


def test_a_missing_clock_is_an_error_where_it_is_needed_never_zero(tmp_path):
    cfg = load_board_config(path=_board(tmp_path, "clock_mhz = 324\n", ""))
    with pytest.raises(BoardConfigError, match="board.clock_mhz"):
        cfg.clock_mhz


def test_overrides_are_checked_like_the_file():
    with pytest.raises(BoardConfigError, match=r"\[board\]\.clock_mhz must be a number > 0, not 0"):
        load_board_config("qemu").with_overrides({"board.clock_mhz": 0.0})


def test_relative_paths_are_taken_from_the_board_files_own_folder(tmp_path):
    board = tmp_path / "lab" / "boards" / "bench.toml"
    board.parent.mkdir(parents=True)
    text = (BOARDS_DIR / "rt700.toml").read_text()
    for old, new in (('elf = ""', 'elf = "images/{model}.elf"'),
                     ('pack = ""', 'pack = "packs/rt798.pack"'), ('mcux_sdk = ""', 'mcux_sdk = "../sdk"'),
                     ('armgcc_dir = ""', 'armgcc_dir = "/opt/gcc"')):
        assert old in text, old
        text = text.replace(old, new)
    board.write_text(text)
    cfg = load_board_config(path=board)
    folder = tmp_path / "lab" / "boards"
    assert cfg.get("firmware.elf") == str(folder / "images" / "{model}.elf")
    assert cfg.get("pyocd.pack") == str(folder / "packs" / "rt798.pack")
    assert cfg.get("paths.mcux_sdk") == str(tmp_path / "lab" / "sdk")
    assert cfg.get("paths.armgcc_dir") == "/opt/gcc" and cfg.get("paths.neutron_lib_dir") == ""


def test_boards_are_found_in_hil_boards_dir_then_the_project_then_the_package(tmp_path, monkeypatch):
    env_dir, project = tmp_path / "env-boards", tmp_path / "project"
    (project / "boards").mkdir(parents=True)
    env_dir.mkdir()
    (project / "boards" / "mine.toml").write_text(QEMU_TOML.replace('name = "qemu"', 'name = "mine"'))
    (env_dir / "qemu.toml").write_text(QEMU_TOML.replace("clock_mhz = 324", "clock_mhz = 100"))
    monkeypatch.chdir(tmp_path)
    assert load_board_config("mine", project_dirs=[project]).name == "mine"
    assert load_board_config("qemu").clock_mhz == 324  # the built-in one
    monkeypatch.setenv("HIL_BOARDS_DIR", str(env_dir))
    assert load_board_config("qemu").clock_mhz == 100  # HIL_BOARDS_DIR comes first
    with pytest.raises(BoardConfigError, match=r"unknown board 'nope'.*known boards: mine, qemu, rt700"):
        load_board_config("nope", project_dirs=[project])


@pytest.mark.parametrize("command", ["doctor", "run"])
def test_the_cli_refuses_a_misspelt_key_at_once_with_exit_2(tmp_path, command):
    path = _board(tmp_path, "clock_mhz = 324", "clock_mz = 324")
    extra = ["--model", "cifar10", "--out", str(tmp_path / "run")] if command == "run" else []
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "hil.cli.main", command, "--board-config", str(path), *extra],
                          capture_output=True, text=True, timeout=60, env=os.environ.copy())
    took = time.monotonic() - start
    assert done.returncode == 2, done.stderr
    assert "clock_mz" in done.stderr and str(path) in done.stderr and "Traceback" not in done.stderr
    assert took < 10, f"{took:.1f} s: the board file must be checked before anything heavy is imported"
