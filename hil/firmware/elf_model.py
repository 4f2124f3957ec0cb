"""Which model a firmware image carries: the `.modeldata` section of its ELF.

Two EVKs, two builds, one bench: flashing an image whose compiled-in model is not the `.pte` the
ETRecord was made with gives a profile that maps events to the wrong operators without any error.
Comparing the bytes first turns that into a clear refusal.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hil.errors import BoardConfigError

SECTION = ".modeldata"
OBJCOPY = "arm-none-eabi-objcopy"


def embedded_model(elf: Path, section: str = SECTION, timeout: float = 30.0) -> bytes | None:
    """The bytes of `section` in `elf`, or None when the ELF has no such section or no objcopy is installed."""
    objcopy = shutil.which(OBJCOPY)
    if objcopy is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "section.bin"
        done = subprocess.run(
            [objcopy, "-O", "binary", f"--only-section={section}", str(elf), str(out)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
        if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
            return None
        return out.read_bytes()


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
