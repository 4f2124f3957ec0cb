"""Which model a firmware image carries: the `.modeldata` section of its ELF.

Two EVKs, two builds, one bench: flashing an image whose compiled-in model is not the `.pte` the
ETRecord was made with gives a profile that maps events to the wrong operators without any error.
Comparing the bytes first turns that into a clear refusal.
"""

from __future__ import annotations

from pathlib import Path

from hil.errors import BoardConfigError
from hil.firmware.elf_reader import ElfReadError, read_elf

SECTION = ".modeldata"


def embedded_model(elf: Path, section: str = SECTION) -> bytes | None:
    """The bytes of `section` in `elf`, or None when the ELF cannot be read or has no such loaded section."""
    try:
        image = read_elf(elf)
    except ElfReadError:
        return None
    found = image.section(section)
    if found is None or found.size == 0 or not (found.progbits and found.alloc):
        return None
    return image.section_bytes(found)


def check_image_carries(elf: Path, pte: Path, *, board: str) -> bool:
    """Refuse an image whose `.modeldata` is not `pte`; True when checked, False when it could not be read."""
    carried = embedded_model(elf)
    if carried is None:
        return False
    model = pte.read_bytes()
    if carried[: len(model)] != model:
        raise BoardConfigError(
            f"board '{board}': firmware {elf} carries a different model ({len(carried)} B in {SECTION}) than "
            f"{pte} ({len(model)} B); rebuild it with `make firmware BOARD=rt700 MODEL={pte}`"
        )
    return True
