"""What a board's firmware images look like: the `[image]` section of its board file.

Why in the board file: the checks in hil.firmware.image_check are the same for every board; where
the boot header sits, which memory regions the link script has and where the compiled-in model
lives differ per board (boards/rt700.toml mirrors firmware/rt700/link, boards/qemu.toml
firmware/qemu/link.ld). A bad value is a BoardConfigError naming the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hil.config.board_config import BoardConfig
from hil.base.errors import BoardConfigError


def span(start: int, end: int) -> str:
    """An address range as the checks print it: half-open, 8 hex digits."""
    return f"[0x{start:08x}, 0x{end:08x})"


@dataclass(frozen=True)
class Region:
    """One MEMORY region of the link script, as the board file names it."""

    FIELDS: ClassVar = (("name", str), ("start", int), ("size", int))
    name: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size

    def holds(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end

    def __str__(self) -> str:
        return f"{self.name} {span(self.start, self.end)}"


@dataclass(frozen=True)
class FlashConfigSpec:
    """Where the boot ROM reads the boot header: `[image].flash_config` of the board file."""

    FIELDS: ClassVar = (("section", str), ("address", int), ("min_size", int))
    section: str
    address: int
    min_size: int


@dataclass(frozen=True)
class ImageSpec:
    """The board file's `[image]` section plus the handshake names of its `[debug]` section."""

    board: str
    breakpoint: str
    result_expr: str
    flash_config: FlashConfigSpec | None
    regions: tuple[Region, ...]
    model_section: str | None
    model_symbol: str
    load_regions: tuple[str, ...] = ()

    @classmethod
    def from_board(cls, cfg: BoardConfig) -> "ImageSpec":
        where = f"board '{cfg.name}' ({cfg.source}): image"
        image = cfg.get("image", {})
        flash, regions = _field(image, "flash_config", dict, where, None), _field(image, "regions", list, where, [])
        return cls(
            board=cfg.name, breakpoint=cfg.breakpoint, result_expr=cfg.result_expr,
            flash_config=None if flash is None else FlashConfigSpec(*(
                _field(flash, key, kind, f"{where}.flash_config") for key, kind in FlashConfigSpec.FIELDS)),
            regions=tuple(Region(*(_field(r, key, kind, f"{where}.regions") for key, kind in Region.FIELDS))
                          for r in regions),
            model_section=_field(image, "model_section", str, where, None),
            model_symbol=_field(image, "model_symbol", str, where, "model_pte"),
            load_regions=_load_regions(image, regions, where),
        )


_REQUIRED = object()


def _load_regions(image: Any, regions: list[Any], where: str) -> tuple[str, ...]:
    """`[image].load_regions`: names of declared regions (the flash) where every loaded byte must land."""
    names = _field(image, "load_regions", list, where, [])
    declared = {r.get("name") for r in regions if isinstance(r, dict)}
    for name in names:
        if not isinstance(name, str) or name not in declared:
            raise BoardConfigError(f"{where}.load_regions: {name!r} is not one of the declared regions "
                                   f"({', '.join(sorted(str(d) for d in declared)) or 'none'})")
    return tuple(names)


def _field(table: Any, key: str, kind: type, where: str, default: Any = _REQUIRED) -> Any:
    """`table[key]` as a non-empty `kind` (a non-negative int for int), or `default` when absent."""
    if not isinstance(table, dict):
        raise BoardConfigError(f"{where} must be a table, not {table!r}")
    if key not in table and default is not _REQUIRED:
        return default
    value = table.get(key)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BoardConfigError(f"{where}.{key} must be a non-negative integer, not {value!r}")
    elif not isinstance(value, kind) or (kind is str and not value):
        raise BoardConfigError(f"{where}.{key} must be a {'non-empty string' if kind is str else kind.__name__}, "
                               f"not {value!r}")
    return value
