"""Board-file overrides shared by the CLI and the pytest plugin: one table, two front ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Override:
    """A command-line flag that replaces one `section.key` of the board file."""

    flag: str
    key: str
    type: Callable[[str], Any]
    help: str
    # Further spellings of the same option, shown first in --help (e.g. the `--hil-` name of an old flag).
    aliases: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        return (*self.aliases, self.flag)

    @property
    def dest(self) -> str:
        return "hil_" + self.flag.lstrip("-").replace("-", "_")


def _int_auto(text: str) -> int:
    return int(text, 0)


OVERRIDES: tuple[Override, ...] = (
    Override("--clock-mhz", "board.clock_mhz", float, "core clock in MHz (ticks -> us)"),
    Override("--gdb", "debug.gdb", str, "GDB executable (gdb-multiarch)"),
    Override("--breakpoint", "debug.breakpoint", str, "where the ETDump is ready: FUNCTION or file.c:LINE"),
    Override("--result-expr", "debug.result_expr", str, "expression holding the ETDump result (.buf, .size)"),
    Override("--probe", "pyocd.probe_id", str, "pyOCD probe unique id (RT700), or remote:HOST:PORT for a probe "
             "served by `pyocd server`", aliases=("--hil-probe",)),
    Override("--target", "pyocd.target", str, "pyOCD target name (RT700)"),
    Override("--pack", "pyocd.pack", str, "path to the NXP device pack (.pack) for pyOCD"),
    Override("--swd-frequency", "pyocd.frequency_hz", _int_auto, "SWD clock in Hz"),
    Override("--port", "serial.url", str, "serial console: /dev/ttyACM0, hwgrep://VID:PID or rfc2217://host:port"),
    Override("--baudrate", "serial.baudrate", int, "serial console baud rate"),
    Override("--elf", "firmware.elf", str, "firmware ELF to flash (RT700)"),
)


def overrides_from(values: dict[str, Any]) -> dict[str, Any]:
    """Map parsed option values (by dest) to `section.key -> value`, skipping options not given."""
    return {opt.key: values.get(opt.dest) for opt in OVERRIDES if values.get(opt.dest) is not None}
