"""Which model a firmware image carries (the `.modeldata` section of its ELF), and what a QEMU ELF is.

Two EVKs, two builds, one bench: flashing an image whose compiled-in model is not the `.pte` the
ETRecord was made with gives a profile that maps events to the wrong operators without any error.
Comparing the bytes first turns that into a clear refusal naming both files and both sha256s.

On QEMU a user's ELF (`--elf`) is one of two things, told apart by its symbols: a runtime image
carries its program (hil.firmware.model_array's `model_pte` array in `.modeldata`), which
ExecuTorch's runtime really runs; a replay image carries no program but `hil_replay_runs`
(hil.firmware.qemu_image), the count of inferences its host-made ETDump holds. The run is labelled
by what the ELF is, never by what the harness would have built.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hil.base.errors import BoardConfigError
from hil.base.commands import RT700_IMAGE
from hil.records.elf_reader import ElfImage, ElfReadError, read_elf

SECTION = ".modeldata"
SYMBOL = "model_pte"  # hil.firmware.model_array's array
REPLAY_SYMBOL = "hil_replay_runs"  # hil.firmware.qemu_image: only the replay image defines it
MODEL_ALIGN = 16  # model_array aligns the array, so a section may end in up to 15 bytes of padding


@dataclass(frozen=True)
class CarriedModel:
    """The program bytes an image carries and where they were found."""

    data: bytes
    where: str  # "model_pte in .modeldata", or ".modeldata" when no symbol bounds the array

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def is_program(self, pte: bytes) -> bool:
        """Whether these bytes are `pte`: exactly, or (no symbol) followed only by alignment zeros."""
        if self.where != SECTION:
            return self.data == pte
        rest = self.data[len(pte):]
        return self.data[:len(pte)] == pte and len(rest) < MODEL_ALIGN and not rest.strip(b"\0")


def carried_model(image: ElfImage, section: str = SECTION, symbol: str = SYMBOL) -> CarriedModel | None:
    """The program in `section` (bounded by the `symbol` array when the image has it); None without one."""
    found = image.section(section)
    if found is None or found.size == 0 or not (found.progbits and found.alloc):
        return None
    data = image.section_bytes(found)
    arrays = [s for s in image.symbols_named(symbol) if s.kind == "OBJECT"
              and found.addr <= s.address and s.address + s.size <= found.end]
    if not arrays:
        return CarriedModel(data, section)
    start = arrays[0].address - found.addr
    return CarriedModel(data[start:start + arrays[0].size], f"{symbol} in {section}")


def embedded_model(elf: Path, section: str = SECTION) -> bytes | None:
    """The bytes of `section` in `elf`, or None when the ELF cannot be read or has no such loaded section."""
    try:
        carried = carried_model(read_elf(elf), section, symbol="")
    except ElfReadError:
        return None
    return carried.data if carried is not None else None


def _refuse(board: str, elf: Path, carried: CarriedModel, pte: Path, model: bytes, fix: str) -> BoardConfigError:
    return BoardConfigError(
        f"board '{board}': firmware {elf} carries a different model ({carried.where}: {len(carried.data)} B, sha256 "
        f"{carried.sha256}) than {pte} ({len(model)} B, sha256 {hashlib.sha256(model).hexdigest()}); {fix}")


def check_image_carries(elf: Path, pte: Path, *, board: str) -> bool:
    """Refuse an image whose `.modeldata` is not `pte`; True when checked, False when it could not be read."""
    try:
        carried = carried_model(read_elf(elf))
    except ElfReadError:
        return False
    if carried is None:
        return False
    model = pte.read_bytes()
    if not carried.is_program(model):
        raise _refuse(board, elf, carried, pte, model, f"rebuild it with `{RT700_IMAGE} --model {pte} --out DIR`")
    return True


def qemu_image_kind(elf: Path, pte: Path, *, board: str) -> Literal["runtime", "replay"]:
    """What a user's QEMU ELF is (the module docstring): "runtime" when it carries `pte` itself, "replay"
    for a replay image; BoardConfigError for one carrying another program, or neither."""
    try:
        image = read_elf(elf)
    except ElfReadError as exc:
        raise BoardConfigError(f"board '{board}': firmware {elf}: {exc}") from None
    carried = carried_model(image)
    if carried is not None:
        model = pte.read_bytes()
        if not carried.is_program(model):
            raise _refuse(board, elf, carried, pte, model, "give the ELF built for this model, or drop --elf "
                          "and let the harness build the runtime image")
        return "runtime"
    if image.symbols_named(REPLAY_SYMBOL):
        return "replay"
    raise BoardConfigError(
        f"board '{board}': firmware {elf} carries no program (no loaded {SECTION} section) and is no replay image "
        f"(no {REPLAY_SYMBOL} symbol): what it would run cannot be told, so it is not run")
