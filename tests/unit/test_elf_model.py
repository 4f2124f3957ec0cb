"""The RT700 image check: an ELF whose .modeldata is not the run's .pte is refused, by name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hil.errors import BoardConfigError
from hil.firmware.elf_model import check_image_carries, embedded_model
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
    assert str(elf) in str(failure.value) and "make firmware" in str(failure.value)


def test_an_image_without_modeldata_is_not_judged(tmp_path):
    elf = _elf_with_model(tmp_path, b"x" * 64)
    subprocess.run(["arm-none-eabi-objcopy", "--remove-section=.modeldata", str(elf)], check=True, timeout=60)
    pte = tmp_path / "model.pte"
    pte.write_bytes(b"y" * 64)
    assert check_image_carries(elf, pte, board="rt700") is False
