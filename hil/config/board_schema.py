"""The schema of a board file: every section and key the harness knows, with its type and limits.

Why a table and not `cfg.get(key, default)` alone: read that way, a misspelt key (`clock_mz`) or
section (`[qemuu]`) is "absent", the default wins silently and the run dies much later (a
`ZeroDivisionError` from a clock of 0, a string timeout in a `time.monotonic() + timeout`). Every
board file is checked against this table when it is read, and every error names the file, the key
and what was expected.

To add a key: one line in `SCHEMA` under its section. A section whose value is `FREE` is passed
through unchecked (e.g. `[pyocd.options]`, handed to pyOCD as session options). Keys marked
`path=True` hold file or folder paths; relative ones are resolved against the board file's own
folder when it is read (see hil.config.board_config).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hil.base.checks import is_int, is_number, within
from hil.base.errors import BoardConfigError


@dataclass(frozen=True)
class Setting:
    """One key: what a valid value is, in words (for the error) and as a test."""

    expected: str
    valid: Callable[[Any], bool]
    path: bool = False


_is_number, _is_int = is_number, is_int  # TOML's inf and nan are no clock, timeout or jitter (hil.base.checks)


def text(*, non_empty: bool = False) -> Setting:
    if non_empty:
        return Setting("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip()))
    return Setting("a string", lambda v: isinstance(v, str))


def pattern(expected: str, regex: str) -> Setting:
    """A string all of which matches `regex`: a value passed to gdb or QEMU as one word of its command."""
    compiled = re.compile(regex)
    return Setting(expected, lambda v: isinstance(v, str) and compiled.fullmatch(v) is not None)


# gdb's linespecs the harness documents (FUNCTION, a C++ qualified one, or file.c:LINE) and the result, an
# identifier with members; QEMU's -machine value, one word (a name and its properties, no blank).
BREAKPOINT = pattern("FUNCTION or file.c:LINE (an identifier, or a file name and a line number)",
                     r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*|[\w./+-]+:\d+")
RESULT_EXPR = pattern("an identifier, with .member or ->member parts (the struct holding .buf and .size)",
                      r"[A-Za-z_]\w*((\.|->)[A-Za-z_]\w*)*")
MACHINE = pattern("a QEMU machine name, with its ,property=value parts, and no blank", r"[A-Za-z0-9][\w.,=-]*")


def choice(*values: str) -> Setting:
    return Setting("one of " + ", ".join(repr(v) for v in values), lambda v: v in values)


def number(*, above: float | None = None, at_least: float | None = None, below: float | None = None) -> Setting:
    """A number (int or float) with optional bounds; `above` is exclusive, `at_least` inclusive."""
    limits = [f"> {above:g}" if above is not None else "", f">= {at_least:g}" if at_least is not None else "",
              f"< {below:g}" if below is not None else ""]
    words = " and ".join(x for x in limits if x)

    def valid(v: Any) -> bool:
        return _is_number(v) and within(v, above=above, at_least=at_least, below=below)

    return Setting(f"a number {words}".strip(), valid)


def integer(*, above: int | None = None, at_least: int | None = None) -> Setting:
    words = f"> {above}" if above is not None else (f">= {at_least}" if at_least is not None else "")

    def valid(v: Any) -> bool:
        return _is_int(v) and (above is None or v > above) and (at_least is None or v >= at_least)

    return Setting(f"a whole number {words}".strip(), valid)


def path() -> Setting:
    """A file or folder path ("" = not set); relative paths are taken from the board file's folder."""
    return Setting("a path (string)", lambda v: isinstance(v, str), path=True)


def table() -> Setting:
    return Setting("a table", lambda v: isinstance(v, dict))


def list_of(expected: str, item: Callable[[Any], bool]) -> Setting:
    return Setting(f"a list of {expected}", lambda v: isinstance(v, list) and all(item(x) for x in v))


def _ram_pair(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_int(x) and x >= 0 for x in v) and v[1] > 0


# What a board can do ([board].features), the words `@pytest.mark.hil_requires(...)` may name (hil.config.capabilities).
FEATURES = {
    "npu": "a real eIQ Neutron NPU runs the delegated part of a program",
    "probe": "a debug probe (pyOCD) flashes and debugs the target",
    "console": "the target's serial console is read",
    "runtime": "the ExecuTorch runtime executes the program on the target's own core",
}

# What the QEMU board runs ([qemu].firmware; hil.firmware.qemu_firmware): also the words of --hil-firmware.
FIRMWARE_CHOICES = ("runtime", "replay", "auto")
FREE = None  # a section (or sub-table) passed through as it is
POSITIVE_S = number(above=0)

