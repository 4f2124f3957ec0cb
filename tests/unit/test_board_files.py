"""A board file that holds only the keys it changes of a built-in board: merged over it, then checked whole.

The built-in's values are read here with tomllib from boards/*.toml itself, not through the harness."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError

BOARDS = Path(__file__).resolve().parents[2] / "boards"
QEMU = tomllib.loads((BOARDS / "qemu.toml").read_text())


def test_a_two_line_override_named_after_the_built_in_board_is_that_board_with_one_key_changed(tmp_path):
    own = tmp_path / "qemu.toml"
    own.write_text('[qemu]\nfirmware = "runtime"\n')
    cfg = load_board_config(path=own)
    assert QEMU["qemu"]["firmware"] == "auto"  # so the value below is the file's, not the built-in's
    assert (cfg.name, cfg.kind, cfg.get("qemu.firmware")) == ("qemu", "qemu", "runtime")
    assert cfg.get("qemu.icount_shift") == QEMU["qemu"]["icount_shift"]  # the rest of [qemu] is the built-in's
    assert cfg.get("debug.timeout_s") == QEMU["debug"]["timeout_s"]
    assert cfg.get("memory.ram") == QEMU["memory"]["ram"] and cfg.clock_mhz == QEMU["board"]["clock_mhz"]
    assert cfg.source == own and cfg.base == (BOARDS / "qemu.toml").resolve()
    assert cfg.origin("qemu.firmware") == f"board file {own}"
    assert cfg.origin("qemu.icount_shift") == f"built-in board file {(BOARDS / 'qemu.toml').resolve()}"


def test_extends_names_the_built_in_board_whatever_the_file_and_board_are_called(tmp_path):
    own = tmp_path / "nightly.toml"
    own.write_text('[board]\nname = "qemu-nightly"\nextends = "qemu"\n\n[debug]\ntimeout_s = 600\n\n'
                   '[firmware]\nelf = "images/{model}.elf"\n')
    cfg = load_board_config(path=own)
    assert (cfg.name, cfg.kind, cfg.get("debug.timeout_s")) == ("qemu-nightly", "qemu", 600)
    assert cfg.get("debug.gdb") == QEMU["debug"]["gdb"] and cfg.get("qemu.machine") == QEMU["qemu"]["machine"]
    # A relative path of the user's file is the user's folder's; the built-in's other keys stay.
    assert cfg.get("firmware.elf") == str(tmp_path / "images" / "{model}.elf")
    assert cfg.get("firmware.image") == QEMU["firmware"]["image"]


def test_a_board_name_of_a_built_in_board_extends_it(tmp_path):
    own = tmp_path / "mine.toml"
    own.write_text('[board]\nname = "rt700"\n\n[pyocd]\nprobe_id = "0123"\n')
    rt700 = tomllib.loads((BOARDS / "rt700.toml").read_text())
    cfg = load_board_config(path=own)
    assert (cfg.kind, cfg.get("pyocd.probe_id"), cfg.get("pyocd.target")) == ("rt700", "0123", rt700["pyocd"]["target"])


def test_a_partial_file_that_names_no_built_in_board_is_refused_saying_how_to_extend_one(tmp_path):
    own = tmp_path / "bench.toml"
    own.write_text('[qemu]\nfirmware = "runtime"\n')
    with pytest.raises(BoardConfigError) as failure:
        load_board_config(path=own)
    said = str(failure.value)
    assert said.startswith(f"board file {own}: [board].kind is missing")
    assert 'extends = "NAME"' in said and "qemu, rt700, rt700-emu" in said
    own.write_text('[board]\nextends = "qemu2"\n')
    with pytest.raises(BoardConfigError, match=r"\[board\].extends = 'qemu2' names no built-in board \(built-in boards: qemu, rt700, rt700-emu\)"):
        load_board_config(path=own)


def test_the_merged_board_is_checked_as_a_whole(tmp_path):
    own = tmp_path / "qemu.toml"
    own.write_text('[qemu]\nfirmware = "runtme"\n')  # a typo is refused, not merged
    with pytest.raises(BoardConfigError, match=r"\[qemu\].firmware must be one of 'runtime', 'replay', 'auto'"):
        load_board_config(path=own)
    own.write_text('[board]\nkind = "rt700"\nextends = "qemu"\n')  # a QEMU board is no RT700
    with pytest.raises(BoardConfigError, match="kind = 'rt700', but the built-in board 'qemu' it extends is a 'qemu' board"):
        load_board_config(path=own)


def test_a_project_board_found_by_name_extends_the_built_in_of_that_name(tmp_path):
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "qemu.toml").write_text('[aot]\ndelegate = "none"\n')
    cfg = load_board_config("qemu", project_dirs=[tmp_path])
    assert cfg.source == tmp_path / "boards" / "qemu.toml"
    assert (cfg.get("aot.delegate"), cfg.get("qemu.firmware")) == ("none", QEMU["qemu"]["firmware"])
