"""Inputs refused before any work, each with one line naming the value and the rule."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hil.config import inputs
from hil.config.board_config import load_board_config
from hil.base.errors import BoardConfigError, InputError, ModelSpecError
from hil.run.request import RunRequest, check_request

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def qemu():
    return load_board_config("qemu")


def request(board, tmp_path: Path, **changes) -> RunRequest:
    return RunRequest(**{"model": "cifar10", "board": board, "out_dir": tmp_path, **changes})


@pytest.mark.parametrize(("changes", "says"), [
    ({"iterations": 0}, "iterations must be a whole number >= 1, not 0"),
    ({"iterations": -1}, "iterations must be a whole number >= 1, not -1"),
    ({"iterations": 2.5}, "iterations must be a whole number >= 1, not 2.5"),
    ({"warmup": -3}, "warm-up must be a whole number >= 0, not -3"),
    ({"iterations": 100000}, "100000 runs: more than the 1000 board 'qemu' allows"),
    ({"iterations": 999, "warmup": 2}, "1001 runs: more than the 1000 board 'qemu' allows"),
    ({"timeout_s": 0}, "timeout (seconds) must be greater than 0, not 0"),
    ({"timeout_s": -5.0}, "timeout (seconds) must be greater than 0, not -5.0"),
    ({"timeout_s": math.inf}, "timeout (seconds) must be a finite number"),
    ({"jitter": math.nan}, "jitter must be a finite number, not nan"),
    ({"jitter": 1.0}, "jitter must be less than 1, not 1.0"),
    ({"jitter": -0.1}, "jitter must be at least 0, not -0.1"),
    ({"delegate": "no-such-backend"}, "unknown delegate 'no-such-backend'"),
])
def test_bad_run_values_are_refused_in_one_line(qemu, tmp_path: Path, changes: dict, says: str) -> None:
    with pytest.raises(InputError) as info:
        check_request(request(qemu, tmp_path, **changes))
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("clock", "says"), [
    ("fast", r"\[board\]\.clock_mhz must be a number > 0, not 'fast'"), (0, "must be a number > 0, not 0"),
    (-324, "must be a number > 0, not -324"), (math.nan, "must be a number > 0, not nan"),
    (math.inf, "must be a number > 0, not inf"), (True, "must be a number > 0, not True"),
])
def test_a_board_clock_that_is_no_positive_number_is_refused(qemu, tmp_path: Path, clock, says: str) -> None:
    with pytest.raises(BoardConfigError, match=says):
        check_request(request(qemu.with_overrides({"board.clock_mhz": clock}), tmp_path))


def test_the_model_spec_and_the_elf_are_checked_too(qemu, tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="unknown model 'nosuch'"):
        check_request(request(qemu, tmp_path, model="nosuch"))
    text = tmp_path / "notes.elf"
    text.write_text("not an image")
    with pytest.raises(InputError, match=r"is not an ELF file \(it starts with b'not '\)"):
        check_request(request(qemu.with_overrides({"firmware.elf": str(text)}), tmp_path))
    with pytest.raises(InputError, match="cannot read it: No such file or directory"):
        check_request(request(qemu.with_overrides({"firmware.elf": str(tmp_path / "none.elf")}), tmp_path))
    assert check_request(request(qemu, tmp_path)).elf is None  # QEMU without --elf: the replay image


@pytest.mark.parametrize("where", ["/proc/x", "/dev/null/run"])
def test_an_out_folder_that_cannot_be_written_is_refused(where: str) -> None:
    with pytest.raises(InputError, match=f"--out {where}: cannot create or write there"):
        inputs.writable_folder(Path(where))


def test_a_model_larger_than_the_board_keeps_for_it_is_refused_naming_the_sizes(qemu, tmp_path: Path) -> None:
    from hil.aot.export import export_model
    from hil.records.pte import pte_memory

    pte = export_model(f"{REPO / 'tests' / 'fixtures' / 'small_cnn.py'}:factory").pte_path
    memory = pte_memory(pte)  # the sizes, as executorch's own deserializer reads them
    program, planned = memory["file_bytes"], memory["methods"]["forward"]["planned_bytes"]
    assert inputs.check_model_fits(qemu, pte) == {"program_bytes": program, "planned_bytes": planned}
    small = qemu.with_overrides({"memory.program_bytes": program - 1, "memory.planned_bytes": planned})
    with pytest.raises(InputError) as info:
        inputs.check_model_fits(small, pte)
    message = str(info.value)
    assert f"program (.pte) {program} B" in message and f"exceeds memory.program_bytes {program - 1} B" in message
    assert f"program + planned memory = {program + planned} B" in message and "exceeds memory.planned_bytes" not in message
