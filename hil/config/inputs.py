"""The inputs of a run that are files and folders, checked before they are used: the run folder is
writable, and the exported program fits the board's memory. The request's own fields (counts, times,
the delegate, the user's ELF) are checked in hil.run.request; what a valid number is lives in hil.base.checks."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from hil.base.checks import whole_number
from hil.base.errors import InputError

if TYPE_CHECKING:
    from hil.config.board_config import BoardConfig



def writable_folder(path: Path, what: str = "--out") -> Path:
    """Create `path` (and parents) and prove a file can be written in it; InputError naming why not."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {path}: a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".hil-write-test.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot create or write there: {exc.strerror or exc}") from exc
    return path


def mib(size: int) -> str:
    return f"{size} B ({size / 1048576:.2f} MiB)"


def check_model_fits(cfg: "BoardConfig", pte_path: Path) -> dict[str, int]:
    """Refuse a program whose .pte or planned memory exceeds what the board keeps for them.

    `[memory].program_bytes` is the room for the .pte itself (the RT700 firmware copies it to its 1 MiB
    model region), `[memory].planned_bytes` the room for the method's planned buffers (its method
    allocator pool). A board file without them is not checked. Returns the sizes found.

    The planned bytes are a floor, not the pool's whole need: the method's own tables (values, tensors, kernel
    and argument lists) come from the same pool, and their size on the target is not in the .pte. A program that
    passes here can still fail at `load_method` with error 0x21; the run's message then says so
    (hil.target.run_config).
    """
    from hil.records.pte import pte_memory

    memory = pte_memory(pte_path)
    program = int(memory["file_bytes"])
    planned = max((int(m["planned_bytes"]) for m in memory["methods"].values()), default=0)
    sizes = {"program_bytes": program, "planned_bytes": planned}
    problems = []
    for key, size, what in (("program_bytes", program, "program (.pte)"),
                            ("planned_bytes", planned, "planned memory")):
        room = cfg.get(f"memory.{key}")
        if room is None:
            continue
        room = int(whole_number(room, f"board '{cfg.name}' ({cfg.source}): memory.{key}", at_least=0))
        if size > room:
            problems.append(f"{what} {mib(size)} exceeds memory.{key} {mib(room)}")
    if problems:
        raise InputError(
            f"the model does not fit board '{cfg.name}': {'; '.join(problems)}"
            f" (program + planned memory = {mib(program + planned)}); refused before flashing"
        )
    return sizes
