"""Board-file overrides shared by the CLI and the pytest plugin: one table, two front ends.

Each override has a short name (`probe`). The pytest plugin registers only the prefixed flag
(`--hil-probe`): a pytest session also loads other plugins (pytest-embedded registers `--port` and
`--target`, labgrid `--lg-*`), and argparse aborts the whole session on a clash. The `hil` command
owns its own parser, so it accepts both `--probe` and `--hil-probe`: the spelling from a pytest
command line works there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from hil.config.board_schema import FIRMWARE_CHOICES

PREFIX = "hil-"


@dataclass(frozen=True)
class Override:
    """A command-line flag that replaces one `section.key` of the board file."""

    name: str
    key: str
    type: Callable[[str], Any]
    metavar: str
    help: str

    @property
    def dest(self) -> str:
        return "hil_" + self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        """The prefixed flag, the only one a pytest plugin may register."""
        return f"--{PREFIX}{self.name}"

    @property
    def short_flag(self) -> str:
        """The CLI's short spelling (`--probe`)."""
        return f"--{self.name}"


def _int_auto(text: str) -> int:
    return int(text, 0)


def firmware_choice(text: str) -> str:
    """One of FIRMWARE_CHOICES (`runtime`, `replay`, `auto`), as `[qemu].firmware` takes it."""
    if text not in FIRMWARE_CHOICES:
        raise ValueError(f"not one of {', '.join(FIRMWARE_CHOICES)}")
    return text


def _absolute_path(text: str) -> str:
    """A path given on the command line is the user's, relative to where they are, not to the board file."""
    return str(Path(text).expanduser().absolute())


OVERRIDES: tuple[Override, ...] = (
    Override("clock-mhz", "board.clock_mhz", float, "MHZ", "core clock in MHz (ticks -> us)"),
    Override("gdb", "debug.gdb", str, "EXE", "GDB executable (gdb-multiarch)"),
    Override("breakpoint", "debug.breakpoint", str, "WHERE", "where the ETDump is ready: FUNCTION or file.c:LINE"),
    Override("result-expr", "debug.result_expr", str, "EXPR", "expression holding the ETDump result (.buf, .size)"),
    Override("probe", "pyocd.probe_id", str, "ID",
             "pyOCD probe unique id (RT700), or remote:HOST:PORT for a probe served by `pyocd server`"),
    Override("target", "pyocd.target", str, "NAME", "pyOCD target name (RT700)"),
    Override("pack", "pyocd.pack", str, "PACK", "path to the NXP device pack (.pack) for pyOCD"),
    Override("swd-frequency", "pyocd.frequency_hz", _int_auto, "HZ", "SWD clock in Hz"),
    Override("port", "serial.url", str, "URL", "serial console: /dev/ttyACM0, hwgrep://VID:PID or rfc2217://host:port"),
    Override("baudrate", "serial.baudrate", int, "BAUD", "serial console baud rate"),
    Override("firmware", "qemu.firmware", firmware_choice, "KIND",
             "QEMU: runtime (the real firmware; an error when it cannot be built), replay (a host-made ETDump) or "
             "auto (runtime when it can, else replay with a notice); wins over the board file's [qemu].firmware"),
    Override("elf", "firmware.elf", _absolute_path, "ELF",
             "firmware ELF to flash (RT700; on QEMU: your own mps2-an505 image instead of the replay image)"),
)


def overrides_from(values: dict[str, Any]) -> dict[str, Any]:
    """Map parsed option values (by dest) to `section.key -> value`, skipping options not given."""
    return {opt.key: values.get(opt.dest) for opt in OVERRIDES if values.get(opt.dest) is not None}
