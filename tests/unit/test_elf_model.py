"""The image check: an ELF whose .modeldata is not the run's .pte is refused, by name and sha256; on QEMU an
ELF is told apart (a program in it: runtime; `hil_replay_runs`: replay) from its own symbol table."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from hil.base.errors import BoardConfigError
from hil.cli.main import exit_code_for
from hil.firmware.elf_model import check_image_carries, embedded_model, qemu_image_kind
from hil.firmware.model_array import pte_to_c_array


def _elf_with_model(tmp_path: Path, model: bytes) -> Path:
    """A real Cortex-M33 object+link carrying `model` in .modeldata, as the RT700 build makes it."""
    source = tmp_path / "model.c"
    source.write_text(pte_to_c_array(model) + "\nint main(void) { return model_pte[0]; }\n")
    elf = tmp_path / "fw.elf"
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-nostdlib", "-nostartfiles", "-Wl,-e,main",
         "-Wl,--section-start=.modeldata=0x20430000", str(source), "-o", str(elf)],
        check=True, capture_output=True, timeout=60,
    )
    return elf


def test_the_right_model_passes_and_a_different_one_is_refused(tmp_path):
    model = os.urandom(3000)
    elf = _elf_with_model(tmp_path, model)
    assert embedded_model(elf)[: len(model)] == model
    pte = tmp_path / "model.pte"
    pte.write_bytes(model)
    assert check_image_carries(elf, pte, board="rt700") is True
    pte.write_bytes(os.urandom(3000))
    with pytest.raises(BoardConfigError, match="carries a different model") as failure:
        check_image_carries(elf, pte, board="rt700")
    assert str(elf) in str(failure.value) and "hil rt700-image --model" in str(failure.value)


def test_an_image_without_modeldata_is_not_judged(tmp_path):
    elf = _elf_with_model(tmp_path, b"x" * 64)
    subprocess.run(["arm-none-eabi-objcopy", "--remove-section=.modeldata", str(elf)], check=True, timeout=60)
    pte = tmp_path / "model.pte"
    pte.write_bytes(b"y" * 64)
    assert check_image_carries(elf, pte, board="rt700") is False


def test_a_qemu_elf_carrying_the_runs_program_is_a_runtime_image(tmp_path):
    model = os.urandom(3001)
    elf = _elf_with_model(tmp_path, model)
    pte = tmp_path / "model.pte"
    pte.write_bytes(model)
    assert qemu_image_kind(elf, pte, board="qemu") == "runtime"


def test_a_qemu_elf_carrying_another_program_is_refused_naming_both_files_and_hashes(tmp_path):
    carried = os.urandom(2000)
    elf = _elf_with_model(tmp_path, carried)
    pte = tmp_path / "other.pte"
    pte.write_bytes(carried[:1999] + bytes([carried[1999] ^ 1]))  # one bit apart
    with pytest.raises(BoardConfigError) as failure:
        qemu_image_kind(elf, pte, board="qemu")
    said = str(failure.value)
    assert exit_code_for(failure.value) == 2
    assert str(elf) in said and str(pte) in said
    assert hashlib.sha256(carried).hexdigest() in said and hashlib.sha256(pte.read_bytes()).hexdigest() in said


def test_a_qemu_replay_image_is_told_by_its_symbol_and_an_elf_that_is_neither_is_refused(tmp_path):
    from hil.firmware.qemu_image import build_qemu_image

    pte = tmp_path / "model.pte"
    pte.write_bytes(b"p" * 64)
    replay = build_qemu_image(bytes(range(256)), ["Model Size: 64"], runs=1, cache=tmp_path / "cache")
    assert qemu_image_kind(replay, pte, board="qemu") == "replay"
    neither = _elf_with_model(tmp_path, b"x" * 64)
    subprocess.run(["arm-none-eabi-objcopy", "--remove-section=.modeldata", str(neither)], check=True, timeout=60)
    with pytest.raises(BoardConfigError, match="carries no program .* and is no replay image"):
        qemu_image_kind(neither, pte, board="qemu")
