"""Every input of a run checked before any work: counts, times, paths, images and the model's size.

Why up front: checked where it is used, a bad value surfaces late and as a traceback (`--iterations
100000` after two minutes of simulation, `--jitter nan` deep in the cost model, `--out /proc/x` after
the export), or not at all (`--timeout 0` taken for "the board's default"). Each check here raises
InputError with one line naming the value, the limit and where the limit comes from; the CLI exits 2
for them. What a valid number is lives in hil.checks, shared with the board-file schema.

The run-count limit is static: the image's real `max_runs` is only known once it runs (the
run-configuration handshake reads it and still refuses a larger plan), but both et-hil firmwares
take it from HIL_MAX_RUNS (firmware/common/hil_result.h, default 1000: the RT700 firmware keeps one
inference time per run in a static array of that length, the replay image refuses more), so a board
file states it as `[limits].max_runs` and a plan above it is refused before the export.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.checks import finite_number, whole_number  # noqa: F401  (re-exported: the checks callers import here)
from hil.defaults import DEFAULT_EXPORT_TIMEOUT_S
from hil.errors import InputError

if TYPE_CHECKING:
    from hil.config import BoardConfig

# HIL_MAX_RUNS's default in firmware/common/hil_result.h: what a board file without [limits] allows.
DEFAULT_MAX_RUNS = 1000
ELF_MAGIC = b"\x7fELF"


def max_runs(cfg: "BoardConfig") -> int:
    """The most warm-up + iterations a run on this board may ask for (`[limits].max_runs`)."""
    where = f"board '{cfg.name}' ({cfg.source}): limits.max_runs"
    return whole_number(cfg.get("limits.max_runs", DEFAULT_MAX_RUNS), where, at_least=1)


def check_counts(cfg: "BoardConfig", iterations: Any, warmup: Any) -> None:
    """iterations >= 1, warm-up >= 0, and together within the board's limit."""
    whole_number(iterations, "iterations", at_least=1)
    whole_number(warmup, "warm-up", at_least=0)
    limit = max_runs(cfg)
    if iterations + warmup > limit:
        raise InputError(
            f"iterations {iterations} + warm-up {warmup} = {iterations + warmup} runs: more than the {limit}"
            f" board '{cfg.name}' allows (limits.max_runs, the firmware's HIL_MAX_RUNS)"
        )


def run_timeout(cfg: "BoardConfig", requested: Any) -> float:
    """The seconds one board run may take: the request's, else the board file's `debug.timeout_s`."""
    if requested is not None:
        return finite_number(requested, "timeout (seconds)", above=0)
    return finite_number(cfg.get("debug.timeout_s", 120), f"board '{cfg.name}': debug.timeout_s", above=0)


def export_timeout(cfg: "BoardConfig", requested: Any) -> float:
    """The seconds the export of a user's model may take: the request's, else `aot.export_timeout_s`,
    else hil.defaults's."""
    if requested is not None:
        return finite_number(requested, "export timeout (seconds)", above=0)
    return finite_number(cfg.get("aot.export_timeout_s", DEFAULT_EXPORT_TIMEOUT_S),
                         f"board '{cfg.name}': aot.export_timeout_s", above=0)


def jitter(cfg: "BoardConfig", requested: Any) -> float:
    """The simulation's relative run-to-run jitter: the request's, else `simulation.jitter`; in [0, 1)."""
    if requested is not None:
        return finite_number(requested, "jitter", at_least=0, below=1)
    return finite_number(cfg.get("simulation.jitter", 0.0), f"board '{cfg.name}': simulation.jitter",
                         at_least=0, below=1)


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


def firmware_elf(path: Path, what: str) -> Path:
    """An existing ELF file (checked by its magic bytes); InputError otherwise."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read it: {exc.strerror or exc}") from exc
    if magic != ELF_MAGIC:
        raise InputError(f"{what} {path} is not an ELF file (it starts with {magic!r})")
    return Path(path)


def mib(size: int) -> str:
    return f"{size} B ({size / 1048576:.2f} MiB)"


def check_model_fits(cfg: "BoardConfig", pte_path: Path) -> dict[str, int]:
    """Refuse a program whose .pte or planned memory exceeds what the board keeps for them.

    `[memory].program_bytes` is the room for the .pte itself (the RT700 firmware copies it to its 1 MiB
    model region), `[memory].planned_bytes` the room for the method's planned buffers (its method
    allocator pool). A board file without them is not checked. Returns the sizes found.
    """
    from hil.pte import pte_memory

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
