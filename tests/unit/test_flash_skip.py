"""The RT700 flash step skips erase and program when the target already holds the image (hil.probe.flash_check).

The probe is tests/unit/fake_pyocd.py: its programmer writes the ELF's loadable segments into its memory,
read back by the harness. The images are compiled here with arm-none-eabi-gcc, so what is compared is a real
ELF's loaded bytes; `program` calls are counted from the fake's record of what the harness asked.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from fake_pyocd import FakeBench, FakeProbe

from hil.boards.rt700 import Rt700Board
from hil.config.board_config import load_board_config
from hil.probe.flash_check import READ_CHUNK
from hil.probe.pyocd_flash import flash_image

UID = "0BFJXK2W3NM3J"


def _image(tmp_path: Path, name: str, fill: int) -> Path:
    """A small Cortex-M33 ELF linked at the RT700's XSPI flash, with a table bigger than one read chunk."""
    src = tmp_path / f"{name}.c"
    src.write_text(f"const unsigned char table[{READ_CHUNK + 300}] = {{ [0 ... {READ_CHUNK + 299}] = {fill} }};\n"
                   "int main(void) { return table[7]; }\n")
    elf = tmp_path / f"{name}.elf"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-nostdlib", "-nostartfiles", "-Wl,-e,main",
                    "-Wl,--section-start=.text=0x28004000", "-o", str(elf), str(src)], check=True, timeout=60)
    return elf


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    monkeypatch.setenv("HIL_LOCK_DIR", str(tmp_path / "locks"))
    return load_board_config("rt700").with_overrides({"serial.url": "loop://", "pyocd.lock_timeout_s": 0.3,
                                                      "pyocd.probe_id": UID})


def _programs(bench: FakeBench) -> int:
    return sum(1 for call in bench.calls if call[0] == "program")


def test_an_unchanged_image_is_programmed_once_for_three_runs(monkeypatch, cfg, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    elf = _image(tmp_path, "a", 0x5A)
    reports = [flash_image(cfg, elf) for _ in range(3)]
    assert _programs(bench) == 1
    assert [r.done for r in reports] == ["programmed", "skipped", "skipped"]
    # The digest named is the loaded bytes' (the table, 0x5A over READ_CHUNK + 300 bytes, is among them).
    assert "sha256 " in reports[1].why and "read back" in reports[1].why
    assert 0x28004000 in bench.memory  # the fake programmer wrote the image where it links
    # Every skip still leaves the core halted at reset, as a flash does.
    assert sum(1 for call in bench.calls if call == ("reset", True)) == 3


def test_a_changed_image_is_programmed_again(monkeypatch, cfg, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    first, second = _image(tmp_path, "a", 0x5A), _image(tmp_path, "b", 0x5B)
    assert hashlib.sha256(first.read_bytes()).digest() != hashlib.sha256(second.read_bytes()).digest()
    flash_image(cfg, first)
    report = flash_image(cfg, second)
    assert _programs(bench) == 2 and report.done == "programmed" and "does not hold" in report.why
    assert flash_image(cfg, second).done == "skipped" and _programs(bench) == 2
    # One byte of the flash changed behind the harness's back (another tool wrote it): programmed again.
    bench.memory[max(bench.memory)] ^= 0xFF
    assert flash_image(cfg, second).done == "programmed" and _programs(bench) == 3


def test_a_target_that_cannot_be_read_back_is_programmed_every_time(monkeypatch, cfg, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)], readable=False).install(monkeypatch)
    elf = _image(tmp_path, "a", 0x5A)
    reports = [flash_image(cfg, elf) for _ in range(2)]
    assert _programs(bench) == 2
    assert all(r.done == "programmed" and "cannot be read back (TransferFaultError" in r.why for r in reports)


def test_force_programs_a_target_that_holds_the_image(monkeypatch, cfg, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    elf = _image(tmp_path, "a", 0x5A)
    flash_image(cfg, elf)
    report = flash_image(cfg, elf, force=True)
    assert _programs(bench) == 2 and report.done == "programmed" and "--force-flash" in report.why
    assert not any(call[0] == "read" for call in bench.calls[bench.calls.index(("program", UID, str(elf))) + 1:])


def test_the_board_records_what_its_flash_step_did(monkeypatch, cfg, tmp_path):
    bench = FakeBench(probes=[FakeProbe(UID)]).install(monkeypatch)
    elf = _image(tmp_path, "a", 0x5A)
    records = []
    for n in range(2):
        board = Rt700Board(cfg, tmp_path / f"run{n}")
        try:
            board.flash(elf)
            records.append(board.flash_record)
        finally:
            board.close()
    assert [r["done"] for r in records] == ["programmed", "skipped"] and _programs(bench) == 1
    json.dumps(records)  # what the manifest's `flash` section holds
