"""Board files: settings as data (`boards/*.toml`), overridable from the command line.

A board file is a TOML document with sections; `BoardConfig` gives typed access to the
keys the harness uses and keeps the whole document for board-specific sections.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.errors import BoardConfigError, InputError
from hil.inputs import finite_number
from hil.paths import BOARDS_DIR


@dataclass(frozen=True)
class MemoryRegion:
    """A range of target memory where the ETDump result may legally live."""

    start: int
    size: int

    def contains(self, addr: int, length: int) -> bool:
        return self.start <= addr and addr + length <= self.start + self.size


@dataclass
class BoardConfig:
    """Typed view of one board file plus its command-line overrides."""

    name: str
    kind: str
    source: Path | None
    data: dict[str, Any] = field(repr=False)

    def get(self, dotted: str, default: Any = None) -> Any:
        """Read `section.key` from the document, or `default` when absent."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def require(self, dotted: str) -> Any:
        value = self.get(dotted)
        if value is None:
            raise BoardConfigError(f"board '{self.name}' ({self.source}): missing setting '{dotted}'")
        return value

    @property
    def clock_mhz(self) -> float:
        """`board.clock_mhz`: a positive, finite number, or a BoardConfigError naming the board file."""
        value = self.get("board.clock_mhz")
        if value is None:
            raise BoardConfigError(f"board '{self.name}' ({self.source}): missing setting 'board.clock_mhz'")
        try:
            return finite_number(value, f"board '{self.name}' ({self.source}): board.clock_mhz", above=0)
        except InputError as exc:
            raise BoardConfigError(str(exc)) from None

    @property
    def gdb(self) -> str:
        return str(self.get("debug.gdb", "gdb-multiarch"))

    @property
    def breakpoint(self) -> str:
        return str(self.get("debug.breakpoint", "hil_etdump_ready"))

    @property
    def result_expr(self) -> str:
        return str(self.get("debug.result_expr", "hil_etdump_result"))

    @property
    def fault_handlers(self) -> tuple[str, ...]:
        """`debug.fault_handlers`: the fault handlers the debugger breaks on to examine a fault
        (default: the CMSIS / MCUXpresso names, hil.road.forensics.DEFAULT_FAULT_HANDLERS)."""
        from hil.road.forensics import DEFAULT_FAULT_HANDLERS

        names = self.get("debug.fault_handlers", list(DEFAULT_FAULT_HANDLERS))
        if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise BoardConfigError(
                f"board '{self.name}' ({self.source}): debug.fault_handlers must be a list of function names,"
                f" not {names!r}"
            )
        return tuple(names)

    @property
    def ram_regions(self) -> list[MemoryRegion]:
        regions = self.get("memory.ram", [])
        try:
            return [MemoryRegion(int(start), int(size)) for start, size in regions]
        except (TypeError, ValueError) as exc:
            raise BoardConfigError(
                f"board '{self.name}' ({self.source}): memory.ram must be a list of [start, size] pairs"
            ) from exc

    def with_overrides(self, overrides: dict[str, Any]) -> "BoardConfig":
        """A copy with `section.key -> value` overrides applied; `None` values are ignored."""
        data = copy.deepcopy(self.data)
        for dotted, value in overrides.items():
            if value is None:
                continue
            *parents, leaf = dotted.split(".")
            node = data
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return BoardConfig(self.name, self.kind, self.source, data)


def board_file_for(name: str) -> Path:
    return BOARDS_DIR / f"{name}.toml"


def load_board_config(name: str | None = None, path: Path | str | None = None) -> BoardConfig:
    """Load a board by name (from `boards/NAME.toml`) or by file path; the file wins when both are given."""
    if path is None:
        if not name:
            raise BoardConfigError("no board given: pass --board NAME or --board-config FILE")
        path = board_file_for(name)
        if not path.is_file():
            known = sorted(p.stem for p in BOARDS_DIR.glob("*.toml"))
            raise BoardConfigError(f"unknown board '{name}': no {path} (known boards: {', '.join(known) or 'none'})")
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BoardConfigError(f"board file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BoardConfigError(f"board file {path} is not valid TOML: {exc}") from exc
    board = data.get("board", {})
    kind = board.get("kind")
    if not kind:
        raise BoardConfigError(f"board file {path}: [board] needs a 'kind' (qemu, rt700 or host)")
    return BoardConfig(name=board.get("name", name or path.stem), kind=kind, source=path, data=data)
