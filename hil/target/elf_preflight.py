"""The symbols a run stops at and reads, checked in the ELF's symbol table before QEMU or pyOCD starts.

Why: gdb finds out that `--breakpoint no_such_function`, `--result-expr no_such_var` or an image
without the run-configuration handshake cannot work only once the target is up and flashed
(50-100 s into a run, and reported as the board's fault, exit 3). The symbol table answers the same
question in milliseconds (hil.records.elf_reader), and a file that is no Arm ELF, or a truncated
one, is refused with it. Every refusal is an InputError (exit 2) naming the symbol and the ELF.

Only what the table can answer is checked: a breakpoint given as `file.c:LINE` or `*0xADDR`, and a
result expression that is more than a variable with members or indexes, are left to gdb.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from hil.base.errors import InputError
from hil.target.run_config import CONFIG_BREAKPOINT, CONFIG_SYMBOL

if TYPE_CHECKING:
    from hil.config.board_config import BoardConfig
    from hil.records.elf_reader import ElfImage

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# `var`, `&var`, `var.member`, `var->member[3]`: the variable is the expression's one root.
PLAIN_LVALUE = re.compile(r"\s*\(?\s*&?\s*([A-Za-z_]\w*)\s*\)?\s*(?:(?:\.|->)\s*\w+\s*|\[[^\]]*\]\s*)*")


def read_arm_elf(elf: Path, what: str = "firmware image") -> "ElfImage":
    """The parsed ELF; InputError when it is unreadable, truncated, or built for another machine."""
    from hil.records.elf_reader import ElfReadError, read_elf

    try:
        image = read_elf(elf)
    except ElfReadError as exc:
        raise InputError(f"{what}: {exc}") from exc
    if not image.is_arm:
        machine = image._elf["e_machine"]  # noqa: SLF001  (the reader keeps the header for this)
        raise InputError(f"{what} {elf} is an ELF for {machine}, not an Arm (EM_ARM) image for a Cortex-M board")
    return image


def result_root(expr: str) -> str | None:
    """The variable `expr` reads when it is a plain lvalue (`var`, `var.m`, `(&var)->m`); else None."""
    match = PLAIN_LVALUE.fullmatch(expr)
    return match.group(1) if match else None


def missing_symbols(image: "ElfImage", breakpoint: str, result_expr: str) -> list[tuple[str, str]]:
    """(symbol, what it is for) for each symbol the run needs that `image` lacks."""
    wanted: list[tuple[str, str]] = []
    if IDENTIFIER.fullmatch(breakpoint.strip()):
        wanted.append((breakpoint.strip(), "the ETDump breakpoint (debug.breakpoint, --breakpoint)"))
    root = result_root(result_expr)
    if root is not None:
        wanted.append((root, f"the result expression '{result_expr}' (debug.result_expr, --result-expr)"))
    wanted += [(CONFIG_BREAKPOINT, "the run-configuration handshake's breakpoint"),
               (CONFIG_SYMBOL, "the run-configuration handshake's variable")]
    return [(name, why) for name, why in wanted if not image.symbols_named(name)]


def check_run_symbols(elf: Path, cfg: "BoardConfig") -> None:
    """Refuse `elf` when it is no Arm ELF or lacks a symbol the run on board `cfg` needs."""
    what = f"board '{cfg.name}': firmware image"
    image = read_arm_elf(Path(elf), what)
    if not image.symbols:
        raise InputError(f"{what} {elf} has no symbol table (stripped?): the debugger could not find"
                         f" '{cfg.breakpoint}' or '{cfg.result_expr}' in it; flash an image built with symbols")
    missing = missing_symbols(image, cfg.breakpoint, cfg.result_expr)
    if not missing:
        return
    shown = "; ".join(f"'{name}' ({why})" for name, why in missing)
    handshake = any(name in (CONFIG_BREAKPOINT, CONFIG_SYMBOL) for name, _ in missing)
    hint = (" (an image without the handshake would run the count compiled into it: rebuild it with"
            " firmware/common/hil_result.h)") if handshake else ""
    raise InputError(f"{what} {elf} has no symbol {shown}{hint}; refused before the board starts")
