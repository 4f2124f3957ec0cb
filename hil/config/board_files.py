"""Reading one board file: its TOML, its relative paths, and the built-in board a partial file extends.

Why partial files: a user who wants the built-in QEMU board with one key changed (`[qemu].firmware =
"runtime"` for a nightly) should not have to copy the whole of boards/qemu.toml and then miss every
change made to it since. The rule (docs/board-files.md, "Changing a few keys"):

- `[board].extends = "NAME"`: the file is merged over the built-in board NAME (a `[board].kind` it
  gives must be NAME's);
- a file without `[board].kind` is merged over the built-in board of its `[board].name`, else of its
  file name (`qemu.toml`);
- a file without `[board].kind` that names no built-in board is refused, saying how to extend one.

Merged key by key: the file's keys win, every other key (of every section) is the built-in's; the
whole is then checked as any board file is. Only the boards that ship with et-hil are bases (not a
project's or HIL_BOARDS_DIR's), so a file cannot extend itself and a chain never forms.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.config.board_schema import SCHEMA, path_keys, validate
from hil.base.errors import BoardConfigError
from hil.base.paths import BOARDS_DIR


def read_toml(path: Path) -> dict[str, Any]:
    """The document of a board file; BoardConfigError naming the file when it cannot be read or parsed."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM (Windows editors) is no statement
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise BoardConfigError(f"board file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BoardConfigError(f"board file {path} is not valid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BoardConfigError(f"board file {path} cannot be read: {exc}") from exc


def absolute(value: Any, base: Path) -> Any:
    """A relative path string made absolute against `base`; "" (not set) and absolute paths stay."""
    if not isinstance(value, str) or not value or Path(value).expanduser().is_absolute():
        return value
    return os.path.normpath(base / Path(value).expanduser())


def absolute_paths(data: dict[str, Any], folder: Path) -> None:
    """A file's relative paths made absolute against `folder`, the file's own: before any merge, so a
    built-in's paths stay the built-in's and the user's the user's."""
    for dotted in path_keys():
        section, key = dotted.split(".")
        if key in data.get(section, {}):
            data[section][key] = absolute(data[section][key], folder)


@dataclass(frozen=True)
class BuiltIn:
    """A board file that ships with et-hil, read, checked and with its paths made absolute."""

    name: str
    path: Path
    data: dict[str, Any]

    def merged_under(self, own: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """`own` over this board key by key, and the origin of every `section.key` the built-in gave."""
        merged = _merge(copy.deepcopy(self.data), own)
        taken = {f"{section}.{key}": f"built-in board file {self.path}"
                 for section, body in self.data.items() if isinstance(body, dict)
                 for key in body if not (isinstance(own.get(section), dict) and key in own[section])}
        return merged, taken


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BOARDS_DIR.glob("*.toml"))


def builtin(name: str) -> BuiltIn | None:
    """The built-in board `name` (boards/NAME.toml of et-hil), or None when there is none."""
    path = BOARDS_DIR / f"{name}.toml"
    if name not in builtin_names() or not path.is_file():
        return None
    path = path.resolve()
    data = read_toml(path)
    validate(data, f"built-in board file {path}")
    absolute_paths(data, path.parent)
    return BuiltIn(name, path, data)


def extended(data: dict[str, Any], path: Path) -> BuiltIn | None:
    """The built-in board the file `path` (holding `data`) extends (the module docstring's rule), or None
    for a whole board file; BoardConfigError for a partial file that names no built-in board."""
    board = data.get("board", {})
    known = ", ".join(builtin_names())
    if "extends" in board:
        base = builtin(board["extends"])
        if base is None:
            raise BoardConfigError(f"board file {path}: [board].extends = {board['extends']!r} names no built-in "
                                   f"board (built-in boards: {known})")
        if board.get("kind", base.data["board"]["kind"]) != base.data["board"]["kind"]:
            raise BoardConfigError(f"board file {path}: [board].kind = {board['kind']!r}, but the built-in board "
                                   f"{base.name!r} it extends is a {base.data['board']['kind']!r} board")
        return base
    if "kind" in board:
        return None
    for name in dict.fromkeys(n for n in (board.get("name"), path.stem) if n):
        base = builtin(name)
        if base is not None:
            return base
    kinds = SCHEMA["board"]["kind"].expected  # type: ignore[index,union-attr]
    raise BoardConfigError(
        f"board file {path}: [board].kind is missing ({kinds}), and neither its [board].name nor its file name is "
        f"a built-in board's ({known}); to change a few keys of a built-in board, add `extends = \"NAME\"` under "
        "[board] (or name the file NAME.toml), or give a whole board file with [board].kind")


def _merge(into: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` merged into `into`, table by table; any other value of `over` replaces `into`'s whole."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into