SCHEMA: dict[str, dict[str, Setting | None] | None] = {
    "board": {
        "name": text(non_empty=True),
        "kind": choice("qemu", "rt700", "rt700-emu"),
        # The built-in board this file changes a few keys of (hil.config.board_config: partial board files).
        "extends": text(non_empty=True),
        "description": text(),
        "clock_mhz": number(above=0),
        "features": list_of("feature names (" + ", ".join(FEATURES) + ")", lambda v: v in FEATURES),
    },
    "aot": {
        "delegate": choice("none", "neutron-sim", "neutron", "auto"),
        # Seconds the export of a model file may take (hil.aot.isolated); --export-timeout wins.
        "export_timeout_s": POSITIVE_S,
    },
    "simulation": {
        "jitter": number(at_least=0, below=1),
        # The simulated NPU's own timer rate: Neutron records count NPU cycles, the PAL counts core cycles.
        "npu_clock_mhz": number(above=0),
    },
    "qemu": {
        "executable": text(non_empty=True),
        "machine": MACHINE,
        "cpu": text(non_empty=True),
        "reset_monitor": text(non_empty=True),
        # In a lab: the path ser2net serves as this QEMU's console; the board links it to QEMU's pty (hil.lab).
        "serial_pty": text(non_empty=True),
        # What the board runs (hil.firmware.qemu_firmware) and QEMU's instruction counting (-icount shift=N).
        "firmware": choice(*FIRMWARE_CHOICES),
        "icount_shift": integer(at_least=0),
    },
    "debug": {
        "gdb": text(non_empty=True),
        "breakpoint": BREAKPOINT,
        "result_expr": RESULT_EXPR,
        "timeout_s": POSITIVE_S,
        "fault_handlers": list_of("function names", lambda v: isinstance(v, str) and bool(v)),
        # How the ETDump leaves the target (hil.config.etdump_bound): read through the debugger, or framed on the console.
        "etdump_transport": choice("gdb", "console", "auto"),
    },
    "memory": {
        "ram": list_of("[start, size] pairs of whole numbers (size > 0)", _ram_pair),
        "program_bytes": integer(above=0),
        "planned_bytes": integer(above=0),
        "debug_buffer_bytes": integer(above=0),
        # The firmware's ETDump buffer (HIL_ETDUMP_BUFFER_SIZE): with the gdb transport it bounds the run count.
        "etdump_buffer_bytes": integer(above=0),
    },
    "limits": {
        "max_runs": integer(above=0),
    },
    # A labgrid place instead of a local probe (hil.lab): its name and, optionally, the coordinator.
    "place": {
        "name": text(non_empty=True),
        "coordinator": text(non_empty=True),
    },
    # What the harness records of the lab board or place it holds (hil.lab); written by it, not by users.
    "lab": FREE,
    "firmware": {
        "image": text(non_empty=True),
        "elf": path(),
        "model": path(),
    },
    "image": {
        "flash_config": table(),
        "model_section": text(non_empty=True),
        "model_symbol": text(non_empty=True),
        "regions": list_of("tables {name, start, size}", lambda v: isinstance(v, dict)),
        "load_regions": list_of("region names", lambda v: isinstance(v, str)),
    },
    "pyocd": {
        "target": text(),
        "pack": path(),
        "probe_id": text(),
        "frequency_hz": integer(above=0),
        "connect_timeout_s": POSITIVE_S,
        "flash_timeout_s": POSITIVE_S,
        "gdbserver_timeout_s": POSITIVE_S,
        "lock_timeout_s": number(at_least=0),
        "options": FREE,
    },
    "serial": {
        "url": text(),
        "baudrate": integer(above=0),
        "open_timeout_s": POSITIVE_S,
        "reconnect_timeout_s": number(at_least=0),
        "reconnect_delay_s": number(at_least=0),
        # The default timeout of hil_board.console.expect() (hil.boards.console).
        "expect_timeout_s": POSITIVE_S,
    },
    "paths": {
        "mcux_sdk": path(),
        "executorch_root": path(),
        "neutron_lib_dir": path(),
        "armgcc_dir": path(),
    },
}


def path_keys() -> list[str]:
    """`section.key` of every key that holds a path."""
    return [f"{section}.{key}" for section, keys in SCHEMA.items() if keys
            for key, setting in keys.items() if setting is not None and setting.path]


def _near(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def validate(data: Mapping[str, Any], where: str, *, whole: bool = True) -> None:
    """Refuse unknown sections and keys, wrong types and impossible values; `where` names the file.
    `whole=False`: a partial file, merged over a built-in board later, may lack [board].kind."""
    sections = sorted(SCHEMA)
    for section, body in data.items():
        if section not in SCHEMA:
            raise BoardConfigError(
                f"{where}: unknown section [{section}] ({_near(section, sections)}known sections: {', '.join(sections)})"
            )
        keys = SCHEMA[section]
        if keys is FREE:
            continue
        if not isinstance(body, dict):
            raise BoardConfigError(f"{where}: '{section}' must be a section ([{section}]), not {body!r}")
        for key, value in body.items():
            if key not in keys:
                known = sorted(keys)
                raise BoardConfigError(
                    f"{where}: unknown key '{key}' in [{section}] ({_near(key, known)}known keys: {', '.join(known)})"
                )
            setting = keys[key]
            if setting is not None and not setting.valid(value):
                raise BoardConfigError(f"{where}: [{section}].{key} must be {setting.expected}, not {value!r}")
    if whole and "kind" not in data.get("board", {}):
        raise BoardConfigError(f"{where}: [board].kind is missing ({SCHEMA['board']['kind'].expected})")  # type: ignore[index,union-attr]
