"""The run count an ETDump read out through the debugger allows, computed on the host before any work.

Why here: the firmware tells its bound (`hil_run_config.max_runs`, firmware/app/method_setup.cpp
`hil::max_traced_runs`) only at the run-configuration handshake, after the export, the image build and
the boot: a count over it was refused there, with exit 3, after seconds of work. The bound follows from
the program and the ETDump buffer's size alone, so the same arithmetic on the .pte and the board file's
`[memory].etdump_buffer_bytes` refuses it first, with exit 2. The streamed transport (`[debug].etdump_transport
= "console"`) sends one dump per batch of runs that fits, so it has no such bound; "auto" reads one dump through
the debugger when the run fits it and streams otherwise (not with the debug outputs, which need one dump).

The constants are hil_config.h's defaults (HIL_ETDUMP_*); tests/unit/test_etdump_bound.py reads them from
there, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.checks import whole_number
from hil.base.errors import InputError

if TYPE_CHECKING:
    from hil.config.board_config import BoardConfig

# hil_config.h: bytes per traced event, per run, and once per dump; events per instruction.
EVENT_BYTES, RUN_BYTES, FIXED_BYTES = 160, 256, 16384
EVENTS_PER_INSTRUCTION, EVENTS_PER_INSTRUCTION_DEBUG = 2, 4
# hil_app.cmake's HIL_ETDUMP_BUFFER_SIZE and HIL_MAX_RUNS: what a board file that states no size means.
DEFAULT_BUFFER_BYTES = 0x80000
FIRMWARE_MAX_RUNS = 1000
BUFFER_KEY = "memory.etdump_buffer_bytes"
TRANSPORT_KEY = "debug.etdump_transport"
TRANSPORTS = ("gdb", "console", "auto")


def transport(cfg: "BoardConfig") -> str:
    """`[debug].etdump_transport`: "gdb" (the default: one dump read through the debugger), "console" or "auto"."""
    return str(cfg.get(TRANSPORT_KEY, "gdb"))


def max_traced_runs(instructions: int, buffer_bytes: int, *, debug: bool = False,
                    limit: int = FIRMWARE_MAX_RUNS) -> int:
    """hil::max_traced_runs: the most runs of a method of `instructions` instructions one dump holds."""
    if buffer_bytes <= FIXED_BYTES:
        return 0
    return min((buffer_bytes - FIXED_BYTES) // run_bytes(instructions, debug=debug), limit)


def run_bytes(instructions: int, *, debug: bool = False) -> int:
    """The ETDump bytes one run of a method of `instructions` instructions takes (beside the dump's FIXED_BYTES)."""
    per_instruction = EVENTS_PER_INSTRUCTION_DEBUG if debug else EVENTS_PER_INSTRUCTION
    return RUN_BYTES + (per_instruction * instructions + 1) * EVENT_BYTES


def program_instructions(pte: Path, index: int = 0) -> int:
    """MethodMeta::num_instructions of the program's method `index` (the firmware's HIL_METHOD_INDEX): every chain's."""
    from hil.records.pte import load_program

    program, _, _ = load_program(pte)
    return sum(len(chain.instructions) for chain in program.execution_plan[index].chains)


def check_traced_runs(cfg: "BoardConfig", pte: Path, runs: int, *, debug: bool = False) -> dict[str, Any]:
    """Whether the run streams its ETDump (figures["stream"]), by the board's transport and the program's bound;
    InputError (exit 2) for `runs` runs that one ETDump of the board's buffer cannot hold and no stream takes.
    The figures go to the manifest."""
    room = int(whole_number(cfg.get(BUFFER_KEY, DEFAULT_BUFFER_BYTES),
                            f"board '{cfg.name}' ({cfg.source}): {BUFFER_KEY}", at_least=1))
    instructions = program_instructions(pte)
    bound = max_traced_runs(instructions, room, debug=debug)
    chosen = transport(cfg)
    stream = chosen == "console" or (chosen == "auto" and runs > bound and not debug)
    figures = {"transport": chosen, "stream": stream, "etdump_buffer_bytes": room, "instructions": instructions,
               "max_traced_runs": bound, "runs": runs}
    if not stream and bound == 0:
        one = FIXED_BYTES + run_bytes(instructions, debug=debug)
        raise InputError(
            f"the {room} B ETDump buffer of board '{cfg.name}' ({BUFFER_KEY}, the firmware's HIL_ETDUMP_BUFFER_SIZE) "
            f"cannot hold even one run of {pte}: one run of its {instructions} instructions needs {one} B ({FIXED_BYTES}"
            f" B once per dump and {one - FIXED_BYTES} B per run); give {BUFFER_KEY} at least {one} B; refused"
            " before any image was built")
    if not stream and runs > bound:
        debug_note = " (the debug outputs need one dump)" if debug and chosen == "auto" else ""
        raise InputError(
            f"{runs} runs (iterations + warm-up) of {pte} do not fit one ETDump on board '{cfg.name}': its "
            f"{instructions} instructions trace at most {bound} runs in the {room} B ETDump buffer ({BUFFER_KEY}, "
            f"the firmware's HIL_ETDUMP_BUFFER_SIZE; hil::max_traced_runs); ask for at most {bound} runs, or stream "
            f"the ETDump over the console ({TRANSPORT_KEY} = \"console\"){debug_note}; refused before any image was built")
    return figures
