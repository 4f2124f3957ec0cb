"""Board files: settings as data (`boards/*.toml`), overridable from the command line.

A board file is a TOML document with sections; `BoardConfig` gives typed access to the
keys the harness uses and keeps the whole document for board-specific sections. Every file is
checked against hil.config.board_schema when it is read, and its relative paths are made absolute
against the file's own folder, so a board file means the same thing from whatever folder the
harness runs in.

A board named on the command line is looked up in, first to last: each folder of
`HIL_BOARDS_DIR` (os.pathsep-separated), the project's `boards/` folders (pytest's rootdir, then
the current folder), and the board files that ship with et-hil.

A file may hold only the keys it changes of a built-in board (docs/board-files.md, "Changing a few
keys"): one with `[board].extends = "NAME"`, or one without `[board].kind` whose `[board].name` or
file name is a built-in board's, is merged key by key over that built-in file, and the whole is
checked. So a two-line `[qemu]` / `firmware = "runtime"` file named qemu.toml is the built-in QEMU
board with the runtime image, and follows the built-in's other keys as they change.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.config.board_schema import path_keys, validate
from hil.base.errors import BoardConfigError, InputError
from hil.base.checks import finite_number
from hil.base.defaults import DEFAULT_FAULT_HANDLERS
from hil.base.paths import BOARDS_DIR
from hil.config.board_files import absolute, absolute_paths, extended, read_toml

BOARDS_ENV = "HIL_BOARDS_DIR"


@dataclass(frozen=True)
class MemoryRegion:
    """A range of target memory where the ETDump result may legally live."""

    start: int
    size: int

    def contains(self, addr: int, length: int) -> bool:
        return self.start <= addr and addr + length <= self.start + self.size


@dataclass(frozen=True)
class RunSettings:
    """The board file's values a run's request falls back to, read in one go (hil.run.request checks them
    beside the request's own values, so a run's inputs are checked in one place)."""

    max_runs: Any
    timeout_s: Any
    export_timeout_s: Any
    jitter: Any
    delegate: str
    elf: str
    clock_mhz: float


@dataclass
class BoardConfig:
    """Typed view of one board file plus its command-line overrides."""

    name: str
    kind: str
    source: Path | None
    data: dict[str, Any] = field(repr=False)
    # `section.key` -> where its value came from, for a value `source` does not hold: an override's origin
    # ("command line", "environment HIL_FIRMWARE", ...) or the built-in board a partial file extends.
    origins: dict[str, str] = field(default_factory=dict, repr=False)
    base: Path | None = None  # the built-in board file a partial `source` extends

    def origin(self, dotted: str) -> str:
        """Where the value of `section.key` came from, in words (what a manifest and an error say)."""
        if dotted in self.origins:
            return self.origins[dotted]
        return f"board file {self.source}" if self.get(dotted) is not None else "not set: the default"

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
    def features(self) -> frozenset[str]:
        """`board.features`: what the board can do (hil.config.board_schema.FEATURES); none when the file says nothing."""
        return frozenset(self.get("board.features", []))

    @property
    def clock_mhz(self) -> float:
        """`board.clock_mhz`: a positive, finite number (the schema checks the file; this also covers --clock-mhz)."""
        value = self.get("board.clock_mhz")
        if value is None:
            raise BoardConfigError(f"board '{self.name}' ({self.source}): missing setting 'board.clock_mhz'")
        try:
            return finite_number(value, f"board '{self.name}' ({self.source}): board.clock_mhz", above=0)
        except InputError as exc:
            raise BoardConfigError(str(exc)) from None

    def run_settings(self, defaults: dict[str, Any]) -> RunSettings:
        """The settings a run reads from this board, `defaults` (by dotted key) where the file has none;
        the clock is checked here (it is the board's alone), the rest where the request may override them."""
        return RunSettings(
            max_runs=self.get("limits.max_runs", defaults["limits.max_runs"]),
            timeout_s=self.get("debug.timeout_s", defaults["debug.timeout_s"]),
            export_timeout_s=self.get("aot.export_timeout_s", defaults["aot.export_timeout_s"]),
            jitter=self.get("simulation.jitter", defaults["simulation.jitter"]),
            delegate=str(self.get("aot.delegate", defaults["aot.delegate"])),
            elf=str(self.get("firmware.elf", "") or ""),
            clock_mhz=self.clock_mhz,
        )

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
        (default: the CMSIS / MCUXpresso names, hil.base.defaults.DEFAULT_FAULT_HANDLERS)."""
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

    def with_overrides(self, overrides: dict[str, Any], origins: dict[str, str] | None = None) -> "BoardConfig":
        """A copy with `section.key -> value` overrides applied; `None` values are ignored. `origins`
        says where each came from (default "command line"), for `origin`.

        The result is checked like a board file; a relative path given on the command line is
        taken from the current folder (where the user typed it), not the board file's.
        """
        data, came = copy.deepcopy(self.data), dict(self.origins)
        for dotted, value in overrides.items():
            if value is None:
                continue
            *parents, leaf = dotted.split(".")
            node = data
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = absolute(value, Path.cwd()) if dotted in path_keys() else value
            came[dotted] = (origins or {}).get(dotted, "command line")
        validate(data, f"board '{self.name}' ({self.source}) with command-line overrides")
        return BoardConfig(self.name, self.kind, self.source, data, came, self.base)


def board_dirs(project_dirs: Sequence[Path] = ()) -> list[Path]:
    """Where board files are looked up by name, first match wins (see the module docstring)."""
    env = [Path(p) for p in os.environ.get(BOARDS_ENV, "").split(os.pathsep) if p]
    project = [Path(p) / "boards" for p in (*project_dirs, Path.cwd())]
    found: list[Path] = []
    for folder in (*env, *project, BOARDS_DIR):
        if folder.is_dir() and folder.resolve() not in {f.resolve() for f in found}:
            found.append(folder)
    return found


def board_file_for(name: str, project_dirs: Sequence[Path] = ()) -> Path | None:
    """The board file for `name`, or None when no folder holds one."""
    for folder in board_dirs(project_dirs):
        if (folder / f"{name}.toml").is_file():
            return folder / f"{name}.toml"
    return None


def known_boards(project_dirs: Sequence[Path] = ()) -> list[str]:
    return sorted({p.stem for folder in board_dirs(project_dirs) for p in folder.glob("*.toml")})


def load_board_config(
    name: str | None = None, path: Path | str | None = None, *, project_dirs: Sequence[Path] = ()
) -> BoardConfig:
    """Load a board by name (see `board_dirs`) or by file path; the file wins when both are given."""
    if path is None:
        if not name:
            raise BoardConfigError("no board given: pass --board NAME or --board-config FILE")
        path = board_file_for(name, project_dirs)
        if path is None:
            searched = ", ".join(str(d) for d in board_dirs(project_dirs))
            raise BoardConfigError(
                f"unknown board '{name}': no {name}.toml in {searched} (known boards: "
                f"{', '.join(known_boards(project_dirs)) or 'none'}; or set {BOARDS_ENV}, or pass --board-config FILE)"
            )
    path = Path(path).expanduser().resolve()
    data = read_toml(path)
    validate(data, f"board file {path}", whole=False)
    absolute_paths(data, path.parent)
    base = extended(data, path)
    origins: dict[str, str] = {}
    if base is not None:
        data, origins = base.merged_under(data)
        validate(data, f"board file {path} over the built-in {base.path}")
    board = data["board"]
    return BoardConfig(name=board.get("name", name or path.stem), kind=board["kind"], source=path, data=data,
                       origins=origins, base=base.path if base is not None else None)
